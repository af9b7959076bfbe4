package generator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ApplicationsResource is Argo CD's Application resource.
var ApplicationsResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// ClusterSecretSelector selects Argo CD cluster Secrets.
const ClusterSecretSelector = "argocd.argoproj.io/secret-type=cluster"

const byClusterName = "clusterName"

// KubeHub watches the hub's Argo CD cluster Secrets and Applications in one
// namespace. The caches keep only what placement reads: a cluster Secret's
// name field (never its credentials), an Application's destination and
// health.
type KubeHub struct {
	ns       string
	kc       kubernetes.Interface
	secrets  cache.SharedIndexInformer
	apps     cache.SharedIndexInformer
	interval time.Duration
	log      *slog.Logger

	version atomic.Uint64 // bumped by every change placement can see

	mu       sync.Mutex
	probeErr error
	watchErr error
}

// NewKubeHub builds the informers; Run starts them. probeInterval is how
// often the API server is checked to be reachable.
func NewKubeHub(kc kubernetes.Interface, dc dynamic.Interface, namespace string, probeInterval time.Duration, log *slog.Logger) (*KubeHub, error) {
	h := &KubeHub{ns: namespace, kc: kc, interval: probeInterval, log: log}
	sf := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ClusterSecretSelector }))
	h.secrets = sf.Core().V1().Secrets().Informer()
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, namespace, nil)
	h.apps = df.ForResource(ApplicationsResource).Informer()
	if err := h.secrets.SetTransform(stripSecret); err != nil {
		return nil, err
	}
	if err := h.apps.SetTransform(stripApplication); err != nil {
		return nil, err
	}
	if err := h.secrets.AddIndexers(cache.Indexers{byClusterName: func(obj any) ([]string, error) {
		if s, ok := obj.(*corev1.Secret); ok && len(s.Data["name"]) > 0 {
			return []string{string(s.Data["name"])}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	// Handlers run after the store holds the change, so a Version read
	// before reading the store never hides a change from a Placement.
	bump := func(relevant func(old, new any) bool) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { h.version.Add(1) },
			DeleteFunc: func(any) { h.version.Add(1) },
			UpdateFunc: func(old, new any) {
				if relevant(old, new) {
					h.version.Add(1)
				}
			},
		}
	}
	if _, err := h.secrets.AddEventHandler(bump(func(old, new any) bool {
		o, _ := old.(*corev1.Secret)
		n, _ := new.(*corev1.Secret)
		return o == nil || n == nil || string(o.Data["name"]) != string(n.Data["name"])
	})); err != nil {
		return nil, err
	}
	if _, err := h.apps.AddEventHandler(bump(func(old, new any) bool {
		o, _ := old.(*unstructured.Unstructured)
		n, _ := new.(*unstructured.Unstructured)
		return o == nil || n == nil || appView(o) != appView(n)
	})); err != nil {
		return nil, err
	}
	for name, inf := range map[string]cache.SharedIndexInformer{"cluster Secrets": h.secrets, "Applications": h.apps} {
		if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return // routine: the reflector relists
			}
			h.mu.Lock()
			h.watchErr = fmt.Errorf("watching %s: %w", name, err)
			h.mu.Unlock()
			log.Warn("hub watch failed", "what", name, "error", err.Error())
		}); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// stripSecret keeps a cluster Secret's metadata and its name field.
func stripSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	out := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion, UID: s.UID}}
	if n, ok := s.Data["name"]; ok {
		out.Data = map[string][]byte{"name": n}
	}
	return out, nil
}

// stripApplication keeps an Application's name, destination and health.
func stripApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := identityOf(u)
	for _, f := range [][]string{{"spec", "destination", "name"}, {"spec", "destination", "server"}, {"status", "health", "status"}} {
		if v, ok, _ := unstructured.NestedString(u.Object, f...); ok {
			_ = unstructured.SetNestedField(out.Object, v, f...)
		}
	}
	return out, nil
}

// identityOf is u's type, name, namespace, version and uid alone: what an
// informer's stripped object keeps of its metadata.
func identityOf(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetUID(u.GetUID())
	return out
}

// Run starts the informers and the API probe until ctx ends.
func (h *KubeHub) Run(ctx context.Context) {
	go h.secrets.Run(ctx.Done())
	go h.apps.Run(ctx.Done())
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe lists at most one cluster Secret: the API server answers and we may read.
func (h *KubeHub) probe(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := h.kc.CoreV1().Secrets(h.ns).List(pctx, metav1.ListOptions{LabelSelector: ClusterSecretSelector, Limit: 1})
	h.mu.Lock()
	prev := h.probeErr
	if err != nil {
		h.probeErr = fmt.Errorf("hub API server: %w", err)
	} else {
		h.probeErr, h.watchErr = nil, nil
	}
	h.mu.Unlock()
	switch {
	case err != nil && prev == nil:
		h.log.Warn("hub API server unreachable; kind zones answers 503", "error", err.Error())
	case err == nil && prev != nil:
		h.log.Info("hub API server reachable again")
	}
}

// WaitForSync blocks until both caches are synced or ctx ends.
func (h *KubeHub) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), h.secrets.HasSynced, h.apps.HasSynced)
}

// Synced implements Hub.
func (h *KubeHub) Synced() bool { return h.secrets.HasSynced() && h.apps.HasSynced() }

// Version implements Hub.
func (h *KubeHub) Version() uint64 { return h.version.Load() }

// Ready implements Hub.
func (h *KubeHub) Ready() error {
	if !h.Synced() {
		return errors.New("hub informers (cluster Secrets, Applications) not synced yet")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.probeErr != nil {
		return h.probeErr
	}
	return h.watchErr
}

// ClusterSecret implements Hub.
func (h *KubeHub) ClusterSecret(cluster string) bool {
	objs, err := h.secrets.GetIndexer().ByIndex(byClusterName, cluster)
	return err == nil && len(objs) > 0
}

// Application implements Hub.
func (h *KubeHub) Application(name string) (App, bool) {
	obj, ok, err := h.apps.GetStore().GetByKey(h.ns + "/" + name)
	if err != nil || !ok {
		return App{}, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return App{}, false
	}
	return appView(u), true
}

// appView is what placement reads of an Application.
func appView(u *unstructured.Unstructured) App {
	var a App
	a.Destination.Name, _, _ = unstructured.NestedString(u.Object, "spec", "destination", "name")
	a.Destination.Server, _, _ = unstructured.NestedString(u.Object, "spec", "destination", "server")
	a.Health, _, _ = unstructured.NestedString(u.Object, "status", "health", "status")
	return a
}
