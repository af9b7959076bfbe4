// Package onboarding is the shape of the spokeforge.io/v1alpha1 Onboarding
// resource: its spec (the contracts a spoke must satisfy, derived from the
// cluster record) and its status (one condition per boundary plus Ready).
//
// The CMP renders the spec with SpecFor, `spokeforge check` builds the same
// spec from the record on a laptop, and the agent reads it back from the
// Onboarding on the spoke, so all three check exactly the same names.
package onboarding

import (
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
)

// Group, version and resource of the Onboarding kind.
const (
	Group      = "spokeforge.io"
	Version    = "v1alpha1"
	Resource   = "onboardings"
	Kind       = "Onboarding"
	APIVersion = Group + "/" + Version
)

// SystemNamespace holds spokeforge's own objects on the spoke.
const SystemNamespace = "spokeforge-system"

// Names of objects the CMP renders and the checks look for.
const (
	IdentityCertificate = "workload-identity"
	ClusterSecretStore  = "spokeforge-aws"
	RegistrySecret      = "spokeforge-registry"
	DefaultStorageClass = "spokeforge-local-block"
)

// Boundaries in the order seed 000 gives them; the first one not True is
// the first failed boundary.
var Boundaries = []string{"Identity", "Secrets", "Certificates", "Registry", "Queues", "Storage", "Workload"}

// ConditionReady is the summary condition.
const ConditionReady = "Ready"

// Spec is what the spoke is expected to satisfy.
type Spec struct {
	Cluster        string   `json:"cluster"`
	Subject        string   `json:"subject"`
	AccountID      string   `json:"accountID"`
	Region         string   `json:"region"`
	IAMRoleArn     string   `json:"iamRoleArn"`
	TrustAnchorArn string   `json:"trustAnchorArn"`
	ProfileArn     string   `json:"profileArn"`
	SecretPath     string   `json:"secretPath"`
	Boundaries     []string `json:"boundaries"`
	// Secrets are Secrets Manager names and the ExternalSecret delivering each.
	Secrets []SecretRef `json:"secrets,omitempty"`
	// ClusterSecretStore the ExternalSecrets read through.
	ClusterSecretStore string `json:"clusterSecretStore"`
	// Certificates are the cert-manager Certificates, the identity one first.
	Certificates []ObjectRef `json:"certificates"`
	// Registries are ECR repository names; RegistrySecrets the ExternalSecrets
	// that deliver their pull credentials.
	Registries      []string    `json:"registries,omitempty"`
	RegistrySecrets []ObjectRef `json:"registrySecrets,omitempty"`
	Queues          []string    `json:"queues,omitempty"`
	Buckets         []string    `json:"buckets,omitempty"`
	// StorageClass and Volumes are set when the record hands devices over.
	StorageClass string   `json:"storageClass,omitempty"`
	Volumes      []string `json:"volumes,omitempty"`
	GPUNodes     []GPU    `json:"gpuNodes,omitempty"`
}

// SecretRef is one Secrets Manager secret and its ExternalSecret.
type SecretRef struct {
	Name           string    `json:"name"`
	ExternalSecret ObjectRef `json:"externalSecret"`
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (r ObjectRef) String() string { return r.Namespace + "/" + r.Name }

// GPU is one GPU node's expected topology.
type GPU struct {
	Node        string `json:"node"`
	Product     string `json:"product"`
	Count       int    `json:"count"`
	MIGStrategy string `json:"migStrategy"`
}

// Status is what the agent writes on the status subresource.
type Status struct {
	ObservedGeneration  int64       `json:"observedGeneration,omitempty"`
	FirstFailedBoundary string      `json:"firstFailedBoundary"`
	CheckedAt           string      `json:"checkedAt,omitempty"`
	Connected           *Connected  `json:"connected,omitempty"`
	Conditions          []Condition `json:"conditions"`
}

// Connected is what seed 001's Connected condition says about the spoke.
type Connected struct {
	KubernetesVersion string `json:"kubernetesVersion"`
	NodeCount         int    `json:"nodeCount"`
	CheckedAt         string `json:"checkedAt"`
}

// Condition is one boundary's (or the Ready summary's) state.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	Severity           string `json:"severity,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// PVName is the PersistentVolume name the CMP gives a device.
type PVNamer func(d v1alpha1.Device) string

// SpecFor derives the Onboarding spec from a cluster record and its names.
// pvName names each device's PersistentVolume as the renderer does.
func SpecFor(c *v1alpha1.Cluster, n *names.Names, pvName PVNamer) Spec {
	s := c.Spec
	sp := Spec{
		Cluster: c.Metadata.Name, Subject: n.Subject, AccountID: s.AccountID, Region: s.Region,
		IAMRoleArn: n.IAMRoleArn, TrustAnchorArn: s.Identity.TrustAnchorArn, ProfileArn: s.Identity.ProfileArn,
		SecretPath: n.SecretPath, Boundaries: Boundaries, ClusterSecretStore: ClusterSecretStore,
		Certificates: []ObjectRef{{Namespace: SystemNamespace, Name: IdentityCertificate}},
	}
	for i, x := range s.Secrets {
		sp.Secrets = append(sp.Secrets, SecretRef{Name: n.Secrets[i].Name, ExternalSecret: ObjectRef{Namespace: x.Namespace, Name: x.Name}})
	}
	for _, x := range s.Certificates {
		sp.Certificates = append(sp.Certificates, ObjectRef{Namespace: x.Namespace, Name: x.Name})
	}
	seen := map[string]bool{}
	for i, r := range s.Registries {
		sp.Registries = append(sp.Registries, n.Registries[i].Name)
		for _, ns := range r.Namespaces {
			if !seen[ns] {
				seen[ns] = true
				sp.RegistrySecrets = append(sp.RegistrySecrets, ObjectRef{Namespace: ns, Name: RegistrySecret})
			}
		}
	}
	for _, q := range n.Queues {
		sp.Queues = append(sp.Queues, q.Name)
	}
	for _, b := range n.Buckets {
		sp.Buckets = append(sp.Buckets, b.Name)
	}
	if s.Storage != nil {
		sp.StorageClass = DefaultStorageClass
		if s.Storage.StorageClass != "" {
			sp.StorageClass = s.Storage.StorageClass
		}
		for _, d := range s.Storage.Devices {
			sp.Volumes = append(sp.Volumes, pvName(d))
		}
	}
	if s.GPU != nil {
		for _, g := range s.GPU.Nodes {
			mig := g.MIGStrategy
			if mig == "" {
				mig = "none"
			}
			sp.GPUNodes = append(sp.GPUNodes, GPU{Node: g.Name, Product: g.Product, Count: g.Count, MIGStrategy: mig})
		}
	}
	return sp
}
