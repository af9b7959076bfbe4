package render

import (
	"bytes"
	"encoding/json"
	"math"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// Serialisation without the JSON → YAML → object → YAML round trip that
// sigs.k8s.io/yaml.JSONToYAML makes (it parses the JSON with the YAML parser
// only to learn which numbers are integers). The output is byte-identical:
// JSONToYAML marshals with the same YAML library, and a map sorts its keys
// the same whatever its key type; only the numbers need converting. Any value
// whose round trip is not plainly the same (a fraction, an integer past 2^53)
// takes the original path.

// objectYAML serialises one object (decoded from JSON: float64 numbers) as
// sigs.k8s.io/yaml.Marshal would.
func objectYAML(obj map[string]any) ([]byte, error) {
	if v, ok := integers(obj); ok {
		return yamlv2.Marshal(v)
	}
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}

// jsonToYAML is sigs.k8s.io/yaml.JSONToYAML for one JSON object.
func jsonToYAML(j []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err == nil && !d.More() {
		if v, ok := integers(v); ok {
			return yamlv2.Marshal(v)
		}
	}
	return yaml.JSONToYAML(j)
}

// maxExact is the largest integer a float64 holds exactly and json.Marshal
// prints without an exponent.
const maxExact = 1 << 53

// integers turns the numbers of a JSON- or YAML-decoded value into the int64
// the YAML parser would have read from its JSON, in place. It reports false
// when a number is not an integer within ±2^53, a string is not UTF-8, or a
// value is of another type (a map with non-string keys, a timestamp), whose
// trip through JSON is not plainly the same.
func integers(x any) (any, bool) {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			c, ok := integers(v)
			if !ok {
				return nil, false
			}
			t[k] = c
		}
		return t, true
	case []any:
		for i, v := range t {
			c, ok := integers(v)
			if !ok {
				return nil, false
			}
			t[i] = c
		}
		return t, true
	case float64:
		if t != math.Trunc(t) || math.Abs(t) > maxExact || math.Signbit(t) && t == 0 {
			return nil, false
		}
		return int64(t), true
	case json.Number:
		i, err := t.Int64()
		if err != nil || i > maxExact || i < -maxExact {
			return nil, false
		}
		return i, true
	case int64:
		return t, true
	case int: // from a YAML decode
		return int64(t), true
	case string:
		// json.Marshal would replace invalid UTF-8; the YAML library would not.
		return t, utf8.ValidString(t)
	case bool, nil:
		return t, true
	}
	return nil, false
}

// decodeDoc is sigs.k8s.io/yaml.UnmarshalStrict(part, &d) without its trip
// through JSON (YAML → object → JSON → doc): the YAML parser's object is
// converted to what that trip yields (string keys, float64 numbers). Anything
// else — another key in the wrapper, a non-string key, a value JSON would
// change or reject — takes UnmarshalStrict itself, for its result and error.
func decodeDoc(part []byte) (doc, error) {
	var raw any
	if err := yamlv2.UnmarshalStrict(part, &raw); err == nil {
		if d, ok := fastDoc(raw); ok {
			return d, nil
		}
	}
	var d doc
	err := yaml.UnmarshalStrict(part, &d)
	return d, err
}

func fastDoc(raw any) (doc, bool) {
	var d doc
	m, ok := raw.(map[any]any)
	if !ok {
		return d, false
	}
	for k, v := range m {
		switch k {
		case "boundary":
			if d.Boundary, ok = v.(string); !ok {
				return d, false
			}
		case "object":
			if v == nil {
				continue
			}
			o, ok := jsonLike(v)
			if !ok {
				return d, false
			}
			if d.Object, ok = o.(map[string]any); !ok {
				return d, false
			}
		default:
			return d, false
		}
	}
	return d, true
}

// jsonLike converts a value of the YAML parser to what json.Marshal and then
// json.Unmarshal into any would make of it; false where that is not plain.
func jsonLike(x any) (any, bool) {
	switch t := x.(type) {
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			ks, ok := k.(string)
			if !ok {
				return nil, false
			}
			c, ok := jsonLike(v)
			if !ok {
				return nil, false
			}
			out[ks] = c
		}
		return out, true
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			c, ok := jsonLike(v)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	case string:
		return t, utf8.ValidString(t)
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case uint64:
		return float64(t), true
	case float64:
		return t, !math.IsNaN(t) && !math.IsInf(t, 0)
	case bool, nil:
		return t, true
	}
	return nil, false
}
