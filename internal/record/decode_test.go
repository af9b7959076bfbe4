package record

import (
	"strings"
	"testing"
)

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"unknown field", "a: x\nzz: 1\n", "f.yaml:2: zz: unknown field"},
		{"duplicate key", "a: x\na: y\n", "f.yaml:2: a: duplicate key (first at line 1)"},
		{"wrong type", "b: [1, x]\n", "f.yaml:1: b[1]: expected an integer"},
		{"string wanted", "a: 12\n", `f.yaml:1: a: expected a string, got int "12" (quote it)`},
		{"nested", "d: {e: maybe}\n", "f.yaml:1: d.e: expected true or false"},
		{"alias", "a: &x v\nc: {k: *x}\n", "aliases are not allowed"},
		{"not a mapping", "- 1\n", "f.yaml:1: a record must be a YAML mapping"},
		{"syntax", "a: [\n", "f.yaml:1: invalid YAML"},
		{"non-UTF-8 byte", "a: x\nb: [1]\nd: {e: \"y\xff\"}\n", "f.yaml:3: invalid YAML: column 10: byte 0xff is not UTF-8"},
		{"NUL", "a: x\n\n  # c\x00\n", "f.yaml:3: invalid YAML: column 6: a NUL byte"},
		{"cut rune", "a: \"\xc3\"\n", "f.yaml:1: invalid YAML: column 5: byte 0xc3 is not UTF-8"},
		{"control character", "a: x\nb: [1, \x07]\n", "f.yaml:2: invalid YAML: column 8: control character U+0007"},
		{"C1 in the second document", "a: x\n---\nb: \xc2\x90\n", "f.yaml:3: invalid YAML: column 4: control character U+0090"},
		{"DEL", "a: x\x7f\n", "f.yaml:1: invalid YAML: column 5: control character U+007F"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Parse("f.yaml", []byte(tc.in))
			if err == nil {
				var v fuzzTarget
				_, err = doc.Decode(&v)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDecodeLines(t *testing.T) {
	doc, err := Parse("f.yaml", []byte("a: x\nd:\n  e: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	var v fuzzTarget
	lines, err := doc.Decode(&v)
	if err != nil {
		t.Fatal(err)
	}
	if lines.Line("d.e") != 3 || lines.Line("d.e.missing") != 3 || lines.Line("a") != 1 {
		t.Fatalf("lines = %v", lines)
	}
}
