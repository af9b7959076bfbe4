package render

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The fast serialisation must print exactly what sigs.k8s.io/yaml does.
func TestYAMLMatchesJSONToYAML(t *testing.T) {
	docs := []string{
		`{"a":1,"b":-2,"c":0,"d":3600000,"e":9007199254740992,"f":9007199254740993,"g":1e21,"h":0.5,"i":-0.0}`,
		`{"s":"2026-11-30T10:00:00Z","t":"0","u":"true","v":"","w":null,"x":{},"y":[],"z":"a: b\nc"}`,
		`{"k10":1,"k2":2,"K":3,"nested":{"list":[1,"two",{"three":3.25}],"html":"<a>&</a>"}}`,
		`{"long":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}`,
	}
	for _, d := range docs {
		want, err := yaml.JSONToYAML([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		got, err := jsonToYAML([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("jsonToYAML(%s) =\n%s\nwant\n%s", d, got, want)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatal(err)
		}
		want, err = yaml.Marshal(obj) // what Write printed before: json.Marshal, then JSONToYAML
		if err != nil {
			t.Fatal(err)
		}
		got, err = objectYAML(obj)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("objectYAML(%s) =\n%s\nwant\n%s", d, got, want)
		}
	}
}

// resourceYAML must print each kustomize resource as (*resource.Resource).AsYAML does.
func TestResourceYAMLMatchesAsYAML(t *testing.T) {
	base := `apiVersion: v1
kind: ConfigMap
metadata:
  name: tricky
  annotations: {a: "1", b: "true", c: "2026-11-30T10:00:00Z"}
data:
  int: "8"
  multi: |
    line one
    line two: {{ .x }}
  html: "<b>&</b>"
---
apiVersion: example.com/v1
kind: Thing
metadata:
  name: numbers
spec:
  int: 8
  big: 9007199254740993
  float: 1.5
  floatInt: 2.0
  neg: -3
  exp: 1e3
  bool: true
  word: yes
  nothing: null
  empty: {}
  list: [1, "2", 3.25, {k: v}]
  stamp: 2026-11-30T10:00:00Z
  long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbb
`
	mem := filesys.MakeFsInMemory()
	if err := mem.WriteFile("/app/kustomization.yaml", []byte("resources: [base.yaml]\ncommonAnnotations: {site: x}\n")); err != nil {
		t.Fatal(err)
	}
	if err := mem.WriteFile("/app/base.yaml", []byte(base)); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/app")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Resources() {
		want, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		got, err := resourceYAML(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("resourceYAML =\n%s\nAsYAML =\n%s", got, want)
		}
	}
}

// decodeDoc must agree with sigs.k8s.io/yaml.UnmarshalStrict, results and errors.
func TestDecodeDocMatchesUnmarshalStrict(t *testing.T) {
	docs := []string{
		"boundary: identity\nobject:\n  kind: ConfigMap\n  data: {a: \"1\", b: 2, c: 2.5, d: 9007199254740993, e: -0.0, f: 1e3, g: true, h: null, i: [1, x, {y: z}]}\n",
		"boundary: x\nobject:\n  stamp: 2026-11-30T10:00:00Z\n  date: 2026-11-30\n  on: yes\n  1: one\n",
		"boundary: x\nobject: null\n",
		"boundary: x\n",
		"Boundary: x\nobject: {a: 1}\n",
		"boundary: 3\nobject: {a: 1}\n",
		"boundary: x\nobject: {a: 1}\nextra: 1\n",
		"boundary: x\nobject: {a: 1, a: 2}\n",
		"boundary: x\nobject: [1, 2]\n",
		"boundary: x\nobject: {nan: .nan, inf: .inf}\n",
		"boundary: x\nobject: {s: !!binary aGVsbG8=}\n",
		"- not a map\n",
		"boundary: [unclosed\n",
	}
	for _, in := range docs {
		var want doc
		wantErr := yaml.UnmarshalStrict([]byte(in), &want)
		got, gotErr := decodeDoc([]byte(in))
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Errorf("%q: error %v, want %v", in, gotErr, wantErr)
			continue
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) {
			t.Errorf("%q: decoded %s, want %s", in, gj, wj)
		}
	}
}
