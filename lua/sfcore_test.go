package lua

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestLibForTakesWhatIsUsed(t *testing.T) {
	lib, err := os.ReadFile(filepath.Join("_lib", "sfcore.lua"))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"nothing", "return {status = 'Healthy'}", nil},
		{"one helper", "local x = sfFloor(1.5)", []string{"sfFloor"}},
		{"transitive", "local m = sfText(obj.status)", []string{"CH", "sfBytes", "sfText"}},
		{"named only in a comment", "-- sfParseTime would do\nreturn nil", nil},
		{"library order kept", "sfConditions(s); sfFloor(2)", []string{"sfFloor", "sfConditions"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block, err := LibFor(string(lib), tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(block, sfcoreBegin) || !strings.HasSuffix(block, sfcoreEnd) {
				t.Fatalf("block lacks its markers:\n%s", block)
			}
			var got []string
			for _, m := range decl.FindAllStringSubmatch(block, -1) {
				got = append(got, m[1])
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("helpers %v, want %v", got, tc.want)
			}
			libLines := map[string]bool{}
			for _, l := range strings.Split(string(lib), "\n") {
				libLines[l] = true
			}
			for _, l := range strings.Split(block, "\n") {
				if !libLines[l] {
					t.Errorf("line %q is not from sfcore.lua", l)
				}
			}
		})
	}
}

func TestSplitLibRefusesAnUnmarkedLibrary(t *testing.T) {
	if _, err := LibFor("local function sfFloor(x) return x end", "sfFloor(1)"); err == nil {
		t.Fatal("no error for a library without markers")
	}
}
