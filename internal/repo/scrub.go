package repo

import (
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/record"
)

// secretField is the decoder's first layer (record.Document.Secret); a
// variable so that a test can switch it off and see scrubCredentials hold.
var secretField = SecretField

// minScrubbed is the shortest text scrubCredentials removes: shorter ones
// (a, x, 1) would cut words out of every message, and are no credential.
const minScrubbed = 6

// credentialWords are the texts under connection.credentials that the
// schema itself spells (its field names and types): never a credential.
var credentialWords = func() map[string]bool {
	m := map[string]bool{"bearerToken": true, "clientCertificate": true}
	t := reflect.TypeOf(v1alpha1.Credentials{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
}()

// scrubCredentials is the second layer under the decoder's: every text the
// record's YAML holds under connection.credentials (values, unknown keys,
// tags, anchors, each line of a block, as written and as %q would quote
// it) is cut out of the findings' paths and messages, whatever check made
// them. A record that does not parse has no tree to read texts from; the
// parser's messages never quote the file (record.Parse).
func scrubCredentials(data []byte, errs record.Errors) record.Errors {
	if len(errs) == 0 {
		return errs
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return errs
	}
	set := map[string]bool{}
	add := func(s string) {
		for _, v := range []string{s, strconv.Quote(s)[1 : len(strconv.Quote(s))-1]} {
			if len(v) >= minScrubbed && !credentialWords[v] {
				set[v] = true
			}
		}
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); len(line) >= minScrubbed && !credentialWords[line] {
				set[line] = true
			}
		}
	}
	var collect func(n *yaml.Node)
	collect = func(n *yaml.Node) {
		add(n.Value)
		if !strings.HasPrefix(n.Tag, "!!") {
			add(n.Tag) // the author's own tag: YAML's (!!str, !!int) are not text of the file
		}
		add(n.Anchor)
		for _, c := range n.Content {
			collect(c)
		}
	}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind == yaml.DocumentNode {
			for _, c := range n.Content {
				walk(c, path)
			}
			return
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			child := k.Value
			if path != "" {
				child = path + "." + k.Value
			}
			if SecretField(child) {
				if SecretField(path) {
					collect(k)
				}
				collect(v)
				continue
			}
			walk(v, child)
		}
	}
	walk(&root, "")
	texts := make([]string, 0, len(set))
	for s := range set {
		texts = append(texts, s)
	}
	// Longest first: a text that holds another is cut whole.
	sort.Slice(texts, func(i, j int) bool {
		if len(texts[i]) != len(texts[j]) {
			return len(texts[i]) > len(texts[j])
		}
		return texts[i] < texts[j]
	})
	out := make(record.Errors, len(errs))
	for i, e := range errs {
		for _, s := range texts {
			e.Msg = strings.ReplaceAll(e.Msg, s, "***")
			e.Path = strings.ReplaceAll(e.Path, s, "***")
		}
		out[i] = e
	}
	return out
}
