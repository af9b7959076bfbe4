package credentials

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const (
	anchor  = "arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f"
	profile = "arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d"
	role    = "arn:aws:iam::111122223333:role/eue1-workload"
	secret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY"
)

// workloadCert writes a self-signed ECDSA certificate and key as cert-manager would mount them.
func workloadCert(t *testing.T) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(0x5f0e), Subject: pkix.Name{CommonName: "gpu-east-1", Organization: []string{"acme-ml"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	dir := t.TempDir()
	crt, k := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	_ = os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(k, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	return crt, k
}

// fakeRolesAnywhere speaks CreateSession: it checks the request is signed
// with the certificate (X-Amz-X509 header, AWS4-X509 signature) and answers.
func fakeRolesAnywhere(t *testing.T, calls *atomic.Int32, fail bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/sessions" || r.Header.Get("X-Amz-X509") == "" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-X509-ECDSA-SHA256") {
			http.Error(w, `{"message":"bad request"}`, 400)
			return
		}
		q := r.URL.Query() // CreateSession carries the ARNs in the query string
		if q.Get("roleArn") != role || q.Get("profileArn") != profile || q.Get("trustAnchorArn") != anchor {
			http.Error(w, `{"message":"wrong arns"}`, 400)
			return
		}
		if fail {
			w.Header().Set("x-amzn-ErrorType", "AccessDeniedException")
			w.WriteHeader(403)
			_, _ = w.Write([]byte(`{"message":"Untrusted signing certificate"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"credentialSet": []any{map[string]any{"credentials": map[string]any{
			"accessKeyId": "ASIAEXAMPLE", "secretAccessKey": secret, "sessionToken": "FwoGZXIvYXdzEXAMPLETOKEN",
			"expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}}})
	}))
}

// clients serves every namespace from one fake clientset.
func clients(kc *fake.Clientset) SecretClients {
	return func(ns string) (SecretClient, error) { return kc.CoreV1().Secrets(ns), nil }
}

func options(t *testing.T, endpoint string) Options {
	crt, key := workloadCert(t)
	return Options{Certificate: crt, PrivateKey: key, TrustAnchorArn: anchor, ProfileArn: profile, RoleArn: role,
		Region: "us-east-1", SessionDuration: time.Hour, Endpoint: endpoint,
		Secrets: []SecretRef{{"spokeforge-system", "aws-credentials"}, {"inference", "aws-credentials"}}, RefreshBefore: 15 * time.Minute, RetryMax: time.Minute}
}

func TestRefreshWritesTheSecret(t *testing.T) {
	var calls atomic.Int32
	srv := fakeRolesAnywhere(t, &calls, false)
	defer srv.Close()
	kc := fake.NewClientset()
	o := options(t, srv.URL)
	for range 2 { // create, then update: idempotent
		iss, err := RefreshOnce(context.Background(), clients(kc), o)
		if err != nil {
			t.Fatal(err)
		}
		if iss.AccessKeyID != "ASIAEXAMPLE" || time.Until(iss.Expiration) < 50*time.Minute {
			t.Fatalf("issued = %+v", iss)
		}
	}
	for _, ns := range []string{"spokeforge-system", "inference"} {
		s, err := kc.CoreV1().Secrets(ns).Get(context.Background(), "aws-credentials", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(s.Data[KeySecretAccessKey]) != secret || string(s.Data[KeySessionToken]) == "" || calls.Load() != 2 {
			t.Fatalf("%s: secret data keys %v, calls %d", ns, len(s.Data), calls.Load())
		}
	}
}

func TestRefreshFailureNamesRoleNotSecrets(t *testing.T) {
	var calls atomic.Int32
	srv := fakeRolesAnywhere(t, &calls, true)
	defer srv.Close()
	o := options(t, srv.URL)
	_, err := RefreshOnce(context.Background(), clients(fake.NewClientset()), o)
	if err == nil || !strings.Contains(err.Error(), "eue1-workload") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunLogsNoCredential(t *testing.T) {
	var calls atomic.Int32
	srv := fakeRolesAnywhere(t, &calls, false)
	defer srv.Close()
	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		o := options(t, srv.URL)
		done <- Run(ctx, clients(fake.NewClientset()), o, slog.New(slog.NewJSONHandler(&logs, nil)))
	}()
	for calls.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "credentials refreshed") || strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), "EXAMPLETOKEN") {
		t.Fatalf("logs: %s", logs.String())
	}
}
