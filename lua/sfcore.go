package lua

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// The sfcore block markers. Between them a script holds the helpers of lua/_lib/sfcore.lua it
// uses, directly or through another helper, verbatim and in the library's order: Argo CD
// compiles a script on every evaluation, and compiling is most of its cost, so a script carries
// no helper it does not call.
const (
	sfcoreBegin = "-- BEGIN sfcore"
	sfcoreEnd   = "-- END sfcore"
	// Helpers keep the code they compile only when needed in long strings
	// between these brackets, unindented.
	longOpen  = "[==["
	longClose = "]==]"
)

// libUnit is one top-level declaration of sfcore.lua with the comment above it.
type libUnit struct {
	name string // the declared local ("CH", "sfText"); "" for the header comment
	text string
}

var (
	declRE  = regexp.MustCompile(`^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)
	identRE = regexp.MustCompile(`\b(?:CH|sf[A-Z][A-Za-z0-9]*)\b`)
)

// splitLib cuts sfcore.lua into its header and one unit per top-level local declaration.
func splitLib(lib string) ([]libUnit, error) {
	lib = strings.TrimSuffix(lib, "\n")
	if !strings.HasPrefix(lib, sfcoreBegin) || !strings.HasSuffix(lib, sfcoreEnd) {
		return nil, fmt.Errorf("sfcore.lua must start with %q and end with %q", sfcoreBegin, sfcoreEnd)
	}
	lines := strings.Split(strings.TrimSuffix(lib, sfcoreEnd), "\n")
	var units []libUnit
	var pending []string // comment and blank lines not yet attached to a declaration
	cur := -1
	inLong := false // inside a [==[ ... ]==] string: its lines belong to the current unit
	for _, line := range lines {
		if inLong || strings.Contains(line, longOpen) {
			inLong = !strings.Contains(line, longClose)
			if cur >= 0 {
				units[cur].text += "\n" + strings.Join(append(pending, line), "\n")
				pending = nil
				continue
			}
		}
		if m := declRE.FindStringSubmatch(line); m != nil {
			units = append(units, libUnit{name: m[1], text: strings.Join(append(pending, line), "\n")})
			pending, cur = nil, len(units)-1
			continue
		}
		if cur >= 0 && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") || line == "end" || line == "}") {
			units[cur].text += "\n" + strings.Join(append(pending, line), "\n")
			pending = nil
			continue
		}
		if cur < 0 && len(units) == 0 && strings.TrimSpace(line) == "" && len(pending) > 0 {
			// The header ends at the first blank line.
			units = append(units, libUnit{text: strings.Join(pending, "\n")})
			pending = nil
			continue
		}
		pending = append(pending, line)
	}
	if len(units) == 0 || units[0].name != "" {
		return nil, fmt.Errorf("sfcore.lua: no header comment before the first declaration")
	}
	return units, nil
}

// LibFor returns the sfcore block for a script whose own code is body: the header, every
// helper body needs (transitively), and the markers.
func LibFor(lib, body string) (string, error) {
	units, err := splitLib(lib)
	if err != nil {
		return "", err
	}
	byName := map[string]int{}
	for i, u := range units {
		if u.name != "" {
			byName[u.name] = i
		}
	}
	need := map[int]bool{}
	var visit func(code string)
	visit = func(code string) {
		for _, id := range identRE.FindAllString(stripComments(code), -1) {
			i, ok := byName[id]
			if ok && !need[i] {
				need[i] = true
				visit(units[i].text)
			}
		}
	}
	visit(body)
	idx := make([]int, 0, len(need))
	for i := range need {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	parts := []string{units[0].text}
	for _, i := range idx {
		parts = append(parts, strings.TrimLeft(units[i].text, "\n"))
	}
	return strings.Join(parts, "\n\n") + "\n" + sfcoreEnd, nil
}

// stripComments drops Lua line comments, so a helper named only in a comment is not pulled in.
func stripComments(code string) string {
	var b strings.Builder
	for _, line := range strings.Split(code, "\n") {
		if k := strings.Index(line, "--"); k >= 0 {
			line = line[:k]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// SyncLib rewrites the sfcore block of a script's source for its body, or returns the source
// unchanged when it has no block.
func SyncLib(lib, source string) (string, error) {
	i := strings.Index(source, sfcoreBegin)
	if i < 0 {
		return source, nil
	}
	j := strings.Index(source, sfcoreEnd)
	if j < i {
		return "", fmt.Errorf("unterminated sfcore block")
	}
	rest := source[j+len(sfcoreEnd):]
	block, err := LibFor(lib, source[:i]+rest)
	if err != nil {
		return "", err
	}
	return source[:i] + block + rest, nil
}
