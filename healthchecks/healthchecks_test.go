package healthchecks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/iampolicy"
)

const (
	account = "111122223333"
	region  = "us-east-1"
	role    = "arn:aws:iam::111122223333:role/eue1-workload"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func spec() v1alpha1.OnboardingSpec {
	return v1alpha1.OnboardingSpec{
		Cluster: "gpu-east-1", AccountID: account, Region: region, IAMRoleArn: role,
		TrustAnchorArn: "arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e",
		ProfileArn:     "arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d",
		SecretPath:     "acme/us-east-1/dc/eq/gpu-east-1", Boundaries: v1alpha1.Boundaries,
		Secrets:            []v1alpha1.SecretRef{{Name: "acme/us-east-1/dc/eq/gpu-east-1/hf-token", ExternalSecret: v1alpha1.ObjectRef{Namespace: "inference", Name: "hf-token"}}},
		ClusterSecretStore: "spokeforge-aws",
		Certificates:       []v1alpha1.ObjectRef{{Namespace: "spokeforge-system", Name: "workload-identity"}, {Namespace: "inference", Name: "serving"}},
		Registries:         []string{"eue1/inference"},
		RegistrySecrets:    []v1alpha1.ObjectRef{{Namespace: "inference", Name: "spokeforge-registry"}},
		Queues:             []string{"eue1-jobs", "eue1-results.fifo"},
		Buckets:            []string{"eue1-models"},
		StorageClass:       "spokeforge-local-block",
		Volumes:            []string{"gpu-east-1-0a1b2c3d4e"},
		GPUNodes:           []v1alpha1.GPUTopology{{Node: "gpu-node-01", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MIGStrategy: "none"}},
	}
}

// WorkloadCert writes a self-signed client certificate and key.
func workloadCert(t testing.TB, dir string, notAfter time.Time) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(0x5f0e), Subject: pkix.Name{CommonName: "gpu-east-1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	crt, k := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(k, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return crt, k
}

func cond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": "2026-11-30T00:00:00Z"}
}

func obj(apiVersion, kind, ns, name string, status map[string]any, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "creationTimestamp": "2026-11-30T00:00:00Z"}}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	if status != nil {
		u.Object["status"] = status
	}
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

func ready(extra map[string]any) map[string]any {
	st := map[string]any{"conditions": []any{cond("Ready", "True", "Ready", "ok")}}
	for k, v := range extra {
		st[k] = v
	}
	return st
}

// policyWithout is a permission policy that allows every call to every
// service but service, which it allows only on resource: the role's policy
// narrowed to leave the world's own resources of that service out.
func policyWithout(service, resource string) iampolicy.Document {
	var others iampolicy.Strings
	for _, s := range []string{"secretsmanager", "ecr", "sqs", "s3"} {
		if s != service {
			others = append(others, s+":*")
		}
	}
	return iampolicy.Document{Version: iampolicy.Version, Statement: []iampolicy.Statement{
		{Effect: "Allow", Action: others, Resource: iampolicy.Strings{"*"}},
		{Effect: "Allow", Action: iampolicy.Strings{service + ":*"}, Resource: iampolicy.Strings{resource}},
	}}
}

