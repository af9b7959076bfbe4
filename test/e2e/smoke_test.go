//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSmoke: a directory Application from a file:// repo, synced with the argocd CLI, lands its
// ConfigMap on the spoke.
func TestSmoke(t *testing.T) {
	parallel(t)
	start := time.Now()
	h := StartHub(t, Options{SpokeforgeOptional: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	repo, err := h.NewGitRepo("smoke", map[string]string{
		"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: smoke\ndata:\n  hello: world\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: smoke
  namespace: %s
spec:
  project: default
  source:
    repoURL: %s
    targetRevision: HEAD
    path: app
    directory: {recurse: true}
  destination:
    server: %s
    namespace: default
`, ArgoCDNamespace, repo.URL, h.Spoke.URL))
	if err != nil {
		t.Fatal(err)
	}
	syncStart := time.Now()
	if err := h.SyncApp(ctx, "smoke", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("synced in %s", time.Since(syncStart).Round(time.Millisecond))

	cm, err := h.Spoke.Client.CoreV1().ConfigMaps("default").Get(ctx, "smoke", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap default/smoke on the spoke: %v", err)
	}
	if cm.Data["hello"] != "world" {
		t.Fatalf("ConfigMap default/smoke data = %v, want hello: world", cm.Data)
	}
	if _, err := h.Hub.Client.CoreV1().ConfigMaps("default").Get(ctx, "smoke", metav1.GetOptions{}); err == nil {
		t.Fatalf("ConfigMap default/smoke landed on the hub, want only the spoke")
	}
	t.Logf("smoke test total %s", time.Since(start).Round(time.Second))
}
