package generator

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name, body string
		want       Query
		status     int
		msg        string
	}{
		{"clusters", `{"applicationSetName":"a","input":{"parameters":{"kind":"clusters"}}}`, Query{AppSet: "a", Kind: KindClusters}, 0, ""},
		{"zones with filters", `{"input":{"parameters":{"kind":"zones","org":"acme","product":"checkout","environment":"release"}}}`,
			Query{Kind: KindZones, Zones: Filter{Org: "acme", Product: "checkout", Environment: "release"}}, 0, ""},
		{"leading space", " \n{\"input\":{\"parameters\":{\"kind\":\"zones\"}}}\n", Query{Kind: KindZones}, 0, ""},
		{"empty", ``, Query{}, 400, "empty body"},
		{"array", `[{"input":{}}]`, Query{}, 400, "not a JSON object"},
		{"string", `"zones"`, Query{}, 400, "not a JSON object"},
		{"malformed", `{"input":`, Query{}, 400, "malformed JSON"},
		{"trailing", `{"input":{"parameters":{"kind":"zones"}}} {}`, Query{}, 400, "data after"},
		{"input not an object", `{"input":5}`, Query{}, 400, "input must not be a JSON number"},
		{"parameters not an object", `{"input":{"parameters":[1]}}`, Query{}, 400, "must not be a JSON array"},
		{"no parameters", `{"applicationSetName":"a","input":{}}`, Query{}, 400, "kind is required"},
		{"unknown kind", `{"input":{"parameters":{"kind":"pods"}}}`, Query{}, 400, `kind "pods" is unknown`},
		{"kind not a string", `{"input":{"parameters":{"kind":["zones"]}}}`, Query{}, 400, "kind must be a string, got an array"},
		{"filter not a string", `{"input":{"parameters":{"kind":"zones","org":1}}}`, Query{}, 400, "org must be a string, got a number"},
		{"misspelt filter", `{"input":{"parameters":{"kind":"zones","enviroment":"release"}}}`, Query{}, 400, "unknown key(s) enviroment"},
		{"filter on clusters", `{"input":{"parameters":{"kind":"clusters","org":"acme"}}}`, Query{}, 400, "unknown key(s) org for kind clusters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := DecodeRequest([]byte(tt.body))
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if q != tt.want {
					t.Fatalf("got %+v, want %+v", q, tt.want)
				}
				return
			}
			var he *HTTPError
			if !errors.As(err, &he) || he.Status != tt.status || !strings.Contains(he.Msg, tt.msg) {
				t.Fatalf("got %v, want %d containing %q", err, tt.status, tt.msg)
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"applicationSetName":"a","input":{"parameters":{"kind":"clusters"}}}`,
		`{"input":{"parameters":{"kind":"zones","org":"acme","environment":"release"}}}`,
		`{"input":{"parameters":{"kind":"zones","org":1}}}`,
		`{"input":5}`, `[]`, `{`, `null`, `{"input":{"parameters":{"kind":"zones"}}}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		q, err := DecodeRequest(body)
		if err != nil {
			var he *HTTPError
			if !errors.As(err, &he) || he.Status < 400 || he.Status > 499 || he.Msg == "" {
				t.Fatalf("error %v is not a 4xx HTTPError", err)
			}
			return
		}
		if q.Kind != KindClusters && q.Kind != KindZones {
			t.Fatalf("accepted kind %q", q.Kind)
		}
		if q.Kind == KindClusters && q.Zones != (Filter{}) {
			t.Fatalf("clusters with zone filters: %+v", q)
		}
		// What was accepted re-encodes to a request that decodes the same.
		req := map[string]any{"applicationSetName": q.AppSet, "input": map[string]any{"parameters": map[string]any{"kind": q.Kind}}}
		ps := req["input"].(map[string]any)["parameters"].(map[string]any)
		for k, v := range map[string]string{"org": q.Zones.Org, "product": q.Zones.Product, "environment": q.Zones.Environment} {
			if v != "" {
				ps[k] = v
			}
		}
		b, _ := json.Marshal(req)
		q2, err := DecodeRequest(b)
		if err != nil || q2 != q {
			t.Fatalf("round trip of %+v: %+v, %v", q, q2, err)
		}
	})
}

func TestEncodeResponseIsArgoCDsShape(t *testing.T) {
	for _, sets := range [][][]byte{nil, {[]byte(`{"a":1}`)}, {[]byte(`{"a":1}`), []byte(`{"b":{"c":"d"}}`)}} {
		var r Response
		if err := json.Unmarshal(encodeResponse(sets), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Output.Parameters) != len(sets) || r.Output.Parameters == nil {
			t.Fatalf("%d sets decoded to %#v", len(sets), r.Output.Parameters)
		}
	}
}
