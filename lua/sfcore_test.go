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
	longString := regexp.MustCompile(`(?s)\[==\[.*?\]==\]`) // lazily compiled code, not helpers
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"nothing", "return {status = 'Healthy'}", nil},
		{"a helper and the lazy helper it calls", "local x = sfConditions(obj.status)", []string{"sfMaxConditions", "sfMapConditions", "sfConditions"}},
		{"transitive", "local m = sfText(obj.status)", []string{"sfBytesLib", "sfBytes", "sfTruncateFn", "sfTruncate", "sfText"}},
		{"only the lazy helpers used", "sfContainsAny(m, {'x'}, 9)", []string{"sfBytesLib", "sfBytes", "sfSearchFn", "sfContainsAny"}},
		{"named only in a comment", "-- sfTime would do\nreturn nil", nil},
		{"library order kept", "sfConditions(s); sfText(2)", []string{"sfMaxConditions", "sfBytesLib", "sfBytes", "sfTruncateFn", "sfTruncate", "sfMapConditions", "sfText", "sfConditions"}},
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
			for _, m := range decl.FindAllStringSubmatch(longString.ReplaceAllString(block, ""), -1) {
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
