package lua

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	argolua "github.com/argoproj/argo-cd/v2/util/lua"
	"sigs.k8s.io/yaml"
)

// TestUpstreamFixtures runs Argo CD's own fixtures for the kinds whose
// built-in checks spokeforge replaces, read from the Argo CD module this
// project builds against, through the shipped scripts: an override must give
// every object upstream covers the status and message upstream gives it.
func TestUpstreamFixtures(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/argoproj/argo-cd/v2").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "resource_customizations")
	scripts := loadScripts(t)
	ran := 0
	for _, s := range scripts {
		dir := filepath.Join(root, s.Group, s.Kind)
		b, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
		if os.IsNotExist(err) {
			continue // no built-in check for this kind
		}
		if err != nil {
			t.Fatal(err)
		}
		var ht healthTests
		if err := yaml.Unmarshal(b, &ht); err != nil {
			t.Fatal(err)
		}
		for _, tc := range ht.Tests {
			ran++
			t.Run(s.Group+"/"+s.Kind+"/"+tc.InputPath, func(t *testing.T) {
				obj := loadObj(t, filepath.Join(dir, tc.InputPath))
				vm := argolua.VM{ResourceOverrides: overridesOf(scripts, true)}
				got, err := evaluate(t, vm, obj)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != tc.HealthStatus.Status || got.Message != tc.HealthStatus.Message {
					t.Errorf("got %s %q, upstream %s %q", got.Status, got.Message, tc.HealthStatus.Status, tc.HealthStatus.Message)
				}
			})
		}
	}
	if ran < 9 {
		t.Fatalf("%d upstream fixtures ran; Argo CD v2.14 has 6 for Certificate and 3 for ExternalSecret", ran)
	}
}
