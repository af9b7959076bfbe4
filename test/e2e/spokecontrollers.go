//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The spoke's real controllers and the infrastructure around them.
//
// cert-manager v1.19.4 (test/e2e/tools/cert-manager-v1.19) and External Secrets Operator v0.16.2
// (test/e2e/tools/external-secrets-v0.16) run as processes against the spoke's API server, built
// by hack/e2e/install.sh. Neither has its webhook. The harness plays what a real spoke's
// infrastructure and kubelet do around them:
//   - the platform's CA: a Secret in kube-system and the ClusterIssuer the record names
//     (spokeforge-ca); the fake AWS account's trust anchor holds the same CA;
//   - the kubelet's Secret volumes: the workload-identity Secret cert-manager writes is copied
//     into files, as the credentials and agent Deployments mount it;
//   - the credentials Deployment: `spokeforge credentials` runs with the live Deployment's
//     arguments (only the mount path and the Roles Anywhere endpoint differ) and impersonates its
//     ServiceAccount, so the rendered Role is what lets it write the Secret ESO reads;
//   - optionally approver-policy: with ApproveManually cert-manager runs without its internal
//     approver, and the harness approves each CertificateRequest, or denies one (DenyNext).

const (
	// IssuerName is the ClusterIssuer the example records name (spec.identity.issuer.name).
	IssuerName = "spokeforge-ca"
	// IdentitySecret is the Secret cert-manager writes the workload certificate into.
	IdentitySecret      = "workload-identity-tls"
	credentialsDeploy   = "spokeforge-credentials"
	spokeforgeNamespace = "spokeforge-system"
	// approverPolicyReason is the condition reason approver-policy sets when it decides.
	approverPolicyReason = "policy.cert-manager.io"
)

// SpokeControllerOptions configure StartSpokeControllers.
type SpokeControllerOptions struct {
	// AWSURL is the fake AWS account: Roles Anywhere for the credentials helper, Secrets Manager
	// and ECR for ESO.
	AWSURL string
	// ApproveManually runs cert-manager without its internal approver; the harness approves.
	ApproveManually bool
	// Cluster is the spoke they run against; default the hub's spoke (Hub.Spoke).
	Cluster *Cluster
}

// SpokeControllers are the spoke's cert-manager and External Secrets Operator.
type SpokeControllers struct {
	CA *x509.Certificate // the ClusterIssuer's CA; the trust anchor must hold it
	// CAFile is CA's PEM, for fakeaws --trust-anchor-ca.
	CAFile string
	// IdentityDir holds tls.crt and tls.key of the workload-identity Secret, kept current.
	IdentityDir string

	CertManager, ExternalSecrets *Process

	h    *Hub
	c    *Cluster
	opts SpokeControllerOptions

	mu          sync.Mutex
	deny        map[string]string // Certificate namespace/name -> denial message for its next request
	decided     map[string]bool   // CertificateRequests the harness approved or denied
	denied      int
	credentials *Process
}

var certificateRequests = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificaterequests"}

