// Package record reads spokeforge records from YAML strictly: unknown
// fields, duplicate keys and wrong types are errors that name the file,
// the line and the field path, and every field's line is remembered so
// later validation can point at it too.
package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Error is one problem in one file, at a line, on a field path.
type Error struct {
	File string
	Line int
	Path string
	Msg  string
	// Code names the rule that made the finding, for programs that act on
	// findings (the generator); empty for field-level checks.
	Code Code
}

// Code names a cross-record rule.
type Code string

// Codes of the rules that span records (internal/validate.CrossFile).
const (
	CodeUnknownCluster     Code = "UnknownCluster"
	CodeDuplicateCluster   Code = "DuplicateCluster"
	CodeCloudNameCollision Code = "CloudNameCollision"
	CodeUnknownOrg         Code = "UnknownOrg"
	CodeDuplicateZone      Code = "DuplicateZone"
	CodeApplicationClash   Code = "ApplicationNameCollision"
	CodeWorkloadOrg        Code = "WorkloadOrg"
	CodeSecondInCluster    Code = "SecondInCluster"
	CodeHubNamespace       Code = "HubNamespace"
)

func (e Error) Error() string {
	msg := Redact(e.Msg)
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", loc, msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Path, msg)
}

// Errors is a list of Error that is itself an error.
type Errors []Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Lines maps a field path (e.g. spec.queues[0].purpose) to its line.
type Lines map[string]int

// Line returns the line of path or of its nearest ancestor that has one.
func (l Lines) Line(path string) int {
	for p := path; ; {
		if n, ok := l[p]; ok {
			return n
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return l[""]
		}
		p = p[:i]
	}
}

// Document is one parsed YAML document: its root node and header.
type Document struct {
	File       string
	Root       *yaml.Node
	APIVersion string
	Kind       string
	// Secret reports the field paths whose values (and keys) may hold a
	// credential: errors there never repeat what was written.
	Secret func(path string) bool
	// Strings, when set, gives every decoded string and map key its
	// canonical copy: records decoded with one map share the values they
	// repeat (a fleet's regions, accounts, ARNs) instead of one copy each.
	Strings map[string]string
}

// Parse reads exactly one YAML document from data: a second document is
// an error naming its line, never silently ignored.
func Parse(file string, data []byte) (*Document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Error{File: file, Msg: "empty document"}
		}
		if YAMLErrLine(err) == 0 {
			return nil, yamlReadErr(file, data, err)
		}
		return nil, Error{File: file, Line: YAMLErrLine(err), Msg: "invalid YAML: " + syntaxErrText(err)}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil && YAMLErrLine(err) == 0:
		return nil, yamlReadErr(file, data, err)
	case err != nil:
		return nil, Error{File: file, Line: YAMLErrLine(err), Msg: "invalid YAML: " + syntaxErrText(err)}
	default:
		return nil, Error{File: file, Line: next.Line, Msg: "a second YAML document starts here: a record file holds exactly one document"}
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, Error{File: file, Msg: "empty document"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, Error{File: file, Line: doc.Line, Msg: "a record must be a YAML mapping"}
	}
	d := &Document{File: file, Root: doc}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		switch doc.Content[i].Value {
		case "apiVersion":
			d.APIVersion = doc.Content[i+1].Value
		case "kind":
			d.Kind = doc.Content[i+1].Value
		}
	}
	return d, nil
}

// Decode decodes the document into out (a pointer to a struct with json
// tags), returning the line of every field and all decoding errors. With
// errors, out holds what did decode (a field that failed keeps its zero
// value) and the lines are still returned.
func (d *Document) Decode(out any) (Lines, error) {
	dec := decoder{file: d.File, lines: Lines{"": d.Root.Line}, secret: d.Secret, strs: d.Strings}
	if dec.secret == nil {
		dec.secret = func(string) bool { return false }
	}
	dec.value(d.Root, reflect.ValueOf(out).Elem(), "")
	if len(dec.errs) > 0 {
		return dec.lines, dec.errs
	}
	return dec.lines, nil
}

type decoder struct {
	file   string
	lines  Lines
	errs   Errors
	secret func(string) bool
	strs   map[string]string
}

// intern is s's canonical copy in d.strs (s itself without one).
func (d *decoder) intern(s string) string {
	if d.strs == nil {
		return s
	}
	if c, ok := d.strs[s]; ok {
		return c
	}
	d.strs[s] = s
	return s
}

// describeAt describes n for an error at path, without its value where
// the value may be a credential.
func (d *decoder) describeAt(n *yaml.Node, path string) string {
	if d.secret(path) && n.Kind == yaml.ScalarNode {
		// A tag is the author's text too (!<anything>): only YAML's own are named.
		switch n.Tag {
		case "!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp":
			return "a " + strings.TrimPrefix(n.Tag, "!!") + " (value not repeated)"
		}
		return "a tagged value (not repeated)"
	}
	return describe(n)
}

// childPath is the path of a mapping's entry under key: where the path
// may hold a credential, the key (the author's text) is not spelled out.
func (d *decoder) childPath(path, key string) string {
	if d.secret(join(path, key)) {
		return join(path, "*")
	}
	return join(path, key)
}

// text checks a scalar that becomes a string: printable, single-line.
func (d *decoder) text(n *yaml.Node, path, what string) bool {
	if i, r, bad := ControlChar(n.Value); bad {
		if d.secret(path) {
			d.fail(n, path, "%s contains a control or invisible character; only printable text is accepted", what)
		} else {
			d.fail(n, path, "%s contains the control or invisible character %U at byte %d; only printable single-line text is accepted", what, r, i)
		}
		return false
	}
	return true
}

