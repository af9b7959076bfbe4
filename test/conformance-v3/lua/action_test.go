package lua

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	appv1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	argolua "github.com/argoproj/argo-cd/v3/util/lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// actionTests is Argo CD's action_test.yaml format (util/lua custom_actions_test.go).
type actionTests struct {
	DiscoveryTests []struct {
		InputPath string                 `json:"inputPath"`
		Result    []appv1.ResourceAction `json:"result"`
	} `json:"discoveryTests"`
	ActionTests []struct {
		Action             string `json:"action"`
		InputPath          string `json:"inputPath"`
		ExpectedOutputPath string `json:"expectedOutputPath"`
	} `json:"actionTests"`
}

// readObject reads the object at path, relative to lua/.
func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(luaDir, path))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &unstructured.Unstructured{Object: m}
}

// TestResourceActions runs every actions/action_test.yaml through Argo CD's
// own action lookup, discovery and execution, in the default sandbox, with
// the actions as the argocd-cm Component ships them (no action parameters:
// the Component's actions take none).
func TestResourceActions(t *testing.T) {
	files, err := luaGlob("*/*/actions/action_test.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no action tests: %v", err)
	}
	vm := argolua.VM{ResourceOverrides: overrides(loadScripts(t))}
	for _, f := range files {
		dir := filepath.Dir(f)
		b, err := os.ReadFile(filepath.Join(luaDir, f))
		if err != nil {
			t.Fatal(err)
		}
		var tests actionTests
		if err := yaml.UnmarshalStrict(b, &tests); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tt := range tests.DiscoveryTests {
			t.Run(filepath.Join(dir, "discovery", tt.InputPath), func(t *testing.T) {
				obj := readObject(t, filepath.Join(dir, tt.InputPath))
				scripts, err := vm.GetResourceActionDiscovery(obj)
				if err != nil {
					t.Fatal(err)
				}
				got, err := vm.ExecuteResourceActionDiscovery(obj, scripts)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tt.Result) || (len(got) > 0 && !reflect.DeepEqual(got, tt.Result)) {
					t.Fatalf("discovery: got %+v, want %+v", got, tt.Result)
				}
			})
		}
		for _, tt := range tests.ActionTests {
			t.Run(filepath.Join(dir, tt.Action, tt.InputPath), func(t *testing.T) {
				obj := readObject(t, filepath.Join(dir, tt.InputPath))
				def, err := vm.GetResourceAction(obj, tt.Action)
				if err != nil {
					t.Fatal(err)
				}
				impacted, err := vm.ExecuteResourceAction(obj, def.ActionLua, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(impacted) != 1 || impacted[0].K8SOperation != argolua.PatchOperation {
					t.Fatalf("want one patch of the source object, got %+v", impacted)
				}
				got := normalTimes(t, impacted[0].UnstructuredObj.Object)
				want := normalTimes(t, readObject(t, filepath.Join(dir, tt.ExpectedOutputPath)).Object)
				if !reflect.DeepEqual(got, want) {
					g, _ := json.MarshalIndent(got, "", "  ")
					t.Fatalf("output differs from %s:\n%s", tt.ExpectedOutputPath, g)
				}
			})
		}
	}
}

// normalTimes round-trips through JSON (numbers as float64) and sets the
// lastTransitionTime the action wrote (now) to the fixtures' zero time.
func normalTimes(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	status, _ := m["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["reason"] == "ManuallyTriggered" {
			c["lastTransitionTime"] = "0001-01-01T00:00:00Z"
		}
	}
	return m
}