// world is a spoke and an AWS account where every contract holds; cases
// break one thing each.
type world struct {
	aws     *awsfake.Server
	kube    []runtime.Object
	dyn     map[string]*unstructured.Unstructured
	cfg     Config
	certDir string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	sp := spec()
	f := awsfake.New(account, region)
	url, err := f.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	f.AllowRole(role)
	for _, s := range sp.Secrets {
		f.AddSecret(s.Name)
	}
	for _, r := range sp.Registries {
		f.AddRepository(r)
	}
	for _, q := range sp.Queues {
		f.AddQueue(q)
	}
	for _, b := range sp.Buckets {
		if err := f.AddBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	crt, key := workloadCert(t, dir, time.Now().Add(24*time.Hour))
	wfc := storagev1.VolumeBindingWaitForFirstConsumer
	w := &world{aws: f, certDir: dir, dyn: map[string]*unstructured.Unstructured{}}
	w.kube = []runtime.Object{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: sp.StorageClass}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wfc},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: sp.Volumes[0]}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3576Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/dev/disk/by-id/nvme-1"}}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-01", Labels: map[string]string{
			"spokeforge.io/gpu.product": "NVIDIA-A100-SXM4-80GB", "spokeforge.io/gpu.count": "8", "spokeforge.io/gpu.mig-strategy": "none",
			"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{GPUResource: resource.MustParse("8")}}},
	}
	notAfter := map[string]any{"notAfter": now.Add(60 * 24 * time.Hour).Format(time.RFC3339)}
	for _, u := range []*unstructured.Unstructured{
		obj("external-secrets.io/v1", "ClusterSecretStore", "", "spokeforge-aws", ready(nil), nil),
		obj("external-secrets.io/v1", "ExternalSecret", "inference", "hf-token", ready(map[string]any{"refreshTime": "2026-12-01T11:00:00Z"}), nil),
		obj("external-secrets.io/v1", "ExternalSecret", "inference", "spokeforge-registry", ready(nil), nil),
		obj("cert-manager.io/v1", "Certificate", "spokeforge-system", "workload-identity", ready(notAfter), nil),
		obj("cert-manager.io/v1", "Certificate", "inference", "serving", ready(notAfter), nil),
	} {
		w.dyn[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
	}
	w.cfg = Config{
		Spec:        sp,
		Identity:    Identity{Certificate: crt, PrivateKey: key, Endpoint: url},
		AWS:         aws.Config{Region: region, BaseEndpoint: aws.String(url), Retryer: func() aws.Retryer { return aws.NopRetryer{} }},
		S3PathStyle: true,
		Retry:       Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond, Attempts: 3},
		CallTimeout: 5 * time.Second,
		Now:         func() time.Time { return now },
	}
	return w
}

func (w *world) run(t testing.TB) Report {
	t.Helper()
	scheme := runtime.NewScheme()
	lists := map[schema.GroupVersionResource]string{}
	for _, g := range []schema.GroupVersionResource{CertificateGVR, CertificateRequestGVR, ExternalSecretGVR, ClusterSecretStoreGVR} {
		kind := map[string]string{"certificates": "Certificate", "certificaterequests": "CertificateRequest",
			"externalsecrets": "ExternalSecret", "clustersecretstores": "ClusterSecretStore"}[g.Resource]
		lists[g] = kind + "List"
		if g.Group == "external-secrets.io" {
			g.Version = "v1beta1"
			lists[g] = kind + "List"
		}
	}
	var objs []runtime.Object
	for _, u := range w.dyn {
		objs = append(objs, u)
	}
	w.cfg.Kube = fake.NewClientset(w.kube...)
	w.cfg.Dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, lists, objs...)
	return Run(context.Background(), w.cfg)
}

func TestAllBoundariesPass(t *testing.T) {
	w := newWorld(t)
	rep := w.run(t)
	for _, r := range rep.Results {
		if r.State != Passed {
			t.Errorf("%s: %s %s: %s", r.Boundary, r.State, r.Reason, r.Message)
		}
	}
	if rep.FirstFailed != "" || rep.ExitCode() != ExitPassed || !strings.HasPrefix(rep.Message, "all onboarding contracts hold") {
		t.Fatalf("first failed %q, exit %d, message %q", rep.FirstFailed, rep.ExitCode(), rep.Message)
	}
	id := rep.Results[0]
	if len(id.Evidence) != 2 || !strings.Contains(id.Evidence[1].Detail, "arn:aws:sts::111122223333:assumed-role/eue1-workload/5f0e") {
		t.Fatalf("identity evidence = %+v", id.Evidence)
	}
	if w.aws.Calls("sqs.GetQueueUrl") != 2 || w.aws.Calls("ecr.DescribeRepositories") != 1 {
		t.Fatalf("calls: GetQueueUrl %d, DescribeRepositories %d", w.aws.Calls("sqs.GetQueueUrl"), w.aws.Calls("ecr.DescribeRepositories"))
	}
	// Idempotent: a second run reports the same.
	again := w.run(t)
	if again.Message != rep.Message || again.ExitCode() != rep.ExitCode() {
		t.Fatalf("second run differs: %q", again.Message)
	}
}

