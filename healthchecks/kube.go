package healthchecks

import (
	"context"
	"fmt"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokeforge/spokeforge/internal/onboarding"
)

// GVRs the checks read. External Secrets serves v1 and v1beta1 from the
// same storage; v1 is tried first.
var (
	CertificateGVR        = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	CertificateRequestGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificaterequests"}
	ExternalSecretGVR     = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}
	ClusterSecretStoreGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}
	OnboardingGVR         = schema.GroupVersionResource{Group: onboarding.Group, Version: onboarding.Version, Resource: onboarding.Resource}
)

// GPUResource is the extended resource the NVIDIA device plugin advertises.
const GPUResource = corev1.ResourceName("nvidia.com/gpu")

// get reads one object with retries; (nil, nil) when it does not exist.
func (r *run) get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	versions := []string{gvr.Version}
	if gvr.Group == "external-secrets.io" {
		versions = []string{"v1", "v1beta1"}
	}
	var obj *unstructured.Unstructured
	var err error
	for _, v := range versions {
		g := gvr
		g.Version = v
		_, err = r.call(ctx, func(c context.Context) error {
			var e error
			if ns == "" {
				obj, e = r.cfg.Dynamic.Resource(g).Get(c, name, metav1.GetOptions{})
			} else {
				obj, e = r.cfg.Dynamic.Resource(g).Namespace(ns).Get(c, name, metav1.GetOptions{})
			}
			if apierrors.IsNotFound(e) {
				return nil // not retried: the API server is authoritative
			}
			return e
		})
		if err == nil && obj != nil {
			return obj, nil
		}
	}
	return nil, err
}

// condition returns the status, reason and message of a condition type.
func condition(obj *unstructured.Unstructured, typ string) (status, reason, message, since string, found bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		return str("status"), str("reason"), str("message"), str("lastTransitionTime"), true
	}
	return "", "", "", "", false
}

// kubeUnreadable records an API read that failed.
func (b *builder) kubeUnreadable(check, what string, err error) {
	st := classify(err)
	b.errFinding(st, check, "APIUnreadable", "the spoke's API server did not answer for "+what,
		fmt.Sprintf("reading %s: %s", what, short(err)))
}

// secrets: AWS side, then the store and every ExternalSecret on the spoke.
func (r *run) secrets(ctx context.Context) Result {
	var b builder
	sp := r.cfg.Spec
	r.awsSecrets(ctx, &b)
	css := sp.ClusterSecretStore
	check := "ClusterSecretStore " + css
	obj, err := r.get(ctx, ClusterSecretStoreGVR, "", css)
	switch {
	case err != nil:
		b.kubeUnreadable(check, "ClusterSecretStore "+css, err)
	case obj == nil:
		b.finding(Failed, check, "SecretStoreMissing", "the ClusterSecretStore "+css+" does not exist",
			"ClusterSecretStore "+css+" is not on the spoke: the spoke Application has not synced it")
	default:
		switch st, reason, msg, _, ok := condition(obj, "Ready"); {
		case !ok:
			b.finding(Pending, check, "PendingSecretStore", "the ClusterSecretStore "+css+" is not validated yet",
				"ClusterSecretStore "+css+" has no Ready condition yet (External Secrets has not validated it)")
		case st == "True":
			b.pass(check, "Ready: %s", msg)
		default:
			b.finding(Failed, check, "SecretStoreNotReady", "the ClusterSecretStore "+css+" is not ready",
				fmt.Sprintf("ClusterSecretStore %s Ready=%s %s: %s", css, st, reason, msg))
		}
	}
	for _, s := range sp.Secrets {
		r.externalSecret(ctx, &b, s.ExternalSecret.Namespace, s.ExternalSecret.Name, false)
	}
	return b.done("Verified", fmt.Sprintf("%s exist under %s and are synchronised", counted(len(sp.Secrets), "secret", "secrets"), sp.SecretPath))
}

// esoGrace is how long a provider "does not exist" error counts as
// eventual consistency: longer than ESO's 7 min retry backoff cap.
const esoGrace = 10 * time.Minute

