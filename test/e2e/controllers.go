//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// StandInControllers play controllers that cannot run here, for the kinds named when they start:
//   - Deployment, on the spoke: kube-controller-manager with a kubelet (no node runs pods here;
//     the harness runs the credentials and agent Deployments' containers itself);
//   - ExternalSecret, on the hub: External Secrets Operator with the platform's hub store
//     (spokeforge-hub), whose AWS account the hub suite does not model. The spoke runs the real
//     External Secrets Operator (SpokeControllers).
//
// For every such object they write the status its controller writes once its work succeeded, so
// Argo CD's health checks and sync waves see what they would see. They never create, change or
// delete an object's spec.
type StandInControllers struct {
	c     *Cluster
	kinds []standInKind
	mu    sync.Mutex
	// Written counts status writes, for the test log.
	written int
}

type standInKind struct {
	gvr    schema.GroupVersionResource
	kind   string
	status func(u *unstructured.Unstructured, now time.Time) map[string]any
}

// standInKinds are the kinds the stand-ins can answer for, with the status each writes.
var standInKinds = []standInKind{
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", deploymentStatus},
	{schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}, "ExternalSecret", readyStatus("SecretSynced", "secret synced")},
}

// StartStandInControllers runs the stand-ins for kinds (of standInKinds) against c until ctx ends.
func StartStandInControllers(ctx context.Context, c *Cluster, kinds ...string) *StandInControllers {
	s := &StandInControllers{c: c}
	for _, k := range standInKinds {
		if slices.Contains(kinds, k.kind) {
			s.kinds = append(s.kinds, k)
		}
	}
	go func() {
		t := time.NewTicker(300 * time.Millisecond)
		defer t.Stop()
		for {
			s.reconcile(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Writes returns how many status writes the stand-ins made.
func (s *StandInControllers) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

func (s *StandInControllers) reconcile(ctx context.Context) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, k := range s.kinds {
		list, err := s.c.Dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // CRD not installed, or the API server is restarting
		}
		for i := range list.Items {
			u := &list.Items[i]
			want := k.status(u, now)
			if sameStatus(u, want) {
				continue
			}
			u.Object["status"] = want
			var ri interface {
				UpdateStatus(context.Context, *unstructured.Unstructured, metav1.UpdateOptions) (*unstructured.Unstructured, error)
			}
			if ns := u.GetNamespace(); ns != "" {
				ri = s.c.Dynamic.Resource(k.gvr).Namespace(ns)
			} else {
				ri = s.c.Dynamic.Resource(k.gvr)
			}
			// A conflict or a deleted object is retried on the next tick.
			if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "spokeforge-e2e-stand-in"}); err == nil {
				s.mu.Lock()
				s.written++
				s.mu.Unlock()
			}
		}
	}
}

// sameStatus compares what matters for health, ignoring timestamps, so the stand-ins write
// once per change and not on every tick.
func sameStatus(u *unstructured.Unstructured, want map[string]any) bool {
	have, _, _ := unstructured.NestedMap(u.Object, "status")
	return fmt.Sprint(stripTimes(have)) == fmt.Sprint(stripTimes(want))
}

func stripTimes(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "lastTransitionTime", "lastUpdateTime", "notBefore", "notAfter", "renewalTime", "refreshTime":
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			out[k] = stripTimes(x)
		case []any:
			items := make([]any, len(x))
			for i, it := range x {
				if im, ok := it.(map[string]any); ok {
					items[i] = stripTimes(im)
				} else {
					items[i] = it
				}
			}
			out[k] = items
		default:
			out[k] = fmt.Sprint(v) // int64 from the server, int from us
		}
	}
	return out
}

func condition(typ, status, reason, message string, now time.Time) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": now.Format(time.RFC3339)}
}

// deploymentStatus is what the Deployment controller writes once every replica is available.
func deploymentStatus(u *unstructured.Unstructured, now time.Time) map[string]any {
	replicas, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	return map[string]any{
		"observedGeneration": u.GetGeneration(),
		"replicas":           replicas, "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
		"conditions": []any{
			condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", now),
			condition("Progressing", "True", "NewReplicaSetAvailable", "ReplicaSet has successfully progressed.", now),
		},
	}
}

func readyStatus(reason, message string) func(*unstructured.Unstructured, time.Time) map[string]any {
	return func(u *unstructured.Unstructured, now time.Time) map[string]any {
		return map[string]any{"conditions": []any{condition("Ready", "True", reason, message, now)}}
	}
}