// TestFirstFailedBoundary breaks one contract per case and asserts the
// boundary, its state and the sentence.
func TestFirstFailedBoundary(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(w *world)
		first   string
		state   State
		reason  string
		message string // exact first-failed sentence
		exit    int
	}{
		{"identity: certificate rejected", func(w *world) { w.aws.RejectCertificates("Untrusted signing certificate") },
			"Identity", Failed, "RolesAnywhereDenied",
			"the workload identity is not valid: Roles Anywhere refused the certificate for role " + role, ExitFailed},
		{"identity: role not created", func(w *world) { w.aws = recreate(w, func(f *awsfake.Server) {}) },
			"Identity", Failed, "RolesAnywhereDenied",
			"the workload identity is not valid: Roles Anywhere refused the certificate for role " + role, ExitFailed},
		{"identity: certificate not issued", func(w *world) { w.cfg.Identity.Certificate = filepath.Join(w.certDir, "missing.crt") },
			"Identity", Pending, "PendingCertificate", "the workload identity certificate has not been issued yet", ExitPending},
		{"secrets: secret missing", func(w *world) {
			w.aws = recreate(w, func(f *awsfake.Server) { f.AllowRole(role) }, "secret")
		}, "Secrets", Failed, "SecretMissing",
			"the workload identity is valid, but the secret acme/us-east-1/dc/eq/gpu-east-1/hf-token is missing in Secrets Manager (run spokeforge secrets sync)", ExitFailed},
		{"secrets: ExternalSecret waiting for the provider", func(w *world) {
			c := cond("Ready", "False", "SecretSyncedError", "could not get secret data from provider: Secret does not exist")
			c["lastTransitionTime"] = now.Add(-2 * time.Minute).Format(time.RFC3339)
			w.dyn["ExternalSecret/inference/hf-token"].Object["status"] = map[string]any{"conditions": []any{c}}
		}, "Secrets", Pending, "PendingSync",
			"the workload identity is valid, but the ExternalSecret inference/hf-token is waiting for its secret to appear", ExitPending},
		{"secrets: ExternalSecret with External Secrets v0.16's provider error, young", func(w *world) {
			// ESO writes only this into the condition, whatever the provider answered.
			c := cond("Ready", "False", "SecretSyncedError", "could not get secret data from provider")
			c["lastTransitionTime"] = now.Add(-2 * time.Minute).Format(time.RFC3339)
			w.dyn["ExternalSecret/inference/hf-token"].Object["status"] = map[string]any{"conditions": []any{c}}
		}, "Secrets", Pending, "PendingSync",
			"the workload identity is valid, but the ExternalSecret inference/hf-token is waiting for its secret to appear", ExitPending},
		{"secrets: ExternalSecret that could not write its Secret, young", func(w *world) {
			c := cond("Ready", "False", "SecretSyncedError", "could not update secret")
			c["lastTransitionTime"] = now.Add(-2 * time.Minute).Format(time.RFC3339)
			w.dyn["ExternalSecret/inference/hf-token"].Object["status"] = map[string]any{"conditions": []any{c}}
		}, "Secrets", Failed, "ExternalSecretNotReady",
			"the workload identity is valid, but the ExternalSecret inference/hf-token is not synchronised", ExitFailed},
		{"secrets: ExternalSecret provider error past the grace period", func(w *world) {
			c := cond("Ready", "False", "SecretSyncedError", "key token does not exist in secret")
			c["lastTransitionTime"] = now.Add(-30 * time.Minute).Format(time.RFC3339)
			w.dyn["ExternalSecret/inference/hf-token"].Object["status"] = map[string]any{"conditions": []any{c}}
		}, "Secrets", Failed, "ExternalSecretNotReady",
			"the workload identity is valid, but the ExternalSecret inference/hf-token is not synchronised", ExitFailed},
		{"certificates: stale failed request", func(w *world) {
			w.dyn["Certificate/inference/serving"].Object["status"] = map[string]any{
				"conditions":             []any{cond("Ready", "False", "Failed", "issuance failed"), cond("Issuing", "False", "Failed", "denied")},
				"failedIssuanceAttempts": int64(2), "lastFailureTime": "2026-12-01T10:00:00Z"}
			cr := obj("cert-manager.io/v1", "CertificateRequest", "inference", "serving-1",
				map[string]any{"conditions": []any{cond("Denied", "True", "policy.cert-manager.io", "no policy approved this request")}},
				map[string]string{"cert-manager.io/certificate-name": "serving"})
			w.dyn["CertificateRequest/inference/serving-1"] = cr
		}, "Certificates", Failed, "StaleCertificateRequest",
			"the workload identity is valid and secrets are ready, but the certificate inference/serving is stuck on the failed request serving-1", ExitFailed},
		{"certificates: expiring", func(w *world) {
			w.dyn["Certificate/inference/serving"].Object["status"] = ready(map[string]any{"notAfter": now.Add(48 * time.Hour).Format(time.RFC3339)})
		}, "Certificates", Failed, "CertificateExpiring",
			"the workload identity is valid and secrets are ready, but the certificate inference/serving expires soon and has not been renewed", ExitFailed},
		{"secrets: scheduled for deletion", func(w *world) { w.aws.MarkSecretDeleted("acme/us-east-1/dc/eq/gpu-east-1/hf-token") },
			"Secrets", Failed, "SecretScheduledForDeletion",
			"the workload identity is valid, but the secret acme/us-east-1/dc/eq/gpu-east-1/hf-token is scheduled for deletion", ExitFailed},
		{"secrets: store missing", func(w *world) { delete(w.dyn, "ClusterSecretStore//spokeforge-aws") },
			"Secrets", Failed, "SecretStoreMissing",
			"the workload identity is valid, but the ClusterSecretStore spokeforge-aws does not exist", ExitFailed},
		{"secrets: ExternalSecret failing for another reason", func(w *world) {
			w.dyn["ExternalSecret/inference/hf-token"].Object["status"] = map[string]any{"conditions": []any{
				cond("Ready", "False", "SecretSyncedError", "AccessDeniedException: not authorized to perform secretsmanager:GetSecretValue")}}
		}, "Secrets", Failed, "ExternalSecretNotReady",
			"the workload identity is valid, but the ExternalSecret inference/hf-token is not synchronised", ExitFailed},
		{"certificates: issuing", func(w *world) {
			w.dyn["Certificate/inference/serving"].Object["status"] = map[string]any{"conditions": []any{
				cond("Ready", "False", "DoesNotExist", "no secret"), cond("Issuing", "True", "DoesNotExist", "issuing")}}
		}, "Certificates", Pending, "PendingIssuance",
			"the workload identity is valid and secrets are ready, but the certificate inference/serving is being issued", ExitPending},
		{"registry: repository missing", func(w *world) {
			w.aws = recreate(w, func(f *awsfake.Server) { f.AllowRole(role) }, "repository")
		}, "Registry", Failed, "RepositoryMissing",
			"the workload identity is valid and secrets and certificates are ready, but the registry repository eue1/inference has not been provisioned", ExitFailed},
		{"queues: queue missing", func(w *world) {
			w.aws = recreate(w, func(f *awsfake.Server) { f.AllowRole(role); f.AddQueue("eue1-results.fifo") }, "queue")
		}, "Queues", Failed, "QueueMissing",
			"the workload identity is valid and secrets, certificates and the registry are ready, but the queue eue1-jobs has not been provisioned", ExitFailed},
		{"secrets: the role's policy leaves a secret out", func(w *world) {
			w.aws.PutRolePolicy(role, "spokeforge", policyWithout("secretsmanager", "arn:aws:secretsmanager:"+region+":"+account+":secret:acme/us-east-1/dc/eq/gpu-east-1/other-??????"))
		}, "Secrets", Failed, "NotAuthorized",
			"the workload identity is valid, but the workload role's policy does not allow secretsmanager:DescribeSecret on acme/us-east-1/dc/eq/gpu-east-1/hf-token", ExitFailed},
		{"registry: the role's policy has no token statement", func(w *world) {
			w.aws.PutRolePolicy(role, "spokeforge", policyWithout("ecr", "arn:aws:ecr:"+region+":"+account+":repository/eue1/inference"))
		}, "Registry", Failed, "NotAuthorized",
			"the workload identity is valid and secrets and certificates are ready, but the workload role's policy does not allow ecr:GetAuthorizationToken on *", ExitFailed},
		{"queues: the role's policy leaves a queue out", func(w *world) {
			w.aws.PutRolePolicy(role, "spokeforge", policyWithout("sqs", "arn:aws:sqs:"+region+":"+account+":eue1-results.fifo"))
		}, "Queues", Failed, "NotAuthorized",
			"the workload identity is valid and secrets, certificates and the registry are ready, but the workload role's policy does not allow sqs:GetQueueUrl on eue1-jobs", ExitFailed},
		{"storage: the role's policy leaves the bucket out", func(w *world) {
			w.aws.PutRolePolicy(role, "spokeforge", policyWithout("s3", "arn:aws:s3:::eue1-other"))
		}, "Storage", Failed, "BucketDenied",
			"the workload identity is valid and secrets, certificates, the registry and the queues are ready, but access to the bucket eue1-models is denied", ExitFailed},
		{"queues: throttled throughout", func(w *world) {
			w.aws.Inject("sqs.GetQueueUrl", awsfake.Fault{Times: -1, Status: 400, Code: "ThrottlingException", Message: "Rate exceeded"})
		}, "Queues", Pending, "PendingQueueUnreadable",
			"the workload identity is valid and secrets, certificates and the registry are ready, but the queue eue1-jobs cannot be reached", ExitPending},
		{"storage: bucket missing", func(w *world) {
			w.aws = recreate(w, func(f *awsfake.Server) { f.AllowRole(role) }, "bucket")
		}, "Storage", Failed, "BucketMissing",
			"the workload identity is valid and secrets, certificates, the registry and the queues are ready, but the bucket eue1-models has not been provisioned", ExitFailed},
		{"storage: StorageClass missing", func(w *world) { w.kube = w.kube[1:] },
			"Storage", Failed, "StorageClassMissing",
			"the workload identity is valid and secrets, certificates, the registry and the queues are ready, but the StorageClass spokeforge-local-block does not exist", ExitFailed},
		{"workload: GPU count differs", func(w *world) {
			w.kube[2].(*corev1.Node).Status.Allocatable[GPUResource] = resource.MustParse("4")
		}, "Workload", Failed, "GPUCountMismatch",
			"the workload identity is valid and secrets, certificates, the registry, the queues and storage are ready, but node gpu-node-01 has 4 GPUs where the record says 8", ExitFailed},
		{"workload: node missing", func(w *world) { w.kube = w.kube[:2] },
			"Workload", Failed, "NodeMissing",
			"the workload identity is valid and secrets, certificates, the registry, the queues and storage are ready, but the GPU node gpu-node-01 is not in the cluster", ExitFailed},
		{"workload: GFD reads other hardware", func(w *world) {
			w.kube[2].(*corev1.Node).Labels["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
		}, "Workload", Failed, "HardwareMismatch",
			"the workload identity is valid and secrets, certificates, the registry, the queues and storage are ready, but node gpu-node-01 holds NVIDIA-H100-80GB-HBM3, not the NVIDIA-A100-SXM4-80GB the record says", ExitFailed},
		{"workload: labels not applied yet", func(w *world) { delete(w.kube[2].(*corev1.Node).Labels, "spokeforge.io/gpu.count") },
			"Workload", Pending, "PendingNodeLabels",
			"the workload identity is valid and secrets, certificates, the registry, the queues and storage are ready, but node gpu-node-01 has not been labelled from the record yet", ExitPending},
		{"workload: device plugin not registered", func(w *world) {
			delete(w.kube[2].(*corev1.Node).Status.Allocatable, GPUResource)
		}, "Workload", Pending, "PendingDevicePlugin",
			"the workload identity is valid and secrets, certificates, the registry, the queues and storage are ready, but the GPUs of node gpu-node-01 are not advertised yet", ExitPending},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.breakIt(w)
			rep := w.run(t)
			if rep.FirstFailed != tc.first {
				t.Fatalf("first failed = %q, want %q; results %+v", rep.FirstFailed, tc.first, rep.Results)
			}
			var got Result
			for _, r := range rep.Results {
				if r.Boundary == tc.first {
					got = r
				}
			}
			if got.State != tc.state || got.Reason != tc.reason {
				t.Fatalf("%s = %s/%s (%s), want %s/%s", tc.first, got.State, got.Reason, got.Message, tc.state, tc.reason)
			}
			if rep.Message != tc.message {
				t.Fatalf("message:\n got %q\nwant %q", rep.Message, tc.message)
			}
			if rep.ExitCode() != tc.exit {
				t.Fatalf("exit = %d, want %d", rep.ExitCode(), tc.exit)
			}
		})
	}
}