// ControlChar finds the first character no record value may hold: C0 and
// C1 controls (newline and tab included), line and paragraph separators,
// bidirectional overrides and the byte-order mark, which can make text
// read differently from what it is.
func ControlChar(s string) (int, rune, bool) {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			return i, r, true
		case unicode.IsControl(r), r == '\u2028', r == '\u2029', r == '\ufeff',
			r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e', r == '\u200f':
			return i, r, true
		}
	}
	return 0, 0, false
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, Error{File: d.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	d.lines[path] = n.Line
	if n.Kind == yaml.AliasNode {
		d.fail(n, path, "YAML aliases are not allowed in records")
		return
	}
	if n.Tag == "!!null" {
		return // absent and null are the same
	}
	switch v.Kind() {
	case reflect.Pointer:
		nv := reflect.New(v.Type().Elem())
		d.value(n, nv.Elem(), path)
		v.Set(nv)
	case reflect.Struct:
		d.object(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "expected a list, got %s", d.describeAt(n, path))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.value(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.fail(n, path, "expected a mapping, got %s", d.describeAt(n, path))
			return
		}
		m := reflect.MakeMap(v.Type())
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				d.fail(k, path, "keys must be strings, got %s", d.describeAt(k, path))
				continue
			}
			if !d.text(k, path, "a key") {
				continue
			}
			if prev, dup := seen[k.Value]; dup {
				d.fail(k, d.childPath(path, k.Value), "duplicate key (first at line %d)", prev)
				continue
			}
			seen[k.Value] = k.Line
			ev := reflect.New(v.Type().Elem()).Elem()
			d.value(val, ev, d.childPath(path, k.Value))
			m.SetMapIndex(reflect.ValueOf(d.intern(k.Value)), ev)
		}
		v.Set(m)
	case reflect.Interface:
		if !d.plain(n, path) {
			return
		}
		var x any
		if err := n.Decode(&x); err != nil {
			if d.secret(path) {
				d.fail(n, path, "does not decode as YAML (the value is not repeated)")
			} else {
				d.fail(n, path, "%s", cleanYAMLErr(err))
			}
			return
		}
		v.Set(reflect.ValueOf(&x).Elem())
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			d.fail(n, path, "expected a string, got %s (quote it)", d.describeAt(n, path))
			return
		}
		if d.text(n, path, "the value") {
			v.SetString(d.intern(n.Value))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.fail(n, path, "expected true or false, got %s", d.describeAt(n, path))
			return
		}
		v.SetBool(n.Value == "true" || n.Value == "True" || n.Value == "TRUE")
	case reflect.Int:
		i, err := strconv.ParseInt(n.Value, 10, 64)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			d.fail(n, path, "expected an integer, got %s", d.describeAt(n, path))
			return
		}
		v.SetInt(i)
	default:
		d.fail(n, path, "unsupported field type %s", v.Type())
	}
}

func (d *decoder) object(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", d.describeAt(n, path))
		return
	}
	fields := map[string]int{}
	var names []string
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fields[name] = i
		names = append(names, name)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		if prev, dup := seen[k.Value]; dup {
			if _, known := fields[k.Value]; !known && d.secret(fp) {
				d.fail(k, path, "duplicate key (first at line %d), name not repeated", prev)
			} else {
				d.fail(k, fp, "duplicate key (first at line %d)", prev)
			}
			continue
		}
		seen[k.Value] = k.Line
		idx, ok := fields[k.Value]
		if !ok {
			if d.secret(fp) || !d.text(k, path, "a field name") {
				d.fail(k, path, "unknown field at line %d, name not repeated (known: %s)", k.Line, strings.Join(names, ", "))
				continue
			}
			d.fail(k, fp, "unknown field (known: %s)", strings.Join(names, ", "))
			continue
		}
		d.value(val, v.Field(idx), fp)
	}
}

// plain checks every scalar of a free-form value (keys included) as text.
func (d *decoder) plain(n *yaml.Node, path string) bool {
	if n.Kind == yaml.ScalarNode {
		return d.text(n, path, "a value")
	}
	ok := true
	for _, c := range n.Content {
		ok = d.plain(c, path) && ok
	}
	return ok
}

// Redact removes the user information (user:password@) from every URL in s.
func Redact(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfoRE.ReplaceAllString(s, "${1}***@")
}

var userinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@`)

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("%s %q", strings.TrimPrefix(n.Tag, "!!"), v)
}

func YAMLErrLine(err error) int {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return 0
	}
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		j := i + 5
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, _ := strconv.Atoi(s[i+5 : j])
		return n
	}
	return 0
}

// syntaxErrText is a parse error's text without what yaml.v3 quotes from
// the file (an anchor's name, as in "unknown anchor 'x' referenced"): a
// parse error has no field path, so the quoted text may be a credential.
func syntaxErrText(err error) string {
	return quotedRE.ReplaceAllString(cleanYAMLErr(err), "(name not repeated)")
}

var quotedRE = regexp.MustCompile("'[^']*'|`[^`]*`|\"[^\"]*\"")

func cleanYAMLErr(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.Index(s, "line "); i == 0 {
		if j := strings.Index(s, ": "); j > 0 {
			s = s[j+2:]
		}
	}
	return s
}
