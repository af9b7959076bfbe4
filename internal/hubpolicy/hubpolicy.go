// Package hubpolicy is what may reach the management cluster (the hub), as
// data in one place: the kinds an inCluster record's spoke render may put
// there, the kinds an org's zones may create, and the hub's platform
// namespaces, which no record and no org may use. Everything not named here
// is refused: render and validate check records against it, the org
// AppProjects are rendered from it, and docs/security.md ("Hub objects")
// reproduces it.
package hubpolicy

import (
	"strings"

	"github.com/spokeforge/spokeforge/internal/onboarding"
)

// GroupKind is an API group ("" for the core group) and kind, with why it
// is allowed.
type GroupKind struct {
	Group, Kind, Why string
}

// SpokeKinds are the kinds an inCluster record's spoke render may hold:
// spokeforge's own components and the record's secrets, registries,
// certificates and queue settings. Not listed, so never on the hub from a
// record: PersistentVolume and StorageClass (spec.storage: a local volume
// on whatever device path the record names), NodeFeatureRule (spec.gpu:
// labels on the hub's nodes), and every kind an overlay could add (an
// inCluster record takes no overlay).
var SpokeKinds = []GroupKind{
	{"", "Namespace", "the record's namespaces, labelled by spokeforge only"},
	{"", "ServiceAccount", "the agent's and the credentials helper's"},
	{"", "ConfigMap", "queue and bucket names for workloads"},
	{"apps", "Deployment", "the agent and the credentials helper, exactly as rendered"},
	{"rbac.authorization.k8s.io", "Role", "the credentials helper's own Secret"},
	{"rbac.authorization.k8s.io", "RoleBinding", "binds that Role to the helper"},
	{"rbac.authorization.k8s.io", "ClusterRole", "the agent's read-only role"},
	{"rbac.authorization.k8s.io", "ClusterRoleBinding", "binds it to the agent"},
	{"apiextensions.k8s.io", "CustomResourceDefinition", "the Onboarding CRD"},
	{"spokeforge.io", "Onboarding", "the record's contracts"},
	{"cert-manager.io", "Certificate", "the workload identity and spec.certificates"},
	{"external-secrets.io", "ClusterSecretStore", "spokeforge-aws, fed by the record's own AWS role"},
	{"external-secrets.io", "ExternalSecret", "spec.secrets and registry pull secrets"},
	{"generators.external-secrets.io", "ClusterGenerator", "the ECR token generator"},
}

// ZoneKinds are the namespaced kinds an org's zones may create, on the hub
// and on its spokes alike (an AppProject's kind allowlist covers all its
// destinations). Not listed, so refused by Argo CD: Secret (a
// service-account-token Secret mints a token; secrets reach a cluster
// through its record's spec.secrets), every external-secrets.io and
// generators.external-secrets.io kind (a store or ExternalSecret reads
// through the platform's stores, on the hub the one that holds every
// cluster's credentials), Role and RoleBinding (RBAC is granted by the
// platform), Certificate and Issuer (certificates from the platform's CA),
// Endpoints and EndpointSlice (a Service pointed at the API server or any
// address), ResourceQuota and LimitRange (the platform's), Pod and
// DaemonSet (a zone is an application, not a node agent), and Argo CD's
// own kinds.
var ZoneKinds = []GroupKind{
	{"apps", "Deployment", "the zone's workloads"},
	{"apps", "StatefulSet", "the zone's workloads"},
	{"batch", "Job", "the zone's workloads"},
	{"batch", "CronJob", "the zone's workloads"},
	{"", "Service", "the zone's own endpoints"},
	{"", "ConfigMap", "the zone's settings"},
	{"", "ServiceAccount", "the zone's pods' identity, with no RBAC of its own"},
	{"", "PersistentVolumeClaim", "storage from the cluster's StorageClasses"},
	{"networking.k8s.io", "Ingress", "the zone's routes"},
	{"networking.k8s.io", "NetworkPolicy", "the zone's traffic rules"},
	{"autoscaling", "HorizontalPodAutoscaler", "the zone's scaling"},
	{"policy", "PodDisruptionBudget", "the zone's availability"},
}

// PlatformNamespaces are the hub namespaces of its platform components:
// Argo CD's (with its Secrets and every cluster's credentials), spokeforge's
// (an inCluster spoke's AWS credentials), External Secrets' and
// cert-manager's (the hub's store and CA), and default. Every kube-*
// namespace is Kubernetes' own (PlatformNamespacePrefix). An Argo CD
// installed elsewhere adds its namespace (PlatformNamespace's argoNS).
var PlatformNamespaces = []string{"argocd", onboarding.SystemNamespace, "external-secrets", "cert-manager", "default"}

// PlatformNamespacePrefix starts every namespace Kubernetes keeps for itself.
const PlatformNamespacePrefix = "kube-"

// ZoneNamespaceLabels are the labels spokeforge gives each namespace it
// creates for an org on the hub: pods there run at the Pod Security
// "restricted" level, whatever a zone ships.
var ZoneNamespaceLabels = map[string]string{
	"pod-security.kubernetes.io/enforce": "restricted",
	"pod-security.kubernetes.io/audit":   "restricted",
	"pod-security.kubernetes.io/warn":    "restricted",
}

// SpokeKindAllowed reports whether an inCluster record's spoke render may
// hold an object of this group and kind.
func SpokeKindAllowed(group, kind string) bool {
	return listed(SpokeKinds, group, kind)
}

// ZoneKindAllowed reports whether an org's zones may create this kind.
func ZoneKindAllowed(group, kind string) bool {
	return listed(ZoneKinds, group, kind)
}

func listed(l []GroupKind, group, kind string) bool {
	for _, k := range l {
		if k.Group == group && k.Kind == kind {
			return true
		}
	}
	return false
}

// PlatformNamespace reports why ns is a platform namespace of the hub (""
// when it is not); argoNS is Argo CD's namespace when known.
func PlatformNamespace(ns, argoNS string) string {
	switch {
	case ns == "argocd" || (argoNS != "" && ns == argoNS):
		return "is Argo CD's namespace on the management cluster (its Secrets, cluster credentials and Applications)"
	case strings.HasPrefix(ns, PlatformNamespacePrefix):
		return "is a Kubernetes system namespace of the management cluster"
	case ns == onboarding.SystemNamespace:
		return "is spokeforge's own namespace (the agent, the credentials helper and the AWS credentials it writes)"
	}
	for _, p := range PlatformNamespaces {
		if ns == p {
			return "is a platform namespace of the management cluster (External Secrets' and cert-manager's hold the hub's store and CA)"
		}
	}
	return ""
}