// recreate replaces the fake AWS account with one holding every resource
// but the kinds listed, set up by setup.
func recreate(w *world, setup func(*awsfake.Server), omit ...string) *awsfake.Server {
	_ = w.aws.Close()
	sp := w.cfg.Spec
	skip := map[string]bool{}
	for _, o := range omit {
		skip[o] = true
	}
	f := awsfake.New(account, region)
	url, err := f.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	setup(f)
	if !skip["secret"] {
		for _, s := range sp.Secrets {
			f.AddSecret(s.Name)
		}
	}
	if !skip["repository"] {
		for _, r := range sp.Registries {
			f.AddRepository(r)
		}
	}
	if !skip["queue"] {
		for _, q := range sp.Queues {
			f.AddQueue(q)
		}
	}
	if !skip["bucket"] {
		for _, b := range sp.Buckets {
			_ = f.AddBucket(b)
		}
	}
	w.cfg.Identity.Endpoint = url
	w.cfg.AWS.BaseEndpoint = aws.String(url)
	return f
}

// TestTransientErrorsAreRetried: throttling that clears within the retry
// budget does not fail the boundary, and the retries are capped.
func TestTransientErrorsAreRetried(t *testing.T) {
	w := newWorld(t)
	w.aws.Inject("sqs.GetQueueUrl", awsfake.Fault{Times: 2, Status: 500, Code: "InternalFailure", Message: "try again"})
	rep := w.run(t)
	if rep.FirstFailed != "" {
		t.Fatalf("first failed %q: %s", rep.FirstFailed, rep.Message)
	}
	if got := w.aws.Calls("sqs.GetQueueUrl"); got != 4 { // 2 failures + 1 success for the first queue, 1 for the second
		t.Fatalf("GetQueueUrl calls = %d, want 4", got)
	}
}

