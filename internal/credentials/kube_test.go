package credentials

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	helper "github.com/aws/rolesanywhere-credential-helper/aws_signing_helper"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The REST Secret client against a fake API server: Store creates the Secret when it is
// missing (GET 404 → POST) and updates it when present (GET → PUT), on the core/v1 paths.
func TestSecretClientStore(t *testing.T) {
	var mu sync.Mutex
	var stored *corev1.Secret
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/spokeforge-system/secrets/aws-credentials":
			if stored == nil {
				w.WriteHeader(http.StatusNotFound)
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
					Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
					Details: &metav1.StatusDetails{Name: "aws-credentials", Kind: "secrets"}})
				return
			}
			_ = json.NewEncoder(w).Encode(stored)
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces/spokeforge-system/secrets",
			r.Method == http.MethodPut && r.URL.Path == "/api/v1/namespaces/spokeforge-system/secrets/aws-credentials":
			b, _ := io.ReadAll(r.Body)
			s := &corev1.Secret{}
			if err := json.Unmarshal(b, s); err != nil {
				t.Errorf("%s body: %v", r.Method, err)
			}
			s.ResourceVersion = "1"
			stored = s
			_ = json.NewEncoder(w).Encode(s)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	clients := func(ns string) (SecretClient, error) { return NewSecretClient(&rest.Config{Host: srv.URL}, ns) }
	o := Options{Secrets: []SecretRef{{"spokeforge-system", "aws-credentials"}}}
	for _, key := range []string{"AKIAFIRST", "AKIASECOND"} {
		c := helper.CredentialProcessOutput{AccessKeyId: key, SecretAccessKey: "s", SessionToken: "t", Expiration: "2026-12-02T14:00:00Z"}
		if err := Store(context.Background(), clients, o, c); err != nil {
			t.Fatal(err)
		}
		if got := string(stored.Data[KeyAccessKeyID]); got != key {
			t.Errorf("stored access key %q, want %q", got, key)
		}
	}
	if stored.Labels["app.kubernetes.io/managed-by"] != "spokeforge" {
		t.Errorf("labels %v", stored.Labels)
	}
	want := []string{
		"GET /api/v1/namespaces/spokeforge-system/secrets/aws-credentials", "POST /api/v1/namespaces/spokeforge-system/secrets",
		"GET /api/v1/namespaces/spokeforge-system/secrets/aws-credentials", "PUT /api/v1/namespaces/spokeforge-system/secrets/aws-credentials",
	}
	if len(calls) != len(want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("call %d = %s, want %s", i, calls[i], want[i])
		}
	}
}
