package main

import (
	"fmt"
	"github.com/spokeforge/spokeforge/cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func BenchmarkRenderSpoke(b *testing.B) {
	getenv := func(k string) string {
		if k == "SPOKEFORGE_IMAGE" {
			return testImage
		}
		return ""
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cmp.Generate("examples/gitops/clusters/gpu-east-1", "spoke", getenv); err != nil {
			b.Fatal(err)
		}
	}
}

// synthRepo writes a gitops repo of n clusters derived from the example.
func synthRepo(b *testing.B, n int) string {
	b.Helper()
	tpl, err := os.ReadFile(exampleCluster)
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	var allow []string
	for i := range n {
		name := fmt.Sprintf("gpu-%04d", i)
		rec := strings.NewReplacer("name: gpu-east-1", "name: "+name, "shortName: eue1", fmt.Sprintf("shortName: s%04d", i),
			"role/eue1-workload", fmt.Sprintf("role/s%04d-workload", i)).Replace(string(tpl))
		dir := filepath.Join(root, "clusters", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(rec), 0o644); err != nil {
			b.Fatal(err)
		}
		allow = append(allow, name)
	}
	if err := os.MkdirAll(filepath.Join(root, "orgs"), 0o755); err != nil {
		b.Fatal(err)
	}
	org := "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: acme}\nspec:\n  clusterAllowlist: [" + strings.Join(allow, ", ") + "]\n"
	if err := os.WriteFile(filepath.Join(root, "orgs", "acme.yaml"), []byte(org), 0o644); err != nil {
		b.Fatal(err)
	}
	return root
}

func BenchmarkValidateRepo1000(b *testing.B) {
	root := synthRepo(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if code, _, stderr := run("validate", root); code != 0 {
			b.Fatal(stderr)
		}
	}
}

// BenchmarkRenderSpokeNoOverlay isolates the template path from kustomize.
func BenchmarkRenderSpokeNoOverlay(b *testing.B) {
	getenv := func(k string) string {
		if k == "SPOKEFORGE_IMAGE" {
			return testImage
		}
		return ""
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cmp.Generate("examples/gitops/clusters/gpu-west-2", "spoke", getenv); err != nil {
			b.Fatal(err)
		}
	}
}
