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

// SpecFor derives the Onboarding spec from a cluster record and its names.
func SpecFor(c *v1alpha1.Cluster, n *names.Names) v1alpha1.OnboardingSpec {
	s := c.Spec
	sp := v1alpha1.OnboardingSpec{
		Cluster: c.Metadata.Name, Subject: n.Subject, AccountID: s.AccountID, Region: s.Region,
		IAMRoleArn: n.IAMRoleArn, TrustAnchorArn: s.Identity.TrustAnchorArn, ProfileArn: s.Identity.ProfileArn,
		SecretPath: n.SecretPath, Boundaries: append([]string(nil), v1alpha1.Boundaries...), ClusterSecretStore: ClusterSecretStore,
		Certificates:  []v1alpha1.ObjectRef{{Namespace: SystemNamespace, Name: IdentityCertificate}},
		Stabilization: s.Stabilization,
	}
	for i, x := range s.Secrets {
		sp.Secrets = append(sp.Secrets, v1alpha1.SecretRef{Name: n.Secrets[i].Name, ExternalSecret: v1alpha1.ObjectRef{Namespace: x.Namespace, Name: x.Name}})
	}
	for _, x := range s.Certificates {
		sp.Certificates = append(sp.Certificates, v1alpha1.ObjectRef{Namespace: x.Namespace, Name: x.Name})
	}
	seen := map[string]bool{}
	for i, r := range s.Registries {
		sp.Registries = append(sp.Registries, n.Registries[i].Name)
		for _, ns := range r.Namespaces {
			if !seen[ns] {
				seen[ns] = true
				sp.RegistrySecrets = append(sp.RegistrySecrets, v1alpha1.ObjectRef{Namespace: ns, Name: RegistrySecret})
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
			sp.Volumes = append(sp.Volumes, names.PVName(c.Metadata.Name, d))
		}
	}
	if s.GPU != nil {
		for _, g := range s.GPU.Nodes {
			mig := g.MIGStrategy
			if mig == "" {
				mig = "none"
			}
			sp.GPUNodes = append(sp.GPUNodes, v1alpha1.GPUTopology{Node: g.Name, Product: g.Product, Count: g.Count, MIGStrategy: mig})
		}
	}
	return sp
}
