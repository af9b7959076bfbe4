package render

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// OverlayAliasBudget bounds what YAML aliases may add to an overlay
// directory as a whole, counted as the bytes of the scalars an alias
// copies plus one per node. kustomize parses every resource, patch, CRD and
// configuration file with kyaml and then inflates each alias with a copy of
// its anchor (RNode.DeAnchor) without any bound, so one 1 MiB file of
// nested aliases (a "billion laughs") would otherwise take all the
// repo-server's memory, and an alias that contains itself its stack.
// Overlays rarely need aliases; this leaves room for a few.
const OverlayAliasBudget = 1 << 20

// kustomize's document separator (kio.ByteReader splits on it before parsing).
var yamlDocSeparator = regexp.MustCompile(`\n---.*\n`)

// aliases spends the budget on every file of the directory, whatever it is
// named and whether or not a kustomization lists it: a file krusty may parse
// is any file. A file that is not YAML costs nothing (kustomize cannot
// parse it either).
func (c *overlayChecker) aliases() error {
	for _, name := range sortedFileNames(c.files) {
		if err := c.spendAliases(string(c.files[name])); err != nil {
			return c.fail(name, 0, "%v", err)
		}
	}
	return nil
}

// spendAliases takes what text's aliases add from the budget.
func (c *overlayChecker) spendAliases(text string) error {
	added, err := aliasGrowth(text)
	if err != nil {
		return err
	}
	if added > c.aliasBudget {
		return fmt.Errorf("YAML aliases expand this past the overlay's bound: aliases may add at most %d bytes (scalar bytes plus one per node) to an overlay, and this adds %s", OverlayAliasBudget, units(added))
	}
	c.aliasBudget -= added
	return nil
}

// aliasGrowth is how much expanding every alias adds to text's YAML: the
// larger of text parsed as kustomize splits it (each chunk between
// separators, its first document) and parsed as one stream of documents.
func aliasGrowth(text string) (int64, error) {
	if !strings.Contains(text, "*") {
		return 0, nil // no alias
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var chunks, stream int64
	for _, chunk := range splitYAMLDocuments(text) {
		var n kyaml.Node
		if err := kyaml.NewDecoder(strings.NewReader(chunk)).Decode(&n); err != nil {
			continue
		}
		g, err := nodeGrowth(&n)
		if err != nil {
			return 0, err
		}
		chunks = satAdd(chunks, g)
	}
	dec := kyaml.NewDecoder(strings.NewReader(text))
	for {
		var n kyaml.Node
		if err := dec.Decode(&n); err != nil {
			break
		}
		g, err := nodeGrowth(&n)
		if err != nil {
			return 0, err
		}
		stream = satAdd(stream, g)
	}
	return max(chunks, stream), nil
}

func splitYAMLDocuments(s string) []string {
	var docs []string
	prev := 0
	for _, loc := range yamlDocSeparator.FindAllStringIndex(s, -1) {
		docs = append(docs, s[prev:loc[0]])
		prev = loc[1]
	}
	return append(docs, s[prev:])
}

// growthCap saturates sizes: past it, the exact figure does not matter.
const growthCap = int64(1) << 50

func satAdd(a, b int64) int64 {
	if a+b > growthCap || a+b < 0 {
		return growthCap
	}
	return a + b
}

func units(n int64) string {
	if n >= growthCap {
		return fmt.Sprintf("more than %d", growthCap)
	}
	return fmt.Sprint(n)
}

var errAliasCycle = errors.New("a YAML alias refers to a node that contains it")

// nodeGrowth is the weight of n with every alias expanded minus its weight
// as parsed. Each anchor is weighed once (memo), so the walk is linear in
// the parsed tree however deep the aliases nest.
func nodeGrowth(n *kyaml.Node) (int64, error) {
	memo := map[*kyaml.Node]int64{}
	visiting := map[*kyaml.Node]bool{}
	var expanded func(n *kyaml.Node) (int64, error)
	expanded = func(n *kyaml.Node) (int64, error) {
		if n == nil {
			return 0, nil
		}
		if w, ok := memo[n]; ok {
			return w, nil
		}
		if visiting[n] {
			return 0, errAliasCycle
		}
		visiting[n] = true
		defer delete(visiting, n)
		var w int64
		switch n.Kind {
		case kyaml.AliasNode:
			a, err := expanded(n.Alias)
			if err != nil {
				return 0, err
			}
			w = a
		case kyaml.ScalarNode:
			w = 1 + int64(len(n.Value))
		default:
			w = 1
			for _, ch := range n.Content {
				cw, err := expanded(ch)
				if err != nil {
					return 0, err
				}
				w = satAdd(w, cw)
			}
		}
		memo[n] = w
		return w, nil
	}
	var parsed func(n *kyaml.Node) int64
	parsed = func(n *kyaml.Node) int64 {
		switch {
		case n == nil:
			return 0
		case n.Kind == kyaml.AliasNode:
			return 1
		case n.Kind == kyaml.ScalarNode:
			return 1 + int64(len(n.Value))
		}
		w := int64(1)
		for _, ch := range n.Content {
			w += parsed(ch)
		}
		return w
	}
	e, err := expanded(n)
	if err != nil {
		return 0, err
	}
	return max(0, e-parsed(n)), nil
}
