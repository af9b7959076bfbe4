package lua

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	appv1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	argolua "github.com/argoproj/argo-cd/v3/util/lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	sflua "github.com/spokeforge/spokeforge/lua"
)

// root is the spokeforge repository, this module's replace target (go.mod).
const root = "../../.."

// luaDir holds the scripts and their fixtures; the tests name every file of it relative to it,
// as they did when they ran in package lua.
var luaDir = filepath.Join(root, "lua")

type healthTests struct {
	Tests []struct {
		InputPath    string              `json:"inputPath"`
		HealthStatus health.HealthStatus `json:"healthStatus"`
	} `json:"tests"`
}

// loadScripts reads the scripts of lua/ with sflua.LoadScripts, each Dir made relative to lua/
// (cert-manager.io/Certificate): the tests use it in their names and messages.
func loadScripts(t testing.TB) []sflua.Script {
	t.Helper()
	scripts, err := sflua.LoadScripts(luaDir)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range scripts {
		scripts[i].Dir = filepath.Join(s.Group, s.Kind)
	}
	return scripts
}

// luaGlob is filepath.Glob in lua/, the matches relative to it.
func luaGlob(pattern string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(luaDir, pattern))
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		if files[i], err = filepath.Rel(luaDir, f); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// loadObj reads the object at path, relative to lua/.
func loadObj(t testing.TB, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(luaDir, path))
	if err != nil {
		t.Fatal(err)
	}
	return decodeObj(t, b, path)
}

// decodeObj decodes a fixture's YAML as the tests always have (numbers as float64).
func decodeObj(t testing.TB, b []byte, path string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]interface{}{}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// overrides returns the ResourceOverrides Argo CD builds from the generated
// argocd-cm keys: HealthLua set to the shipped (minified) script, UseOpenLibs
// left false.
func overrides(scripts []sflua.Script) map[string]appv1.ResourceOverride {
	return overridesOf(scripts, true)
}

// overridesOf is overrides with the shipped scripts or, shipped false, the
// readable sources of lua/.
func overridesOf(scripts []sflua.Script, shipped bool) map[string]appv1.ResourceOverride {
	m := map[string]appv1.ResourceOverride{}
	for _, s := range scripts {
		text := s.Source
		if shipped {
			var err error
			if text, err = s.Shipped(); err != nil {
				panic(err)
			}
		}
		m[s.Group+"/"+s.Kind] = appv1.ResourceOverride{HealthLua: text, Actions: s.Actions}
	}
	return m
}

// forms names the two texts of each script the tests evaluate: the source in
// lua/ and the minified form argocd-cm ships.
var forms = []struct {
	name    string
	shipped bool
}{{"source", false}, {"shipped", true}}

// evaluate runs obj through Argo CD's own lookup and execution path, exactly
// as a custom argocd-cm health check runs in the controller.
func evaluate(t testing.TB, vm argolua.VM, obj *unstructured.Unstructured) (*health.HealthStatus, error) {
	t.Helper()
	script, useOpenLibs, err := vm.GetHealthScript(obj)
	if err != nil {
		t.Fatal(err)
	}
	if script == "" {
		t.Fatalf("no health script for %s", obj.GroupVersionKind())
	}
	if useOpenLibs {
		t.Fatalf("%s: override unexpectedly enables useOpenLibs", obj.GroupVersionKind())
	}
	return vm.ExecuteHealthLua(obj, script)
}

// controllerZones are time zones the controller may run in. Argo CD's safe
// os.date formats a given time in the local zone even when asked for UTC, so
// the scripts must give the same messages in any of them.
var controllerZones = []*time.Location{time.UTC, time.FixedZone("UTC+05:30", 5*3600+1800), time.FixedZone("UTC-08:00", -8*3600)}

// inZone runs f with time.Local set to zone, as if the controller ran there.
func inZone[T any](zone *time.Location, f func() (T, error)) (T, error) {
	saved := time.Local
	time.Local = zone
	defer func() { time.Local = saved }()
	return f()
}

// groupDir maps an object to its lua/<group>/<Kind> directory.
func groupDir(obj *unstructured.Unstructured) string {
	return filepath.Join(obj.GroupVersionKind().Group, obj.GetKind())
}
