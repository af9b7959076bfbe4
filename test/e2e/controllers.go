//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// StandInControllers play, on the spoke, the controllers a real spoke runs and the harness
// does not: kube-controller-manager with a kubelet (Deployments), cert-manager
// (Certificates) and External Secrets Operator (ExternalSecrets, ClusterSecretStores). For
// every such object they write the status its controller writes once its work succeeded, so
// Argo CD's health checks and sync waves see what they would see on a working spoke. They
// never create, change or delete an object's spec, and never touch spokeforge's own
// Onboarding: its status comes from the spokeforge agent.
//
// Hold keeps an object from becoming ready, to play a controller whose work fails.
// FailIssuance plays cert-manager after a failed issuance that it backs off from, until the
// Certificate is re-triggered as `cmctl renew` does (Issuing=True, ManuallyTriggered).
type StandInControllers struct {
	c    *Cluster
	mu   sync.Mutex
	hold map[string]string // "Kind/namespace/name" -> message
	// failed: Certificates ("namespace/name") in a failed, backed-off issuance.
	failed map[string]failedIssuance
	// Reissued counts Certificates issued after a manual re-trigger.
	reissued int
	// Written counts status writes, for the test log.
	written int
}

// standInKinds are the kinds the stand-ins answer for, with the status each writes.
var standInKinds = []struct {
	gvr    schema.GroupVersionResource
	kind   string
	status func(u *unstructured.Unstructured, now time.Time) map[string]any
}{
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", deploymentStatus},
	{schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}, "Certificate", certificateStatus},
	{schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}, "ExternalSecret", readyStatus("SecretSynced", "secret synced")},
	{schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}, "ClusterSecretStore", readyStatus("Valid", "store validated")},
}

// StartStandInControllers runs the stand-ins against c until ctx ends.
func StartStandInControllers(ctx context.Context, c *Cluster) *StandInControllers {
	s := &StandInControllers{c: c, hold: map[string]string{}, failed: map[string]failedIssuance{}}
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

// Hold keeps kind namespace/name not ready (Ready=False with message; a Deployment with no
// available replica) until Release.
func (s *StandInControllers) Hold(kind, namespace, name, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold[kind+"/"+namespace+"/"+name] = message
}

// Release lets a held object become ready.
func (s *StandInControllers) Release(kind, namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.hold, kind+"/"+namespace+"/"+name)
}

// FailIssuance puts Certificate namespace/name in a failed issuance that cert-manager backs
// off from: Ready=False, Issuing=False (Failed), one failed attempt, lastFailureTime now.
func (s *StandInControllers) FailIssuance(namespace, name, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed[namespace+"/"+name] = failedIssuance{message, time.Now().UTC().Truncate(time.Second)}
}

type failedIssuance struct {
	message string
	at      time.Time
}

// Reissued returns how many failed Certificates were issued after a manual re-trigger.
func (s *StandInControllers) Reissued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reissued
}

// Writes returns how many status writes the stand-ins made.
func (s *StandInControllers) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

func (s *StandInControllers) reconcile(ctx context.Context) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, k := range standInKinds {
		list, err := s.c.Dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // CRD not installed, or the API server is restarting
		}
		for i := range list.Items {
			u := &list.Items[i]
			s.mu.Lock()
			msg, held := s.hold[k.kind+"/"+u.GetNamespace()+"/"+u.GetName()]
			failure, failed := s.failed[u.GetNamespace()+"/"+u.GetName()]
			if failed && k.kind == "Certificate" && manuallyTriggered(u) {
				// As cert-manager: a manual re-trigger issues now, past the backoff.
				delete(s.failed, u.GetNamespace()+"/"+u.GetName())
				s.reissued++
				failed = false
			}
			s.mu.Unlock()
			var want map[string]any
			switch {
			case held:
				want = notReadyStatus(k.kind, msg, now)
			case failed && k.kind == "Certificate":
				want = failedIssuanceStatus(failure)
			default:
				want = k.status(u, now)
			}
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

// certificateStatus is what cert-manager writes once the certificate is issued (90 days).
func certificateStatus(u *unstructured.Unstructured, now time.Time) map[string]any {
	return map[string]any{
		"conditions": []any{condition("Ready", "True", "Ready", "Certificate is up to date and has not expired", now)},
		"notBefore":  now.Format(time.RFC3339), "notAfter": now.Add(90 * 24 * time.Hour).Format(time.RFC3339),
		"renewalTime": now.Add(60 * 24 * time.Hour).Format(time.RFC3339), "revision": int64(1),
	}
}

func readyStatus(reason, message string) func(*unstructured.Unstructured, time.Time) map[string]any {
	return func(u *unstructured.Unstructured, now time.Time) map[string]any {
		return map[string]any{"conditions": []any{condition("Ready", "True", reason, message, now)}}
	}
}

// failedIssuanceStatus is what cert-manager leaves on a Certificate whose issuance failed
// and is backed off (the times are the failure's, so the stand-in writes it once).
func failedIssuanceStatus(f failedIssuance) map[string]any {
	message, at := f.message, f.at
	return map[string]any{
		"conditions": []any{
			condition("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist", at),
			condition("Issuing", "False", "Failed", "The certificate request has failed to complete and will be retried: "+message, at),
		},
		"failedIssuanceAttempts": int64(1),
		"lastFailureTime":        at.Format(time.RFC3339),
	}
}

// manuallyTriggered: the Certificate carries Issuing=True with reason ManuallyTriggered.
func manuallyTriggered(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Issuing" && m["status"] == "True" && m["reason"] == "ManuallyTriggered" {
			return true
		}
	}
	return false
}

// notReadyStatus is a held object's status: its controller tried and failed.
func notReadyStatus(kind, message string, now time.Time) map[string]any {
	if kind == "Deployment" {
		return map[string]any{"replicas": int64(1), "updatedReplicas": int64(1), "unavailableReplicas": int64(1),
			"conditions": []any{condition("Available", "False", "MinimumReplicasUnavailable", message, now)}}
	}
	return map[string]any{"conditions": []any{condition("Ready", "False", "Failed", message, now)}}
}