// externalSecret checks one ExternalSecret is Ready. A provider "does not
// exist" error is Pending for esoGrace: ESO retries it with backoff, and
// the secret may just have been written. After that it is a failure.
func (r *run) externalSecret(ctx context.Context, b *builder, ns, name string, registry bool) {
	ref := ns + "/" + name
	check := "ExternalSecret " + ref
	obj, err := r.get(ctx, ExternalSecretGVR, ns, name)
	if err != nil {
		b.kubeUnreadable(check, "ExternalSecret "+ref, err)
		return
	}
	what := "the ExternalSecret " + ref
	if registry {
		what = "the registry pull secret " + ref
	}
	if obj == nil {
		b.finding(Failed, check, "ExternalSecretMissing", what+" does not exist", "ExternalSecret "+ref+" is not on the spoke")
		return
	}
	st, reason, msg, since, ok := condition(obj, "Ready")
	sinceT, err := time.Parse(time.RFC3339, since)
	young := err != nil || r.cfg.Now().Sub(sinceT) < esoGrace
	force := fmt.Sprintf("kubectl annotate externalsecret -n %s %s force-sync=$(date +%%s) --overwrite", ns, name)
	lower := strings.ToLower(msg)
	switch {
	case !ok:
		b.finding(Pending, check, "PendingSync", what+" has not synchronised yet", "ExternalSecret "+ref+" has no Ready condition yet")
	case st == "True":
		if refreshed, _, _ := unstructured.NestedString(obj.Object, "status", "refreshTime"); refreshed != "" {
			b.pass(check, "Ready (%s), refreshed %s", reason, refreshed)
		} else {
			b.pass(check, "Ready (%s)", reason)
		}
	case young && providerMiss(lower):
		b.finding(Pending, check, "PendingSync", what+" is waiting for its secret to appear",
			fmt.Sprintf("ExternalSecret %s: %s; External Secrets retries with backoff (up to 7 min), or force it: %s", ref, msg, force))
	default:
		b.finding(Failed, check, "ExternalSecretNotReady", what+" is not synchronised",
			fmt.Sprintf("ExternalSecret %s Ready=%s %s: %s", ref, st, reason, msg))
	}
}