// StartSpokeControllers creates the CA and its ClusterIssuer on the spoke, starts cert-manager
// and External Secrets Operator, and plays the kubelet for the workload-identity Secret and the
// credentials Deployment until ctx ends.
func (h *Hub) StartSpokeControllers(ctx context.Context, o SpokeControllerOptions) (*SpokeControllers, error) {
	for _, b := range []string{"cert-manager-controller", "external-secrets"} {
		if _, err := os.Stat(h.bin(b)); err != nil {
			return nil, fmt.Errorf("%s missing in %s: %s", b, h.BinDir, installHint)
		}
	}
	c := o.Cluster
	if c == nil {
		c = h.Spoke
	}
	s := &SpokeControllers{h: h, c: c, opts: o, deny: map[string]string{}, decided: map[string]bool{},
		IdentityDir: filepath.Join(h.Dir, h.scoped(c, "identity"))}
	if err := os.MkdirAll(s.IdentityDir, 0o700); err != nil {
		return nil, err
	}
	if err := s.createIssuer(ctx); err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig", c.Kubeconfig, "--v=2"}
	if o.ApproveManually {
		args = append(args, "--controllers=*,-certificaterequests-approver")
	}
	var err error
	if s.CertManager, err = h.run(procSpec{name: h.scoped(c, "cert-manager"), path: h.bin("cert-manager-controller"), args: args}); err != nil {
		return nil, err
	}
	// ESO reads its kubeconfig from KUBECONFIG (its cobra root does not expose --kubeconfig). The
	// metrics listener is off: parallel hubs would fight over its fixed port (its webhook server is
	// configured but never started by the root command).
	if s.ExternalSecrets, err = h.run(procSpec{name: h.scoped(c, "external-secrets"), path: h.bin("external-secrets"),
		args: []string{"--metrics-addr=0", "--loglevel=debug", "--concurrent=2",
			"--enable-push-secret-reconciler=false", "--enable-cluster-push-secret-reconciler=false",
			"--enable-cluster-external-secret-reconciler=false"},
		env: []string{"KUBECONFIG=" + c.Kubeconfig, "AWS_SECRETSMANAGER_ENDPOINT=" + o.AWSURL,
			"AWS_STS_ENDPOINT=" + o.AWSURL, "AWS_ECR_ENDPOINT=" + o.AWSURL, "AWS_EC2_METADATA_DISABLED=true",
			"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
			// AWS SDK v1 refuses a custom CA bundle unless the HTTP client's transport is an
			// *http.Transport, which the ECR redirect is not; the fake speaks plain HTTP anyway.
			"AWS_CA_BUNDLE="}}); err != nil {
		return nil, err
	}
	// cert-manager marks the ClusterIssuer Ready once it has read the CA: the controller is up.
	if err := waitFor(ctx, s.CertManager, "ClusterIssuer "+IssuerName+" Ready", 2*time.Minute, func(ctx context.Context) error {
		u, err := c.Get(ctx, "cert-manager.io/v1", "ClusterIssuer", "", IssuerName)
		if err != nil {
			return err
		}
		if st := conditionStatus(u, "Ready"); st != "True" {
			return fmt.Errorf("Ready=%q", st)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	go s.kubelet(ctx)
	if o.ApproveManually {
		go s.approver(ctx)
	}
	return s, nil
}

// createIssuer makes the platform's CA: an ECDSA root in Secret kube-system/spokeforge-ca
// (cert-manager's cluster resource namespace) and the CA ClusterIssuer that signs with it.
func (s *SpokeControllers) createIssuer(ctx context.Context) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "spokeforge e2e platform CA", Organization: []string{"spokeforge e2e"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if s.CA, err = x509.ParseCertificate(der); err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	crtPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	s.CAFile = filepath.Join(s.h.Dir, s.h.scoped(s.c, "platform-ca")+".crt")
	if err := os.WriteFile(s.CAFile, crtPEM, 0o600); err != nil {
		return err
	}
	_, err = s.c.Client.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: IssuerName, Namespace: "kube-system"},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crtPEM, "ca.crt": crtPEM,
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("CA Secret: %w", err)
	}
	_, err = s.c.Apply(ctx, `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata:
  name: `+IssuerName+`
spec:
  ca:
    secretName: `+IssuerName+`
`)
	return err
}

// DenyNext makes the harness deny the next CertificateRequest of Certificate namespace/name
// as approver-policy does when no policy approves it (needs ApproveManually).
func (s *SpokeControllers) DenyNext(namespace, name, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deny[namespace+"/"+name] = message
}

// Denied reports how many CertificateRequests the harness denied.
func (s *SpokeControllers) Denied() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denied
}

