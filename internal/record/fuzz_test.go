package record

import (
	"testing"
)

type fuzzTarget struct {
	A string            `json:"a"`
	B []int             `json:"b"`
	C map[string]string `json:"c"`
	D *struct {
		E bool `json:"e"`
	} `json:"d"`
	F any `json:"f"`
}

// FuzzDecode: arbitrary YAML never panics the strict decoder, and every
// error it reports carries the file name.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("a: x\nb: [1, 2]\nc: {k: v}\nd: {e: true}\nf: [1, {x: y}]\n"))
	f.Add([]byte("a: &x [1]\nb: *x\n"))
	f.Add([]byte("a: 1\na: 2\nz: 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Parse("f.yaml", data)
		if err != nil {
			return
		}
		var v fuzzTarget
		if _, err := doc.Decode(&v); err != nil {
			for _, e := range err.(Errors) {
				if e.File != "f.yaml" {
					t.Fatalf("error without file: %v", e)
				}
			}
		}
	})
}
