package lua

import (
	"errors"
	"io/fs"
	"path"
	"testing"

	"github.com/argoproj/argo-cd/v3/resource_customizations"
	argolua "github.com/argoproj/argo-cd/v3/util/lua"
	"sigs.k8s.io/yaml"
)

// TestUpstreamFixtures runs Argo CD's own fixtures for the kinds whose
// built-in checks spokeforge replaces, read from the Argo CD module this
// project builds against (its resource_customizations, as embedded in Argo
// CD), through the shipped scripts: an override must give every object
// upstream covers the status and message upstream gives it.
func TestUpstreamFixtures(t *testing.T) {
	upstream := resource_customizations.Embedded
	scripts := loadScripts(t)
	ran := 0
	for _, s := range scripts {
		dir := path.Join(s.Group, s.Kind)
		b, err := fs.ReadFile(upstream, path.Join(dir, "health_test.yaml"))
		if errors.Is(err, fs.ErrNotExist) {
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
				p := path.Join(dir, tc.InputPath)
				y, err := fs.ReadFile(upstream, p)
				if err != nil {
					t.Fatal(err)
				}
				obj := decodeObj(t, y, p)
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
		t.Fatalf("%d upstream fixtures ran; Argo CD v3.6.2 has 6 for Certificate and 3 for ExternalSecret (as v2.14.21 had)", ran)
	}
}