// approver plays approver-policy: every undecided CertificateRequest is approved, unless its
// Certificate is marked by DenyNext.
func (s *SpokeControllers) approver(ctx context.Context) {
	for ctx.Err() == nil {
		list, err := s.c.Dynamic.Resource(certificateRequests).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				s.decide(ctx, &list.Items[i])
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (s *SpokeControllers) decide(ctx context.Context, cr *unstructured.Unstructured) {
	key := cr.GetNamespace() + "/" + cr.GetName()
	if conditionStatus(cr, "Approved") != "" || conditionStatus(cr, "Denied") != "" {
		return
	}
	owner := cr.GetAnnotations()["cert-manager.io/certificate-name"]
	s.mu.Lock()
	msg, deny := s.deny[cr.GetNamespace()+"/"+owner]
	decided := s.decided[key+"/"+string(cr.GetUID())]
	s.mu.Unlock()
	if decided {
		return
	}
	typ, message := "Approved", "Approved by CertificateRequestPolicy: \"spokeforge-workload-identity\""
	if deny {
		typ, message = "Denied", "No policy approved this request: "+msg
	}
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	conds = append(conds, map[string]any{"type": typ, "status": "True", "reason": approverPolicyReason,
		"message": message, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
	if err := unstructured.SetNestedSlice(cr.Object, conds, "status", "conditions"); err != nil {
		return
	}
	if _, err := s.c.Dynamic.Resource(certificateRequests).Namespace(cr.GetNamespace()).UpdateStatus(ctx, cr,
		metav1.UpdateOptions{FieldManager: "approver-policy"}); err != nil {
		return // a conflict: decided on the next pass
	}
	s.mu.Lock()
	s.decided[key+"/"+string(cr.GetUID())] = true
	if deny {
		delete(s.deny, cr.GetNamespace()+"/"+owner)
		s.denied++
	}
	s.mu.Unlock()
}

// kubelet keeps IdentityDir equal to the workload-identity Secret, and runs the credentials
// Deployment's container once the Secret and the Deployment exist.
func (s *SpokeControllers) kubelet(ctx context.Context) {
	var have []byte
	for ctx.Err() == nil {
		sec, err := s.c.Client.CoreV1().Secrets(spokeforgeNamespace).Get(ctx, IdentitySecret, metav1.GetOptions{})
		if err == nil && len(sec.Data[corev1.TLSCertKey]) > 0 && !bytes.Equal(sec.Data[corev1.TLSCertKey], have) {
			if err := s.mount(sec); err == nil {
				have = sec.Data[corev1.TLSCertKey]
			}
		}
		if have != nil && s.credentialsProcess() == nil {
			if p, err := s.startCredentials(ctx); err == nil {
				s.mu.Lock()
				s.credentials = p
				s.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// mount writes the Secret's keys as files, each replaced whole (key first, so a reader never
// pairs a new certificate with an old key for longer than one write).
func (s *SpokeControllers) mount(sec *corev1.Secret) error {
	for _, k := range []string{corev1.TLSPrivateKeyKey, corev1.TLSCertKey, "ca.crt"} {
		v, ok := sec.Data[k]
		if !ok {
			continue
		}
		tmp := filepath.Join(s.IdentityDir, "."+k+".tmp")
		if err := os.WriteFile(tmp, v, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(s.IdentityDir, k)); err != nil {
			return err
		}
	}
	return nil
}

func (s *SpokeControllers) credentialsProcess() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.credentials == nil {
		return nil
	}
	if exited, _ := s.credentials.Exited(); exited {
		return nil
	}
	return s.credentials
}

// startCredentials runs the credentials Deployment's container as the kubelet would: its args,
// its ServiceAccount, its Secret volume at IdentityDir, and the fake Roles Anywhere endpoint.
func (s *SpokeControllers) startCredentials(ctx context.Context) (*Process, error) {
	d, err := s.c.Client.AppsV1().Deployments(spokeforgeNamespace).Get(ctx, credentialsDeploy, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		return nil, fmt.Errorf("deployment %s has %d containers", credentialsDeploy, len(pod.Containers))
	}
	mounts := map[string]string{} // mount path -> Secret name
	for _, vm := range pod.Containers[0].VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.Secret != nil {
				mounts[vm.MountPath] = v.Secret.SecretName
			}
		}
	}
	var args []string
	for _, a := range pod.Containers[0].Args {
		for path, secret := range mounts {
			if secret == IdentitySecret && strings.Contains(a, path+"/") {
				a = strings.ReplaceAll(a, path+"/", s.IdentityDir+"/")
			}
		}
		args = append(args, a)
	}
	sa := "system:serviceaccount:" + spokeforgeNamespace + ":" + pod.ServiceAccountName
	kubeconfig, err := impersonatingKubeconfigAt(s.c, sa, filepath.Join(s.h.Dir, s.h.scoped(s.c, "credentials")+".kubeconfig"))
	if err != nil {
		return nil, err
	}
	args = append(args, "--endpoint="+s.opts.AWSURL, "--kubeconfig="+kubeconfig, "--retry-max=10s")
	return s.h.run(procSpec{name: s.h.scoped(s.c, "spokeforge-credentials"), path: s.h.Spokeforge, args: args,
		env: []string{"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}})
}

// IdentityFiles are the workload certificate and key as the kubelet mounts them, once issued.
func (s *SpokeControllers) IdentityFiles(ctx context.Context) (crt, key string, err error) {
	crt, key = filepath.Join(s.IdentityDir, corev1.TLSCertKey), filepath.Join(s.IdentityDir, corev1.TLSPrivateKeyKey)
	err = waitFor(ctx, s.CertManager, "the workload-identity certificate", 3*time.Minute, func(context.Context) error {
		_, err := os.Stat(crt)
		return err
	})
	return crt, key, err
}

// conditionStatus is the status of condition typ of u, "" when absent.
func conditionStatus(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