// TestTimeoutIsPending: an endpoint slower than the call timeout is Pending, not Failed.
func TestTimeoutIsPending(t *testing.T) {
	w := newWorld(t)
	w.cfg.CallTimeout = 50 * time.Millisecond
	w.aws.Inject("s3.HEAD", awsfake.Fault{Times: -1, Delay: 200 * time.Millisecond})
	rep := w.run(t)
	if rep.FirstFailed != "Storage" || rep.Results[5].State != Pending || !rep.Results[5].Unreachable || rep.ExitCode() != ExitPending {
		t.Fatalf("first failed %q, storage %+v", rep.FirstFailed, rep.Results[5])
	}
}

// TestHungRolesAnywhere: an endpoint that never answers is Pending, and
// at most one abandoned exchange is ever outstanding.
func TestHungRolesAnywhere(t *testing.T) {
	w := newWorld(t)
	w.cfg.CallTimeout = 30 * time.Millisecond
	w.aws.Inject("rolesanywhere.CreateSession", awsfake.Fault{Times: -1, Delay: 500 * time.Millisecond})
	for range 2 {
		rep := w.run(t)
		id := rep.Results[0]
		if id.State != Pending || id.Reason != "PendingRolesAnywhere" || !id.Unreachable || rep.ExitCode() != ExitPending {
			t.Fatalf("identity = %+v", id)
		}
	}
	if n := w.aws.Calls("rolesanywhere.CreateSession"); n != 1 {
		t.Fatalf("CreateSession called %d times while the first call hung, want 1", n)
	}
	time.Sleep(600 * time.Millisecond) // let the abandoned exchange return
}

