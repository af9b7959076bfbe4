// Package lua holds spokeforge's Argo CD custom health checks and the code
// that packages them for argocd-cm. The scripts check nothing themselves:
// they read the status the agent (healthchecks/) wrote, or the status
// cert-manager and External Secrets wrote, and turn it into Argo CD health.
//
// The scripts live in Argo CD's resource_customizations layout,
// lua/<group>/<Kind>/{health.lua,health_test.yaml,testdata/}, and are written
// for Argo CD's default Lua sandbox: only the base, table, package and a safe
// os (time/date, reachable through require("os")) libraries are opened, so the
// scripts use neither string nor math. Shared helpers are kept in
// lua/_lib/sfcore.lua; `go run ./lua/gen` copies into each script, between
// "-- BEGIN sfcore" and "-- END sfcore" markers, verbatim, the helpers it uses
// (Argo CD up to v3.4 compiles a script on every evaluation, so unused helpers
// cost; v3.6 compiles it once); the tests fail if a copy drifts.
//
// RenderComponent turns the scripts into the kustomize Component under
// manifests/argocd-cm (a strategic-merge patch of the argocd-cm ConfigMap);
// regenerate it with `go run ./lua/gen`. The component carries each script
// minified (Minify: no comments, no indentation, the same lines), the
// readable source staying in lua/, and behind the kind's fast.lua when it has
// one: a shortcut for the common states (see Script.Shipped).
package lua

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// ConfigMapKeyPrefix is the argocd-cm key prefix for custom health checks.
const ConfigMapKeyPrefix = "resource.customizations.health."

// ActionsKeyPrefix prefixes the argocd-cm key of a kind's resource actions.
const ActionsKeyPrefix = "resource.customizations.actions."

// PatchFile and KustomizationFile are the generated file names inside the
// component directory.
const (
	PatchFile         = "argocd-cm-health-patch.yaml"
	KustomizationFile = "kustomization.yaml"
)

// Script is one health check found under the lua directory.
type Script struct {
	Group, Kind string
	// Dir is the script's directory, e.g. lua/cert-manager.io/Certificate.
	Dir string
	// Source is the content of health.lua, the readable form; argocd-cm gets
	// Shipped().
	Source string
	// Fast is the content of fast.lua, "" when the kind has none: a shortcut
	// for the states a resource spends its life in (see Shipped).
	Fast string
	// Actions is the argocd-cm value of the kind's resource actions (Argo
	// CD's ResourceActions as YAML), from <dir>/actions/; "" when none.
	Actions string
}

// Shipped is the script as argocd-cm carries it and Argo CD evaluates it:
// Source minified (see Minify), behind the kind's fast path when it has one.
//
// Argo CD up to v3.4 compiles the whole script on every evaluation (v3.6
// caches the compiled script), and compiling costs per token, while scanning
// a long string costs a few nanoseconds a byte. So a kind with a fast.lua
// ships it first: a few lines that return the health of the common states
// (Healthy, a plain Degraded) when every field they read is of the usual
// shape, and otherwise fall through to
//
//	return loadstring([===[<Source, minified>]===])()
//
// which compiles the whole check only for the evaluations that need it, with
// its line numbers those of health.lua. fast.lua must agree with health.lua
// on every object it answers for (TestFastPathAgreesWithSource) and, like it,
// never raise.
func (s Script) Shipped() (string, error) {
	full, err := Minify(s.Source)
	if err != nil {
		return "", fmt.Errorf("%s/health.lua: %v", s.Dir, err)
	}
	if s.Fast == "" {
		return full, nil
	}
	fast, err := Minify(s.Fast)
	if err != nil {
		return "", fmt.Errorf("%s/fast.lua: %v", s.Dir, err)
	}
	if strings.Contains(full, fullClose) {
		return "", fmt.Errorf("%s/health.lua: contains %s, which ends the string fast.lua compiles it from", s.Dir, fullClose)
	}
	return strings.TrimRight(fast, "\n") + "\nreturn loadstring(" + fullOpen + full + fullClose + ")()\n", nil
}

// The long brackets around the whole check behind a fast path: level 3, since
// the check's own lazily compiled code is in level-2 strings.
const (
	fullOpen  = "[===["
	fullClose = "]===]"
)

// Key returns the argocd-cm key, e.g.
// resource.customizations.health.cert-manager.io_Certificate; core kinds
// (empty group) drop the group part.
func (s Script) Key() string { return ConfigMapKeyPrefix + s.gk() }

// ActionsKey is the argocd-cm key of the kind's resource actions.
func (s Script) ActionsKey() string { return ActionsKeyPrefix + s.gk() }

func (s Script) gk() string {
	if s.Group == "" || s.Group == "core" {
		return s.Kind
	}
	return s.Group + "_" + s.Kind
}

