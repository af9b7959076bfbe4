package generator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// Request is Argo CD's plugin generator request
// (applicationset/services/plugin.ServiceRequest).
type Request struct {
	ApplicationSetName string `json:"applicationSetName"`
	Input              struct {
		Parameters map[string]json.RawMessage `json:"parameters"`
	} `json:"input"`
}

// Response is Argo CD's plugin generator response
// (applicationset/services/plugin.ServiceResponse).
type Response struct {
	Output struct {
		Parameters []map[string]any `json:"parameters"`
	} `json:"output"`
}

// Kinds of parameter sets.
const (
	KindClusters = "clusters"
	KindZones    = "zones"
)

// Query is a decoded request.
type Query struct {
	AppSet string
	Kind   string
	Zones  Filter
}

// HTTPError is an error with the HTTP status it is answered with.
type HTTPError struct {
	Status int
	Msg    string
}

func (e *HTTPError) Error() string { return e.Msg }

func badRequest(format string, args ...any) *HTTPError {
	return &HTTPError{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// allowedParams are the input.parameters keys of each kind. Anything else
// is refused: a misspelt filter would otherwise silently widen the answer.
var allowedParams = map[string][]string{
	KindClusters: {"kind"},
	KindZones:    {"kind", "org", "product", "environment"},
}

// DecodeRequest parses a getparams.execute body. Every error is an
// *HTTPError with a 4xx status whose message names the offending part.
func DecodeRequest(body []byte) (Query, error) {
	var q Query
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return q, badRequest("empty body: want a JSON object {\"input\":{\"parameters\":{\"kind\":...}}}")
	}
	if trimmed[0] != '{' {
		return q, badRequest("body is not a JSON object")
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return q, badRequest("malformed JSON: %v", jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return q, badRequest("malformed JSON: data after the top-level object")
	}
	q.AppSet = req.ApplicationSetName
	ps := req.Input.Parameters
	raw, ok := ps["kind"]
	if !ok {
		return q, badRequest("input.parameters.kind is required: %s or %s", KindClusters, KindZones)
	}
	kind, err := stringParam("kind", raw)
	if err != nil {
		return q, err
	}
	allowed, ok := allowedParams[kind]
	if !ok {
		return q, badRequest("input.parameters.kind %q is unknown: want %s or %s", kind, KindClusters, KindZones)
	}
	q.Kind = kind
	var unknown []string
	for k := range ps {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return q, badRequest("input.parameters: unknown key(s) %s for kind %s (allowed: %s)", strings.Join(unknown, ", "), kind, strings.Join(allowed, ", "))
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"org", &q.Zones.Org}, {"product", &q.Zones.Product}, {"environment", &q.Zones.Environment}} {
		if raw, ok := ps[f.key]; ok {
			if *f.dst, err = stringParam(f.key, raw); err != nil {
				return q, err
			}
		}
	}
	return q, nil
}

func stringParam(key string, raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", badRequest("input.parameters.%s must be a string, got %s", key, jsonType(raw))
	}
	return s, nil
}

func jsonType(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonProblem keeps decoder errors short and free of Go type names.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return fmt.Sprintf("%s must not be a JSON %s", field, te.Value)
	}
	return err.Error()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// responsePrefix starts every answer; a set follows it, then ',' between sets.
const responsePrefix = `{"output":{"parameters":[`

// encodeResponse writes {"output":{"parameters":[...]}} from parameter
// sets already encoded when the snapshot was loaded.
func encodeResponse(sets [][]byte) []byte {
	n := len(`{"output":{"parameters":[]}}`) + 1
	for _, s := range sets {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, responsePrefix...)
	for i, s := range sets {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	return append(b, "]}}\n"...)
}
