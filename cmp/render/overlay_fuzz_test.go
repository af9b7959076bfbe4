package render

import (
	"strings"
	"testing"
)

// FuzzOverlayNeverReaches applies arbitrary kustomization bytes (SERVER
// stands for a local server that counts requests; a fake git on $PATH
// records runs) beside a few ordinary files: nothing may ever reach the
// server or run git, and the check must refuse everything the sandbox
// would have to: the sandbox refusing a request, or kustomize looking for
// git, means the check let a remote form through.
func FuzzOverlayNeverReaches(f *testing.F) {
	for _, files := range remoteForms {
		for name, k := range files {
			if name == "kustomization.yaml" {
				f.Add(k)
			}
		}
	}
	for _, k := range []string{
		"resources: [cm.yaml, sub]\npatches: [{path: p.yaml}]\n",
		"<<: {resources: [cm.yaml]}\nPatches: [{patch: '{kind: ConfigMap, metadata: {name: base, namespace: ns}, data: {a: b}}'}]\n",
		"resources: &r [cm.yaml]\ncomponents: *r\n",
		"{\"resources\": [\"sub\"], \"configMapGenerator\": [{\"name\": \"g\", \"files\": [\"k=cm.yaml\"]}]}",
		"patchesStrategicMerge:\n- |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: base, namespace: ns}\n  data: &d {a: b}\n",
		"reſources: ['SERVER/x']\nBASES: ['git@example.com:o/r.git']\n",
	} {
		f.Add(k)
	}
	tr := newTrap(f)
	f.Fuzz(func(t *testing.T, kust string) {
		before := networkRefusals.Load()
		_, err := applyOverlay(t, tr.URL, map[string]string{
			"kustomization.yaml":     kust,
			"cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: added, namespace: ns}\n",
			"p.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base, namespace: ns}\ndata: {k: v}\n",
			"sub/kustomization.yaml": "resources: [cm.yaml]\n",
			"sub/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sub, namespace: ns}\n",
		})
		if r := tr.reached(); r != "" {
			t.Fatalf("%s (error %v)", r, err)
		}
		if networkRefusals.Load() != before {
			t.Fatalf("the check passed a kustomization whose build asked for the network: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "no 'git' program on path") {
			t.Fatalf("the check passed a kustomization whose build tried to run git: %v", err)
		}
	})
}