// providerMiss reports whether a lowercased SecretSyncedError message may
// be a secret the provider does not have yet. External Secrets v0.16 and v1
// write only "could not get secret data from provider" into the condition,
// whatever the provider answered; the cause ("Secret does not exist") is in
// an UpdateFailed Event. The Secrets boundary has already asked Secrets
// Manager itself whether each secret exists, so here that message counts
// as a miss while young.
func providerMiss(lower string) bool {
	for _, s := range []string{"does not exist", "not found", "can't find", "could not get secret data from provider"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

func nestedString(obj *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, path...)
	if s == "" {
		return "never"
	}
	return s
}

// certificates: each Certificate Ready and not inside the renewal window; a
// failed issuance names its CertificateRequest and when cert-manager retries.
func (r *run) certificates(ctx context.Context) Result {
	var b builder
	now := r.cfg.Now()
	for _, ref := range r.cfg.Spec.Certificates {
		check := "Certificate " + ref.String()
		obj, err := r.get(ctx, CertificateGVR, ref.Namespace, ref.Name)
		if err != nil {
			b.kubeUnreadable(check, "Certificate "+ref.String(), err)
			continue
		}
		if obj == nil {
			b.finding(Failed, check, "CertificateMissing", "the certificate "+ref.String()+" does not exist", "Certificate "+ref.String()+" is not on the spoke")
			continue
		}
		ready, reason, msg, _, hasReady := condition(obj, "Ready")
		issuing, _, _, _, _ := condition(obj, "Issuing")
		notAfter, _ := time.Parse(time.RFC3339, nestedString(obj, "status", "notAfter"))
		switch {
		case ready == "True" && !notAfter.IsZero() && notAfter.Sub(now) < r.cfg.CertRenewalWindow:
			b.finding(Failed, check, "CertificateExpiring", "the certificate "+ref.String()+" expires soon and has not been renewed",
				fmt.Sprintf("Certificate %s expires %s (in %s), inside the %s renewal window: cert-manager has not renewed it",
					ref, notAfter.UTC().Format(time.RFC3339), notAfter.Sub(now).Round(time.Minute), r.cfg.CertRenewalWindow))
		case ready == "True" && notAfter.IsZero():
			b.pass(check, "Ready (no status.notAfter to check expiry against)")
		case ready == "True":
			b.pass(check, "Ready, expires %s", notAfter.UTC().Format(time.RFC3339))
		case issuing == "True":
			b.finding(Pending, check, "PendingIssuance", "the certificate "+ref.String()+" is being issued",
				"Certificate "+ref.String()+" is issuing")
		case !hasReady:
			b.finding(Pending, check, "PendingIssuance", "the certificate "+ref.String()+" has not been issued yet",
				"Certificate "+ref.String()+" has no Ready condition yet")
		default:
			r.failedCertificate(ctx, &b, obj, ref, reason, msg)
		}
	}
	return b.done("Verified", fmt.Sprintf("%s Ready and outside the renewal window", counted(len(r.cfg.Spec.Certificates), "certificate", "certificates")))
}

// failedCertificate explains a Certificate that is not Ready, naming its
// latest failed CertificateRequest when there is one. cert-manager keeps
// a failed or denied request and only retries after its backoff
// (1h·2^(attempts-1), at most 32h), even when the cause was fixed.
func (r *run) failedCertificate(ctx context.Context, b *builder, cert *unstructured.Unstructured, ref v1alpha1.ObjectRef, reason, msg string) {
	check := "Certificate " + ref.String()
	renew := fmt.Sprintf("cmctl renew -n %s %s", ref.Namespace, ref.Name)
	var latest *unstructured.Unstructured
	var list *unstructured.UnstructuredList
	_, err := r.call(ctx, func(c context.Context) error {
		var e error
		list, e = r.cfg.Dynamic.Resource(CertificateRequestGVR).Namespace(ref.Namespace).List(c, metav1.ListOptions{})
		return e
	})
	if err == nil {
		for i := range list.Items {
			cr := &list.Items[i]
			if cr.GetAnnotations()["cert-manager.io/certificate-name"] != ref.Name {
				continue
			}
			ct, lt := cr.GetCreationTimestamp().Time, time.Time{}
			if latest != nil {
				lt = latest.GetCreationTimestamp().Time
			}
			if latest == nil || ct.After(lt) || (ct.Equal(lt) && cr.GetName() > latest.GetName()) {
				latest = cr
			}
		}
	}
	if latest != nil {
		crRef := ref.Namespace + "/" + latest.GetName()
		failure := ""
		if st, rs, m, _, ok := condition(latest, "Denied"); ok && st == "True" {
			failure = fmt.Sprintf("denied (%s: %s)", rs, m)
		} else if st, rs, m, _, ok := condition(latest, "Ready"); ok && st == "False" && (rs == "Failed" || rs == "Denied") {
			failure = fmt.Sprintf("failed (%s: %s)", rs, m)
		}
		if failure != "" {
			attempts, _, _ := unstructured.NestedInt64(cert.Object, "status", "failedIssuanceAttempts")
			next := "when its backoff ends"
			if last, err := time.Parse(time.RFC3339, nestedString(cert, "status", "lastFailureTime")); err == nil && attempts > 0 {
				backoff := time.Hour << min(attempts-1, 5)
				at := last.Add(min(backoff, 32*time.Hour)).UTC()
				next = "at " + at.Format(time.RFC3339)
				b.retryAt(at)
			}
			retry := "`" + renew + "`"
			if strings.HasPrefix(failure, "denied") {
				// cert-manager (v1.19) deletes a failed request when it is re-triggered, but not a
				// denied one: a re-trigger fails again at once on the request it still finds.
				retry = fmt.Sprintf("`kubectl delete certificaterequest -n %s %s` and then %s", ref.Namespace, latest.GetName(), retry)
			}
			b.finding(Failed, check, "StaleCertificateRequest",
				"the certificate "+ref.String()+" is stuck on the failed request "+latest.GetName(),
				fmt.Sprintf("CertificateRequest %s %s; fixing the cause does not retry it: cert-manager retries %s, or run %s to retry now",
					crRef, failure, next, retry))
			return
		}
	}
	b.finding(Failed, check, "CertificateNotReady", "the certificate "+ref.String()+" is not ready",
		fmt.Sprintf("Certificate %s Ready=False %s: %s", ref, reason, msg))
}

// storage: buckets, then the StorageClass and the device volumes, then the
// optional probe claim.
func (r *run) storage(ctx context.Context) Result {
	var b builder
	sp := r.cfg.Spec
	r.buckets(ctx, &b)
	if sp.StorageClass != "" {
		var sc *storagev1.StorageClass
		_, err := r.call(ctx, func(c context.Context) error {
			var e error
			sc, e = r.cfg.Kube.StorageV1().StorageClasses().Get(c, sp.StorageClass, metav1.GetOptions{})
			return e
		})
		check := "StorageClass " + sp.StorageClass
		switch {
		case apierrors.IsNotFound(err):
			b.finding(Failed, check, "StorageClassMissing", "the StorageClass "+sp.StorageClass+" does not exist",
				"StorageClass "+sp.StorageClass+" is not on the spoke")
		case err != nil:
			b.kubeUnreadable(check, "StorageClass "+sp.StorageClass, err)
		default:
			mode := "Immediate"
			if sc.VolumeBindingMode != nil {
				mode = string(*sc.VolumeBindingMode)
			}
			b.pass(check, "provisioner %s, binding %s", sc.Provisioner, mode)
			r.volumes(ctx, &b)
			if r.cfg.ProbePVC {
				r.probe(ctx, &b, sc)
			}
		}
	}
	if len(sp.Buckets) == 0 && sp.StorageClass == "" {
		return b.done("NotConfigured", "the record lists no buckets and no devices")
	}
	return b.done("Verified", fmt.Sprintf("%s reachable, %s present", counted(len(sp.Buckets), "bucket", "buckets"), counted(len(sp.Volumes), "device volume", "device volumes")))
}

// volumes: the rendered local PVs exist and are not Failed or Released.
// Phase "" (no PV controller has seen them, as in a bare API server) is
// reported as evidence, not as a failure.
func (r *run) volumes(ctx context.Context, b *builder) {
	for _, name := range r.cfg.Spec.Volumes {
		var pv *corev1.PersistentVolume
		_, err := r.call(ctx, func(c context.Context) error {
			var e error
			pv, e = r.cfg.Kube.CoreV1().PersistentVolumes().Get(c, name, metav1.GetOptions{})
			return e
		})
		check := "PersistentVolume " + name
		switch {
		case apierrors.IsNotFound(err):
			b.finding(Failed, check, "VolumeMissing", "the device volume "+name+" does not exist", "PersistentVolume "+name+" is not on the spoke")
		case err != nil:
			b.kubeUnreadable(check, "PersistentVolume "+name, err)
		case pv.Status.Phase == corev1.VolumeFailed || pv.Status.Phase == corev1.VolumeReleased:
			b.finding(Failed, check, "VolumeUnusable", "the device volume "+name+" is "+strings.ToLower(string(pv.Status.Phase)),
				fmt.Sprintf("PersistentVolume %s is %s: %s", name, pv.Status.Phase, pv.Status.Message))
		default:
			phase := string(pv.Status.Phase)
			if phase == "" {
				phase = "no phase yet"
			}
			b.pass(check, "%s on %s (%s)", storageOf(pv), pathOf(pv), phase)
		}
	}
}

func storageOf(pv *corev1.PersistentVolume) string {
	q := pv.Spec.Capacity[corev1.ResourceStorage]
	return q.String()
}

func pathOf(pv *corev1.PersistentVolume) string {
	if pv.Spec.Local != nil {
		return pv.Spec.Local.Path
	}
	return "?"
}

// ProbeClaim is the claim the optional storage probe creates.
const ProbeClaim = "spokeforge-storage-probe"

// probe creates a claim on the class and waits for it to bind, then deletes
// it. With WaitForFirstConsumer binding a claim binds only for a pod, which
// the agent does not run, so the probe is skipped and says so.
func (r *run) probe(ctx context.Context, b *builder, sc *storagev1.StorageClass) {
	check := "probe PVC " + onboarding.SystemNamespace + "/" + ProbeClaim
	if sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		b.pass(check, "skipped: StorageClass %s binds on first consumer, and the probe runs no pod", sc.Name)
		return
	}
	pvcs := r.cfg.Kube.CoreV1().PersistentVolumeClaims(onboarding.SystemNamespace)
	block := corev1.PersistentVolumeBlock
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ProbeClaim, Labels: map[string]string{"app.kubernetes.io/managed-by": "spokeforge"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &sc.Name, VolumeMode: &block, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := pvcs.Create(ctx, claim, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.kubeUnreadable(check, "the probe claim", err)
		return
	}
	defer func() { _ = pvcs.Delete(context.WithoutCancel(ctx), ProbeClaim, metav1.DeleteOptions{}) }()
	deadline := time.Now().Add(r.cfg.ProbeTimeout)
	for {
		got, err := pvcs.Get(ctx, ProbeClaim, metav1.GetOptions{})
		if err == nil && got.Status.Phase == corev1.ClaimBound {
			b.pass(check, "bound to %s", got.Spec.VolumeName)
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.finding(Pending, check, "PendingProbeClaim", "the probe claim on "+sc.Name+" has not bound",
				fmt.Sprintf("probe claim on StorageClass %s not bound after %s", sc.Name, r.cfg.ProbeTimeout))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// workload: every GPU node of the record exists, advertises its GPUs and
// carries the labels the record's topology implies.
func (r *run) workload(ctx context.Context) Result {
	var b builder
	sp := r.cfg.Spec
	if len(sp.GPUNodes) == 0 {
		return b.done("NotConfigured", "the record lists no GPU nodes")
	}
	for _, g := range sp.GPUNodes {
		check := "Node " + g.Node
		var node *corev1.Node
		_, err := r.call(ctx, func(c context.Context) error {
			var e error
			node, e = r.cfg.Kube.CoreV1().Nodes().Get(c, g.Node, metav1.GetOptions{})
			return e
		})
		if apierrors.IsNotFound(err) {
			b.finding(Failed, check, "NodeMissing", "the GPU node "+g.Node+" is not in the cluster",
				"node "+g.Node+" from the record's GPU topology is not registered on the spoke")
			continue
		}
		if err != nil {
			b.kubeUnreadable(check, "node "+g.Node, err)
			continue
		}
		r.gpuNode(&b, node, g)
	}
	return b.done("Verified", fmt.Sprintf("%d GPU nodes match the record's topology", len(sp.GPUNodes)))
}

func (r *run) gpuNode(b *builder, node *corev1.Node, g v1alpha1.GPUTopology) {
	check := "Node " + g.Node
	alloc, has := node.Status.Allocatable[GPUResource]
	n := alloc.Value()
	if g.MIGStrategy == "mixed" {
		// Mixed MIG advertises nvidia.com/mig-<profile> resources beside nvidia.com/gpu.
		for name, q := range node.Status.Allocatable {
			if strings.HasPrefix(string(name), "nvidia.com/mig-") {
				n += q.Value()
				has = true
			}
		}
	}
	switch {
	case !has:
		b.finding(Pending, check, "PendingDevicePlugin", "the GPUs of node "+g.Node+" are not advertised yet",
			fmt.Sprintf("node %s has no allocatable %s: the NVIDIA device plugin has not registered", g.Node, GPUResource))
		return
	case g.MIGStrategy == "none" && n != int64(g.Count):
		b.finding(Failed, check, "GPUCountMismatch", fmt.Sprintf("node %s has %d GPUs where the record says %d", g.Node, n, g.Count),
			fmt.Sprintf("node %s allocatable %s = %d, record says %d", g.Node, GPUResource, n, g.Count))
		return
	case g.MIGStrategy != "none" && n < int64(g.Count):
		// The single strategy overloads nvidia.com/gpu with MIG devices, so there are at least as many.
		b.finding(Failed, check, "GPUCountMismatch", fmt.Sprintf("node %s has %d GPU devices where the record says at least %d", g.Node, n, g.Count),
			fmt.Sprintf("node %s allocatable GPU devices = %d (MIG %s), record says %d GPUs", g.Node, n, g.MIGStrategy, g.Count))
		return
	}
	labels := node.Labels
	want := map[string]string{
		"spokeforge.io/gpu.product":      g.Product,
		"spokeforge.io/gpu.count":        strconv.Itoa(g.Count),
		"spokeforge.io/gpu.mig-strategy": g.MIGStrategy,
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		got, ok := labels[k]
		if !ok {
			b.finding(Pending, check, "PendingNodeLabels", "node "+g.Node+" has not been labelled from the record yet",
				fmt.Sprintf("node %s lacks label %s (Node Feature Discovery applies the spokeforge-gpu rule)", g.Node, k))
			return
		}
		if got != want[k] {
			b.finding(Failed, check, "NodeLabelMismatch", "node "+g.Node+" does not match the record's GPU topology",
				fmt.Sprintf("node %s label %s=%q, record says %q", g.Node, k, got, want[k]))
			return
		}
	}
	// GPU feature discovery's own reading of the hardware, when present, must agree.
	if gfd, ok := labels["nvidia.com/gpu.product"]; ok && gfd != g.Product {
		b.finding(Failed, check, "HardwareMismatch", "node "+g.Node+" holds "+gfd+", not the "+g.Product+" the record says",
			fmt.Sprintf("node %s: GPU feature discovery reports nvidia.com/gpu.product=%s, record says %s", g.Node, gfd, g.Product))
		return
	}
	b.pass(check, "%d x %s allocatable (%s), labels match", n, g.Product, GPUResource)
}

// connected reads what the Connected facts report (docs/contracts.md).
func (r *run) connected(ctx context.Context) *v1alpha1.Connected {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	v, err := r.cfg.Kube.Discovery().ServerVersion()
	if err != nil {
		return nil
	}
	nodes, err := r.cfg.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	return &v1alpha1.Connected{KubernetesVersion: v.GitVersion, NodeCount: len(nodes.Items), CheckedAt: r.cfg.Now().UTC().Format(time.RFC3339)}
}
