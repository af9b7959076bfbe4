//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReissueCertificate: the real cert-manager's first CertificateRequest for a workload
// Certificate is denied by the approver (the harness, as approver-policy), so the Certificate is
// in a failed issuance that cert-manager backs off from (an hour); Argo CD offers the reissue
// action on it; with the denied request deleted (the Contracts hint: cert-manager fails a
// re-trigger at once while it remains), `argocd app actions run … reissue` re-triggers issuance
// as `cmctl renew` does, cert-manager issues at once (the new request approved), and the
// Certificate's existing Secret is updated, never deleted.
func TestReissueCertificate(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	spoke, err := h.StartSpoke(ctx, filepath.Join(h.opts.RepoRoot, ExampleRepo, exampleSpokeDir), SpokeOptions{ApproveManually: true})
	if err != nil {
		t.Fatal(err)
	}
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
	spoke.DenyNext(ns, cert, `[spokeforge-workload-identity: spec.dnsNames: Invalid value: "inference.example": not allowed]`)
	if _, err := h.Hub.Apply(ctx, SpokeApplication(exampleSpokeApp, repo.URL, exampleSpokeDir)); err != nil {
		t.Fatal(err)
	}
	// The sync stops at the certificates wave: the failed Certificate is Degraded.
	if _, err := h.ArgoCD(ctx, "app", "sync", exampleSpokeApp, "--async"); err != nil {
		t.Fatal(err)
	}
	synced := time.Now()
	msg, err := waitResourceHealth(ctx, h, exampleSpokeApp, "Certificate", cert, "Degraded", 4*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sync -> Certificate %s/%s Degraded in %s (cert-manager denied): %s", ns, cert, time.Since(synced).Round(time.Millisecond), msg)
	if !strings.Contains(msg, "cmctl renew") {
		t.Fatalf("the Certificate health does not say how to retry: %q", msg)
	}
	out, err := h.ArgoCD(ctx, "app", "actions", "list", exampleSpokeApp, "--kind", "Certificate", "--namespace", ns, "--resource-name", cert)
	if err != nil || !strings.Contains(out, "reissue") {
		t.Fatalf("argocd app actions list does not offer reissue: %v\n%s", err, out)
	}
	// As the Contracts hint says for a denied request: cert-manager would fail a re-trigger at once
	// on the denied request it still finds.
	if n, err := deleteDeniedRequests(ctx, h.Spoke, ns, cert); err != nil || n != 1 {
		t.Fatalf("deleted %d denied CertificateRequests of %s/%s (%v), want 1", n, ns, cert, err)
	}
	started := time.Now()
	if out, err := h.ArgoCD(ctx, "app", "actions", "run", exampleSpokeApp, "reissue", "--kind", "Certificate", "--namespace", ns, "--resource-name", cert); err != nil {
		t.Fatalf("argocd app actions run reissue: %v\n%s", err, out)
	}
	if _, err := waitResourceHealth(ctx, h, exampleSpokeApp, "Certificate", cert, "Healthy", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	if spoke.Denied() != 1 {
		t.Fatalf("the approver denied %d CertificateRequests, want 1", spoke.Denied())
	}
	t.Logf("reissue -> Certificate Healthy in %s", time.Since(started).Round(time.Millisecond))
	after, err := h.Spoke.Client.CoreV1().Secrets(ns).Get(ctx, cert+"-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Certificate's Secret is gone: %v", err)
	}
	if after.UID != secret.UID || after.DeletionTimestamp != nil {
		t.Fatalf("the Certificate's Secret was replaced or is being deleted")
	}
	if err := issuedBy(after, spoke.CA); err != nil {
		t.Fatalf("Secret %s/%s-tls after the reissue: %v", ns, cert, err)
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

// issuedBy checks that the Secret holds a certificate signed by ca.
func issuedBy(s *corev1.Secret, ca *x509.Certificate) error {
	blk, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if blk == nil {
		return fmt.Errorf("no PEM certificate in %s", corev1.TLSCertKey)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return err
	}
	return c.CheckSignatureFrom(ca)
}

// deleteDeniedRequests deletes the denied CertificateRequests of Certificate namespace/name, as
// an operator does before re-triggering it, and says how many there were.
func deleteDeniedRequests(ctx context.Context, c *Cluster, namespace, name string) (int, error) {
	list, err := c.Dynamic.Resource(certificateRequests).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		cr := &list.Items[i]
		if cr.GetAnnotations()["cert-manager.io/certificate-name"] != name || conditionStatus(cr, "Denied") != "True" {
			continue
		}
		if err := c.Dynamic.Resource(certificateRequests).Namespace(namespace).Delete(ctx, cr.GetName(), metav1.DeleteOptions{}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