func TestStatusKeepsTransitionTimes(t *testing.T) {
	w := newWorld(t)
	rep := w.run(t)
	st := Status(rep, nil, 3)
	if len(st.Conditions) != 8 || st.Conditions[7].Type != "Ready" || st.Conditions[7].Status != "True" || st.ObservedGeneration != 3 {
		t.Fatalf("status = %+v", st)
	}
	old := "2026-11-01T00:00:00Z"
	prev := append([]v1alpha1.Condition(nil), st.Conditions...)
	for i := range prev {
		prev[i].LastTransitionTime = old
	}
	prev[4].Status = "False" // Queues was False before
	later := rep
	later.CheckedAt = now.Add(time.Hour)
	st2 := Status(later, prev, 3)
	for _, c := range st2.Conditions {
		want := old
		if c.Type == "Queues" {
			want = now.Add(time.Hour).Format(time.RFC3339)
		}
		if c.LastTransitionTime != want {
			t.Errorf("%s lastTransitionTime = %s, want %s", c.Type, c.LastTransitionTime, want)
		}
	}
}

func TestAssumedRoleMatches(t *testing.T) {
	cases := []struct {
		caller string
		ok     bool
	}{
		{"arn:aws:sts::111122223333:assumed-role/eue1-workload/5f0e", true},
		{"arn:aws:sts::111122223333:assumed-role/eue1-other/5f0e", false},
		{"arn:aws:sts::999999999999:assumed-role/eue1-workload/5f0e", false},
		{"arn:aws:iam::111122223333:user/eue1-workload", false},
		{"arn:aws:sts::111122223333:assumed-role/eue1-workload/", false},
		{"not an arn", false},
	}
	for _, tc := range cases {
		if _, ok := assumedRoleMatches(tc.caller, role); ok != tc.ok {
			t.Errorf("%s: match %v, want %v", tc.caller, ok, tc.ok)
		}
	}
}

