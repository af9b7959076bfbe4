package generator

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func application(name, destName, health string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd"},
		"spec":     map[string]any{"destination": map[string]any{"name": destName, "namespace": "x"}, "project": "default"},
		"status":   map[string]any{"health": map[string]any{"status": health}, "sync": map[string]any{"status": "Synced"}},
	}}
	return u
}

func TestKubeHub(t *testing.T) {
	kc := kubefake.NewSimpleClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-gpu-east-1", Namespace: "argocd",
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			Data: map[string][]byte{"name": []byte("gpu-east-1"), "server": []byte("https://10.0.0.1"), "config": []byte(`{"bearerToken":"s3cr3t"}`)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-a-cluster", Namespace: "argocd"},
			Data: map[string][]byte{"name": []byte("gpu-west-2")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other",
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			Data: map[string][]byte{"name": []byte("hub-local")}},
	)
	scheme := runtime.NewScheme()
	dc := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{ApplicationsResource: "ApplicationList"},
		application("spoke-gpu-east-1", "gpu-east-1", "Healthy"))
	var probeFail atomic.Bool
	kc.PrependReactor("list", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if probeFail.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	h, err := NewKubeHub(kc, dc, "argocd", 20*time.Millisecond, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Ready(); err == nil {
		t.Fatal("ready before the informers ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	if !h.WaitForSync(ctx) {
		t.Fatal("no sync")
	}
	waitFor(t, func() bool { return h.Ready() == nil })
	if !h.ClusterSecret("gpu-east-1") {
		t.Error("cluster Secret for gpu-east-1 not found")
	}
	if h.ClusterSecret("gpu-west-2") || h.ClusterSecret("hub-local") {
		t.Error("an unlabelled Secret or one in another namespace counts as a cluster Secret")
	}
	for _, obj := range h.secrets.GetStore().List() {
		s := obj.(*corev1.Secret)
		if _, ok := s.Data["config"]; ok || len(s.Data) > 1 {
			t.Errorf("the cache holds Secret data beyond name: %v", s.Data)
		}
	}
	a, ok := h.Application("spoke-gpu-east-1")
	if !ok || a.Health != "Healthy" || a.Destination != (Destination{Name: "gpu-east-1"}) {
		t.Errorf("Application = %+v %v", a, ok)
	}
	if _, ok := h.Application("spoke-nope"); ok {
		t.Error("a missing Application was found")
	}
	// An Application appears: the informer sees it.
	if _, err := dc.Resource(ApplicationsResource).Namespace("argocd").Create(ctx, application("product-z", "gpu-east-1", "Progressing"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { a, ok := h.Application("product-z"); return ok && a.Health == "Progressing" })
	// The API server goes away: Ready says so.
	probeFail.Store(true)
	waitFor(t, func() bool {
		err := h.Ready()
		return err != nil && strings.Contains(err.Error(), "connection refused")
	})
	probeFail.Store(false)
	waitFor(t, func() bool { return h.Ready() == nil })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
