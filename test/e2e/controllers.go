//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// StandInControllers play controllers that cannot run here, for the kinds named when they start:
//   - Deployment, on the spoke: kube-controller-manager with a kubelet (no node runs pods here;
//     the harness runs the credentials and agent Deployments' containers itself);
//   - ExternalSecret, on the hub: External Secrets Operator with the platform's hub store
//     (spokeforge-hub), whose AWS account the hub suite does not model. The spoke runs the real
//     External Secrets Operator (SpokeControllers). For a key the harness put in the stand-in's
//     store (Serve), it writes the target Secret as ESO would: the ExternalSecret's
//     target.template executed over the key's data; for any other key the harness wrote the
//     Secret itself (Hub.RegisterSpokeAs) and the stand-in writes only the status.
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
	// store is the hub secret store's keys the harness serves: key -> data.
	store map[string]map[string]string
}

type standInKind struct {
	gvr    schema.GroupVersionResource
	kind   string
	status func(u *unstructured.Unstructured, now time.Time) map[string]any
	// act, when set, does the controller's work on u first; its error becomes the status.
	act func(s *StandInControllers, ctx context.Context, u *unstructured.Unstructured) error
}

// standInKinds are the kinds the stand-ins can answer for, with the status each writes.
var standInKinds = []standInKind{
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", deploymentStatus, nil},
	{schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}, "ExternalSecret", readyStatus("SecretSynced", "secret synced"), (*StandInControllers).syncTarget},
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

// Serve puts key into the stand-in hub secret store: an ExternalSecret that extracts key gets its
// target Secret made from data.
func (s *StandInControllers) Serve(key string, data map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == nil {
		s.store = map[string]map[string]string{}
	}
	s.store[key] = data
}

// syncTarget writes the target Secret of an ExternalSecret whose dataFrom extracts a key the
// store holds, as External Secrets Operator does: target.template.data executed as Go templates
// over the key's data (esoTemplateFuncs), the key's own data as well only without a template or
// with mergePolicy Merge, template.metadata's labels and annotations, an owner reference for
// creationPolicy Owner. Other ExternalSecrets are left to the harness.
func (s *StandInControllers) syncTarget(ctx context.Context, u *unstructured.Unstructured) error {
	from, _, _ := unstructured.NestedSlice(u.Object, "spec", "dataFrom")
	var data map[string]string
	for _, f := range from {
		key, _, _ := unstructured.NestedString(f.(map[string]any), "extract", "key")
		s.mu.Lock()
		d, ok := s.store[key]
		s.mu.Unlock()
		if ok {
			data = d
			break
		}
	}
	if data == nil {
		return nil
	}
	target, _, _ := unstructured.NestedMap(u.Object, "spec", "target")
	name, _, _ := unstructured.NestedString(target, "name")
	if name == "" {
		name = u.GetName()
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: u.GetNamespace()}, Data: map[string][]byte{}}
	sec.Labels, _, _ = unstructured.NestedStringMap(target, "template", "metadata", "labels")
	sec.Annotations, _, _ = unstructured.NestedStringMap(target, "template", "metadata", "annotations")
	if policy, _, _ := unstructured.NestedString(target, "creationPolicy"); policy == "" || policy == "Owner" {
		sec.OwnerReferences = []metav1.OwnerReference{{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), UID: u.GetUID(), Controller: ptr.To(true)}}
	}
	tpl, found, _ := unstructured.NestedStringMap(target, "template", "data")
	merge, _, _ := unstructured.NestedString(target, "template", "mergePolicy")
	if !found || merge == "Merge" {
		for k, v := range data {
			sec.Data[k] = []byte(v)
		}
	}
	for k, text := range tpl {
		t, err := template.New(k).Option("missingkey=error").Funcs(esoTemplateFuncs()).Parse(text)
		if err != nil {
			return fmt.Errorf("template %s: %w", k, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return fmt.Errorf("template %s: %w", k, err)
		}
		sec.Data[k] = b.Bytes()
	}
	secrets := s.c.Client.CoreV1().Secrets(sec.Namespace)
	have, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{FieldManager: "spokeforge-e2e-stand-in"})
		return err
	}
	if err != nil {
		return err
	}
	if reflect.DeepEqual(have.Data, sec.Data) && reflect.DeepEqual(have.Labels, sec.Labels) {
		return nil
	}
	have.Data, have.Labels, have.Annotations, have.OwnerReferences = sec.Data, sec.Labels, sec.Annotations, sec.OwnerReferences
	_, err = secrets.Update(ctx, have, metav1.UpdateOptions{FieldManager: "spokeforge-e2e-stand-in"})
	return err
}

// esoTemplateFuncs are the functions of External Secrets Operator's template engine v2
// (pkg/template/v2 in v0.16.2): sprig's text functions less env and expandenv, and ESO's own
// PEM, PKCS#12 and JWK helpers, which spokeforge's templates do not call and the stand-in leaves
// out. ESO's package is not imported: it would bring every provider SDK into this module.
func esoTemplateFuncs() template.FuncMap {
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	return funcs
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
			if k.act != nil {
				if err := k.act(s, ctx, u); err != nil {
					want = map[string]any{"conditions": []any{condition("Ready", "False", "SecretSyncedError", err.Error(), now)}}
				}
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

func readyStatus(reason, message string) func(*unstructured.Unstructured, time.Time) map[string]any {
	return func(u *unstructured.Unstructured, now time.Time) map[string]any {
		return map[string]any{"conditions": []any{condition("Ready", "True", reason, message, now)}}
	}
}