func TestStorageProbe(t *testing.T) {
	w := newWorld(t)
	w.cfg.ProbePVC = true
	rep := w.run(t)
	st := rep.Results[5]
	if st.State != Passed || !strings.Contains(st.Evidence[len(st.Evidence)-1].Detail, "skipped: StorageClass spokeforge-local-block binds on first consumer") {
		t.Fatalf("WaitForFirstConsumer probe: %+v", st)
	}
	immediate := storagev1.VolumeBindingImmediate
	w.kube[0].(*storagev1.StorageClass).VolumeBindingMode = &immediate
	w.cfg.ProbeTimeout = 10 * time.Millisecond
	rep = w.run(t)
	if st := rep.Results[5]; st.State != Pending || st.Reason != "PendingProbeClaim" {
		t.Fatalf("unbound probe claim: %+v", st)
	}
	if _, err := w.cfg.Kube.CoreV1().PersistentVolumeClaims("spokeforge-system").Get(context.Background(), ProbeClaim, metav1.GetOptions{}); err == nil {
		t.Fatal("probe claim left behind")
	}
}

// TestCertificateNextRetry: a Certificate stuck on a failed request carries cert-manager's next
// retry (1h·2^(attempts-1) from lastFailureTime, at most 32h), the earliest of several, and the
// status writes it as nextRetryTime.
func TestCertificateNextRetry(t *testing.T) {
	stale := func(w *world, ns, name string, attempts int64, lastFailure string) {
		st := map[string]any{"conditions": []any{cond("Ready", "False", "Failed", "issuance failed")}, "failedIssuanceAttempts": attempts}
		if lastFailure != "" {
			st["lastFailureTime"] = lastFailure
		}
		w.dyn["Certificate/"+ns+"/"+name].Object["status"] = st
		w.dyn["CertificateRequest/"+ns+"/"+name+"-1"] = obj("cert-manager.io/v1", "CertificateRequest", ns, name+"-1",
			map[string]any{"conditions": []any{cond("Denied", "True", "policy.cert-manager.io", "no policy approved this request")}},
			map[string]string{"cert-manager.io/certificate-name": name})
	}
	cases := []struct {
		name    string
		breakIt func(w *world)
		want    string // nextRetryTime; "" = unset
	}{
		{"first failure: one hour", func(w *world) { stale(w, "inference", "serving", 1, "2026-12-01T10:00:00Z") }, "2026-12-01T11:00:00Z"},
		{"third failure: four hours", func(w *world) { stale(w, "inference", "serving", 3, "2026-12-01T10:00:00Z") }, "2026-12-01T14:00:00Z"},
		{"capped at 32 hours", func(w *world) { stale(w, "inference", "serving", 9, "2026-12-01T10:00:00Z") }, "2026-12-02T18:00:00Z"},
		{"no lastFailureTime: unknown", func(w *world) { stale(w, "inference", "serving", 2, "") }, ""},
		{"two stuck: the earliest", func(w *world) {
			stale(w, "inference", "serving", 2, "2026-12-01T10:00:00Z")
			stale(w, "spokeforge-system", "workload-identity", 1, "2026-12-01T10:30:00Z")
		}, "2026-12-01T11:30:00Z"},
		{"not stuck: unset", func(w *world) {
			w.dyn["Certificate/inference/serving"].Object["status"] = ready(map[string]any{"notAfter": now.Add(48 * time.Hour).Format(time.RFC3339)})
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.breakIt(w)
			rep := w.run(t)
			st := Status(rep, nil, 1)
			if len(st.Boundaries) != len(v1alpha1.Boundaries) || st.Boundaries[2].Name != "Certificates" {
				t.Fatalf("boundaries = %+v", st.Boundaries)
			}
			if got := st.Boundaries[2].NextRetryTime; got != tc.want {
				t.Fatalf("nextRetryTime = %q, want %q (message %q)", got, tc.want, rep.Results[2].Message)
			}
			if tc.want != "" && !strings.Contains(rep.Results[2].Message, "retries at ") {
				t.Fatalf("the condition message lost its retry time: %q", rep.Results[2].Message)
			}
		})
	}
}