// loadActions reads dir/actions in Argo CD's resource_customizations layout
// (discovery.lua and <name>/action.lua) into the argocd-cm value.
func loadActions(dir string) (string, error) {
	discovery, err := os.ReadFile(filepath.Join(dir, "actions", "discovery.lua"))
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "actions", "*", "action.lua"))
	if err != nil {
		return "", err
	}
	sort.Strings(paths)
	type definition struct {
		Name      string `json:"name"`
		ActionLua string `json:"action.lua"`
	}
	var defs []definition
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		defs = append(defs, definition{Name: filepath.Base(filepath.Dir(p)), ActionLua: string(src)})
	}
	b, err := yaml.Marshal(struct {
		Discovery   string       `json:"discovery.lua"`
		Definitions []definition `json:"definitions"`
	}{string(discovery), defs})
	return string(b), err
}

// LoadScripts returns every <root>/<group>/<Kind>/health.lua, sorted by key.
func LoadScripts(root string) ([]Script, error) {
	paths, err := filepath.Glob(filepath.Join(root, "*", "*", "health.lua"))
	if err != nil {
		return nil, err
	}
	var out []Script
	for _, p := range paths {
		dir := filepath.Dir(p)
		group := filepath.Base(filepath.Dir(dir))
		if strings.HasPrefix(group, "_") || strings.HasPrefix(group, ".") {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		fast, err := os.ReadFile(filepath.Join(dir, "fast.lua"))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		actions, err := loadActions(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, Script{Group: group, Kind: filepath.Base(dir), Dir: dir, Source: string(src), Fast: string(fast), Actions: actions})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	if len(out) == 0 {
		return nil, fmt.Errorf("no health.lua found under %s", root)
	}
	return out, nil
}

const header = "# Code generated by `go run ./lua/gen` from lua/*/*/health.lua and actions/; DO NOT EDIT.\n"

// RenderComponent returns the generated files of the argocd-cm component,
// keyed by file name.
func RenderComponent(scripts []Script) (map[string][]byte, error) {
	var p bytes.Buffer
	p.WriteString(header)
	p.WriteString("# Strategic-merge patch: adds spokeforge's health checks to an existing\n")
	p.WriteString("# argocd-cm and leaves every other key alone.\n")
	p.WriteString("# The health scripts are minified from lua/<group>/<Kind>/health.lua, the readable\n")
	p.WriteString("# source: comments and indentation removed, also in the [==[ ]==] code they compile\n")
	p.WriteString("# lazily; strings unchanged, and every line where it is in the source, so a line\n")
	p.WriteString("# number in an error message points into lua/. A kind with a fast.lua ships it\n")
	p.WriteString("# first (the common states, a few lines) and the whole check behind it, in a\n")
	p.WriteString("# [===[ ]===] string compiled only when the fast path does not answer.\n")
	p.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n")
	for _, s := range scripts {
		shipped, err := s.Shipped()
		if err != nil {
			return nil, err
		}
		if err := writeBlock(&p, s.Key(), s.Dir+"/health.lua", shipped); err != nil {
			return nil, err
		}
		if s.Actions != "" {
			if err := writeBlock(&p, s.ActionsKey(), s.Dir+"/actions", s.Actions); err != nil {
				return nil, err
			}
		}
	}
	var k bytes.Buffer
	k.WriteString(header)
	k.WriteString(`# A kustomize Component: include it from the overlay that installs Argo CD,
#
#   resources:
#   - https://raw.githubusercontent.com/argoproj/argo-cd/v3.6.2/manifests/install.yaml
#   components:
#   - <path-to-spokeforge>/manifests/argocd-cm
#
# then kubectl apply -k <overlay>. The patch only adds data keys to argocd-cm;
# it does not enable resource.customizations.useOpenLibs.* (the scripts do not
# need string or math).
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
# A target, not the patch's own name and namespace, picks argocd-cm: an overlay that sets
# namespace: argocd over the release's install.yaml (resources without a namespace until the
# overlay's namespace transformer runs, after Components) still matches.
patches:
- path: ` + PatchFile + `
  target:
    kind: ConfigMap
    name: argocd-cm
`)
	return map[string][]byte{PatchFile: p.Bytes(), KustomizationFile: k.Bytes()}, nil
}

// writeBlock writes one data key as a YAML literal block scalar.
func writeBlock(w *bytes.Buffer, key, from, src string) error {
	if !strings.HasSuffix(src, "\n") || strings.HasSuffix(src, "\n\n") {
		return fmt.Errorf("%s must end with exactly one newline", from)
	}
	if strings.HasPrefix(src, " ") || strings.HasPrefix(src, "\t") || strings.ContainsAny(src, "\r") {
		return fmt.Errorf("%s: leading whitespace or CR cannot be stored in a block scalar", from)
	}
	fmt.Fprintf(w, "  %s: |\n", key)
	for _, line := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		if line == "" {
			w.WriteString("\n")
			continue
		}
		w.WriteString("    ")
		w.WriteString(line)
		w.WriteString("\n")
	}
	return nil
}
