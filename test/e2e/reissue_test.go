//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReissueCertificate: a workload Certificate on the spoke is stuck in a failed issuance
// that cert-manager backs off from; Argo CD offers the reissue action on it, `argocd app
// actions run … reissue` re-triggers issuance as `cmctl renew` does, the stand-in cert-manager
// sees the re-trigger and issues, and the Certificate's existing Secret is never deleted.
func TestReissueCertificate(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	standIns := StartStandInControllers(ctx, h.Spoke)
	files, err := RepoFiles(filepath.Join(h.opts.RepoRoot, ExampleRepo))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := h.NewGitRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	const ns, cert = "inference", "inference-serving"
	// The certificate's Secret from an earlier, successful issuance.
	if err := h.Spoke.ensureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	secret, err := h.Spoke.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: cert + "-tls", Namespace: ns},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": []byte("earlier certificate"), "tls.key": []byte("earlier key")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	standIns.FailIssuance(ns, cert, "The CertificateRequest was denied by an approval controller")
	if _, err := h.Hub.Apply(ctx, SpokeApplication(exampleSpokeApp, repo.URL, exampleSpokeDir)); err != nil {
		t.Fatal(err)
	}
	// The sync stops at the certificates wave: the failed Certificate is Degraded.
	if _, err := h.ArgoCD(ctx, "app", "sync", exampleSpokeApp, "--async"); err != nil {
		t.Fatal(err)
	}
	msg, err := waitResourceHealth(ctx, h, exampleSpokeApp, "Certificate", cert, "Degraded", 4*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "cmctl renew") {
		t.Fatalf("the Certificate health does not say how to retry: %q", msg)
	}
	out, err := h.ArgoCD(ctx, "app", "actions", "list", exampleSpokeApp, "--kind", "Certificate", "--namespace", ns, "--resource-name", cert)
	if err != nil || !strings.Contains(out, "reissue") {
		t.Fatalf("argocd app actions list does not offer reissue: %v\n%s", err, out)
	}
	started := time.Now()
	if out, err := h.ArgoCD(ctx, "app", "actions", "run", exampleSpokeApp, "reissue", "--kind", "Certificate", "--namespace", ns, "--resource-name", cert); err != nil {
		t.Fatalf("argocd app actions run reissue: %v\n%s", err, out)
	}
	if _, err := waitResourceHealth(ctx, h, exampleSpokeApp, "Certificate", cert, "Healthy", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	if standIns.Reissued() != 1 {
		t.Fatalf("the stand-in cert-manager saw %d manual re-triggers, want 1", standIns.Reissued())
	}
	t.Logf("reissue -> Certificate Healthy in %s", time.Since(started).Round(time.Millisecond))
	after, err := h.Spoke.Client.CoreV1().Secrets(ns).Get(ctx, cert+"-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Certificate's Secret is gone: %v", err)
	}
	if after.UID != secret.UID || after.DeletionTimestamp != nil {
		t.Fatalf("the Certificate's Secret was replaced or is being deleted")
	}
	// With nothing more held, the running sync goes on through the later waves.
	if out, err := h.ArgoCD(ctx, "app", "wait", exampleSpokeApp, "--operation", "--timeout", "300"); err != nil {
		t.Fatalf("the sync did not finish after the reissue: %v\n%s", err, out)
	}
	if _, err := h.WaitApp(ctx, exampleSpokeApp, "Synced", 2*time.Minute, func(s AppState) bool { return s.Sync == "Synced" }); err != nil {
		t.Fatal(err)
	}
}

// waitResourceHealth polls the Application until Argo CD reports resource kind/name with
// health want, and returns its message.
func waitResourceHealth(ctx context.Context, h *Hub, app, kind, name, want string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	last := "not seen"
	for time.Now().Before(deadline) {
		out, err := h.ArgoCD(ctx, "app", "get", app, "-o", "json", "--refresh")
		if err == nil {
			var a struct {
				Status struct {
					Resources []struct {
						Kind, Name string
						Health     *struct{ Status, Message string }
					}
				}
			}
			if json.Unmarshal([]byte(out), &a) == nil {
				for _, r := range a.Status.Resources {
					if r.Kind == kind && r.Name == name && r.Health != nil {
						last = r.Health.Status + ": " + r.Health.Message
						if r.Health.Status == want {
							return r.Health.Message, nil
						}
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return "", &waitError{what: kind + " " + name + " " + want, last: last}
}

type waitError struct{ what, last string }

func (e *waitError) Error() string { return "timed out waiting for " + e.what + "; last: " + e.last }