// TestBoundaryStatus: evidence is bounded in count (the worst kept, in their order) and in
// length (cut on a character boundary), and a boundary without observations has no evidence.
func TestBoundaryStatus(t *testing.T) {
	many := func(n int, failedAt ...int) []Evidence {
		var out []Evidence
		for i := range n {
			out = append(out, Evidence{Check: fmt.Sprintf("sqs:GetQueueUrl q%02d", i), State: Passed, Detail: "ok"})
		}
		for _, i := range failedAt {
			out[i].State = Failed
		}
		return out
	}
	long := strings.Repeat("é", 400) // 800 bytes
	cases := []struct {
		name      string
		evidence  []Evidence
		wantItems int
		omitted   int32
		check     func(t *testing.T, bs v1alpha1.BoundaryStatus)
	}{
		{"none", nil, 0, 0, nil},
		{"under the bound: all, as made", many(3, 1), 3, 0, func(t *testing.T, bs v1alpha1.BoundaryStatus) {
			if bs.Evidence[1].Result != "Failed" || bs.Evidence[0].Check != "sqs:GetQueueUrl q00" {
				t.Errorf("evidence = %+v", bs.Evidence)
			}
		}},
		{"over the bound: failures kept, in order", many(20, 19, 17), 16, 4, func(t *testing.T, bs v1alpha1.BoundaryStatus) {
			last, before := bs.Evidence[15], bs.Evidence[14]
			if last.Check != "sqs:GetQueueUrl q19" || last.Result != "Failed" || before.Check != "sqs:GetQueueUrl q17" {
				t.Errorf("the failures were not kept in order: %+v", bs.Evidence)
			}
		}},
		{"long strings cut on a character", []Evidence{{Check: long, State: Pending, Detail: long}}, 1, 0, func(t *testing.T, bs v1alpha1.BoundaryStatus) {
			e := bs.Evidence[0]
			if len(e.Check) > v1alpha1.MaxEvidenceCheck || len(e.Detail) > v1alpha1.MaxEvidenceDetail ||
				!strings.HasSuffix(e.Detail, "é...") || !utf8.ValidString(e.Check) || !utf8.ValidString(e.Detail) {
				t.Errorf("check %d bytes, detail %d bytes %q", len(e.Check), len(e.Detail), e.Detail)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bs := Result{Boundary: "Queues", State: Passed, Evidence: tc.evidence}.BoundaryStatus()
			if bs.Name != "Queues" || len(bs.Evidence) != tc.wantItems || bs.EvidenceOmitted != tc.omitted || bs.NextRetryTime != "" {
				t.Fatalf("boundary status = %+v", bs)
			}
			if tc.check != nil {
				tc.check(t, bs)
			}
		})
	}
}
