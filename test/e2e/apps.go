//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ApplicationGVR is Argo CD's Application resource.
var ApplicationGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// ExampleRepo is the bundled example gitops repository, repo-relative.
const ExampleRepo = "examples/gitops"

// RepoFiles reads every file under dir (repo-relative paths -> content), leaving out the
// rendered/ golden output, which is not part of a gitops repository.
func RepoFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "rendered" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[rel] = string(b)
		return nil
	})
	return files, err
}

// SpokeApplication is the Application the hub render makes for a spoke (cmp/render
// templates/hub.yaml.tmpl: plugin spokeforge, mode spoke), pointed at the harness's spoke
// cluster. Sync is manual: tests sync it with the CLI, then turn automation on.
func SpokeApplication(name, repoURL, path string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
spec:
  project: default
  source:
    repoURL: %s
    targetRevision: main
    path: %s
    plugin:
      name: spokeforge
      parameters:
      - name: mode
        string: spoke
  destination:
    name: %s
  syncPolicy:
    retry:
      limit: 10
      backoff: {duration: 2s, factor: 2, maxDuration: 30s}
`, name, ArgoCDNamespace, repoURL, path, SpokeClusterName)
}

// AppState is the part of an Application's status the tests look at.
type AppState struct {
	Sync, Health, HealthMessage, Revision string
	OperationPhase, OperationMsg          string
	Conditions                            []string // "Type: message"
}

func (s AppState) String() string {
	return fmt.Sprintf("sync=%s health=%s(%s) revision=%.8s operation=%s(%s) conditions=%q",
		s.Sync, s.Health, s.HealthMessage, s.Revision, s.OperationPhase, s.OperationMsg, s.Conditions)
}

// App reads the Application name from the hub.
func (h *Hub) App(ctx context.Context, name string) (AppState, error) {
	u, err := h.Hub.Dynamic.Resource(ApplicationGVR).Namespace(ArgoCDNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return AppState{}, err
	}
	str := func(f ...string) string { s, _, _ := unstructured.NestedString(u.Object, f...); return s }
	st := AppState{
		Sync:           str("status", "sync", "status"),
		Revision:       str("status", "sync", "revision"),
		Health:         str("status", "health", "status"),
		HealthMessage:  str("status", "health", "message"),
		OperationPhase: str("status", "operationState", "phase"),
		OperationMsg:   str("status", "operationState", "message"),
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		st.Conditions = append(st.Conditions, fmt.Sprintf("%v: %v", m["type"], m["message"]))
	}
	return st, nil
}

// WaitApp polls the Application until ok accepts its state, or timeout. The error carries
// the last state seen.
func (h *Hub) WaitApp(ctx context.Context, name, what string, timeout time.Duration, ok func(AppState) bool) (AppState, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last AppState
	var lastErr error
	for {
		st, err := h.App(ctx, name)
		if err == nil && ok(st) {
			return st, nil
		}
		last, lastErr = st, err
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("application %s: not %s after %s: last state %s (err %v); logs in %s",
				name, what, timeout, last, lastErr, h.LogDir)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ObjectRef names one Kubernetes object.
type ObjectRef struct{ APIVersion, Kind, Namespace, Name string }

func (r ObjectRef) String() string {
	return strings.TrimPrefix(fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name), "/")
}

// RefsOf lists the objects of a YAML stream.
func RefsOf(manifest string) ([]ObjectRef, error) {
	objs, err := DecodeYAML(strings.NewReader(manifest))
	if err != nil {
		return nil, err
	}
	refs := make([]ObjectRef, 0, len(objs))
	for _, o := range objs {
		refs = append(refs, ObjectRef{o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName()})
	}
	if len(refs) == 0 {
		return nil, errors.New("no objects")
	}
	return refs, nil
}

// Missing returns the refs that do not exist on c.
func (c *Cluster) Missing(ctx context.Context, refs []ObjectRef) []string {
	var missing []string
	for _, r := range refs {
		if _, err := c.Get(ctx, r.APIVersion, r.Kind, r.Namespace, r.Name); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", r, err))
		}
	}
	return missing
}
