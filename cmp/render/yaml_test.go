package render

import (
	"encoding/json"
	"testing"

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
