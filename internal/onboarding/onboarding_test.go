package onboarding_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/onboarding"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

const clusters = "../../examples/gitops/clusters"

// example reads and checks an example cluster record, as the CMP does.
func example(t *testing.T, name string) validate.ClusterEntry {
	t.Helper()
	f := filepath.Join(clusters, name, repo.ClusterFile)
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	e, errs := repo.ParseCluster(f, data)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", f, errs)
	}
	return e
}

// derive re-checks an edited record and returns it with its names.
func derive(t *testing.T, c *v1alpha1.Cluster) (*v1alpha1.Cluster, *names.Names) {
	t.Helper()
	n, errs := validate.Cluster("cluster.yaml", nil, c)
	if len(errs) > 0 {
		t.Fatalf("edited record has findings: %v", errs)
	}
	return c, n
}

func identityCert() v1alpha1.ObjectRef {
	return v1alpha1.ObjectRef{Namespace: onboarding.SystemNamespace, Name: onboarding.IdentityCertificate}
}

func registrySecret(ns string) v1alpha1.ObjectRef {
	return v1alpha1.ObjectRef{Namespace: ns, Name: onboarding.RegistrySecret}
}

// TestSpecForExamples pins the whole spec of each example record: what the
// CMP renders into the Onboarding and what the agent and `spokeforge check`
// test the spoke against.
func TestSpecForExamples(t *testing.T) {
	boundaries := []string{"Identity", "Secrets", "Certificates", "Registry", "Queues", "Storage", "Workload"}
	for _, tc := range []struct {
		cluster string
		want    v1alpha1.OnboardingSpec
	}{
		{cluster: "gpu-east-1", want: v1alpha1.OnboardingSpec{
			Cluster:        "gpu-east-1",
			Subject:        "acme-ml/prod/us-east-1/dc-ash1/equinix/gpu-east-1",
			AccountID:      "111122223333",
			Region:         "us-east-1",
			IAMRoleArn:     "arn:aws:iam::111122223333:role/eue1-workload",
			TrustAnchorArn: "arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f",
			ProfileArn:     "arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d",
			SecretPath:     "acme-ml/us-east-1/dc-ash1/equinix/gpu-east-1",
			Boundaries:     boundaries,
			Secrets: []v1alpha1.SecretRef{
				{Name: "acme-ml/us-east-1/dc-ash1/equinix/gpu-east-1/model-api-key", ExternalSecret: v1alpha1.ObjectRef{Namespace: "inference", Name: "model-api-key"}},
				{Name: "acme-ml/us-east-1/dc-ash1/equinix/gpu-east-1/hf-token", ExternalSecret: v1alpha1.ObjectRef{Namespace: "inference", Name: "hf-token"}},
			},
			ClusterSecretStore: "spokeforge-aws",
			Certificates:       []v1alpha1.ObjectRef{identityCert(), {Namespace: "inference", Name: "inference-serving"}},
			Registries:         []string{"eue1/inference"},
			RegistrySecrets:    []v1alpha1.ObjectRef{registrySecret("inference")},
			Queues:             []string{"eue1-jobs", "eue1-results.fifo"},
			Buckets:            []string{"eue1-models"},
			StorageClass:       "spokeforge-local-block",
			// The PersistentVolumes already on the spoke (see
			// examples/gitops/rendered): a change here orphans them.
			Volumes: []string{"gpu-east-1-d866bbbb48", "gpu-east-1-3f4663d73a"},
			GPUNodes: []v1alpha1.GPUTopology{
				{Node: "gpu-node-01", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MIGStrategy: "none"},
				{Node: "gpu-node-02", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MIGStrategy: "single"},
			},
			Stabilization: true,
		}},
		{cluster: "gpu-west-2", want: v1alpha1.OnboardingSpec{
			Cluster:        "gpu-west-2",
			Subject:        "acme-ml/staging/us-west-2/colo-pdx2/coreweave/gpu-west-2",
			AccountID:      "111122223333",
			Region:         "us-west-2",
			IAMRoleArn:     "arn:aws:iam::111122223333:role/euw2-workload",
			TrustAnchorArn: "arn:aws:rolesanywhere:us-west-2:111122223333:trust-anchor/3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7",
			ProfileArn:     "arn:aws:rolesanywhere:us-west-2:111122223333:profile/9b0c1d2e-3f4a-4b5c-9d6e-7f8a9b0c1d2e",
			SecretPath:     "acme-ml/us-west-2/colo-pdx2/coreweave/gpu-west-2",
			Boundaries:     boundaries,
			Secrets: []v1alpha1.SecretRef{
				{Name: "acme-ml/us-west-2/colo-pdx2/coreweave/gpu-west-2/wandb-key", ExternalSecret: v1alpha1.ObjectRef{Namespace: "training", Name: "wandb-key"}},
			},
			ClusterSecretStore: "spokeforge-aws",
			Certificates:       []v1alpha1.ObjectRef{identityCert()},
			Registries:         []string{"euw2/training"},
			RegistrySecrets:    []v1alpha1.ObjectRef{registrySecret("training"), registrySecret("eval")},
			Queues:             []string{"euw2-batch"},
			Buckets:            []string{"euw2-checkpoints"},
			GPUNodes:           []v1alpha1.GPUTopology{{Node: "h100-a", Product: "NVIDIA-H100-80GB-HBM3", Count: 4, MIGStrategy: "mixed"}},
		}},
		// The hub itself: inCluster, no GPU, no storage, no registry.
		{cluster: "hub-local", want: v1alpha1.OnboardingSpec{
			Cluster:        "hub-local",
			Subject:        "acme-ml/prod/us-east-1/hub/aws/hub-local",
			AccountID:      "111122223333",
			Region:         "us-east-1",
			IAMRoleArn:     "arn:aws:iam::111122223333:role/hubl-workload",
			TrustAnchorArn: "arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f",
			ProfileArn:     "arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d",
			SecretPath:     "acme-ml/us-east-1/hub/aws/hub-local",
			Boundaries:     boundaries,
			Secrets: []v1alpha1.SecretRef{
				{Name: "acme-ml/us-east-1/hub/aws/hub-local/platform-settings", ExternalSecret: v1alpha1.ObjectRef{Namespace: "platform", Name: "platform-settings"}},
			},
			ClusterSecretStore: "spokeforge-aws",
			Certificates:       []v1alpha1.ObjectRef{identityCert()},
			Queues:             []string{"hubl-jobs"},
		}},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			e := example(t, tc.cluster)
			got := onboarding.SpecFor(e.Cluster, e.Names)
			if !reflect.DeepEqual(got, tc.want) {
				g, _ := json.MarshalIndent(got, "", "  ")
				w, _ := json.MarshalIndent(tc.want, "", "  ")
				t.Errorf("SpecFor(%s):\n got %s\nwant %s", tc.cluster, g, w)
			}
			if !reflect.DeepEqual(got.Boundaries, v1alpha1.Boundaries) {
				t.Errorf("boundaries %v, want v1alpha1.Boundaries %v", got.Boundaries, v1alpha1.Boundaries)
			}
			// The spec is derived, not looked up: the same record gives the same spec.
			if again := onboarding.SpecFor(e.Cluster, e.Names); !reflect.DeepEqual(again, got) {
				t.Error("SpecFor is not deterministic")
			}
		})
	}
}

// TestSpecFor covers the derivation rules one at a time, each on an edited
// gpu-east-1 record.
func TestSpecFor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(c *v1alpha1.Cluster)
		assert func(t *testing.T, c *v1alpha1.Cluster, n *names.Names, sp v1alpha1.OnboardingSpec)
	}{
		{name: "identity certificate first, then the record's in order", edit: func(c *v1alpha1.Cluster) {
			c.Spec.Certificates = []v1alpha1.Certificate{
				{Name: "zeta", Namespace: "serving", DNSNames: []string{"zeta.example.internal"}},
				{Name: "alpha", Namespace: "api", DNSNames: []string{"alpha.example.internal"}},
			}
		}, assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
			want := []v1alpha1.ObjectRef{identityCert(), {Namespace: "serving", Name: "zeta"}, {Namespace: "api", Name: "alpha"}}
			if !reflect.DeepEqual(sp.Certificates, want) {
				t.Errorf("certificates %v, want %v", sp.Certificates, want)
			}
		}},
		{name: "no record certificates still checks the identity certificate", edit: func(c *v1alpha1.Cluster) { c.Spec.Certificates = nil },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if want := []v1alpha1.ObjectRef{identityCert()}; !reflect.DeepEqual(sp.Certificates, want) {
					t.Errorf("certificates %v, want %v", sp.Certificates, want)
				}
			}},
		{name: "each secret paired with its ExternalSecret", edit: func(c *v1alpha1.Cluster) {
			c.Spec.Secrets = []v1alpha1.Secret{
				{Name: "db-password", Namespace: "api"},
				{Name: "hf-token", Namespace: "inference"},
				{Name: "hf-token", Namespace: "training"}, // one cloud secret, two namespaces
			}
		}, assert: func(t *testing.T, c *v1alpha1.Cluster, n *names.Names, sp v1alpha1.OnboardingSpec) {
			p := n.SecretPath + "/"
			want := []v1alpha1.SecretRef{
				{Name: p + "db-password", ExternalSecret: v1alpha1.ObjectRef{Namespace: "api", Name: "db-password"}},
				{Name: p + "hf-token", ExternalSecret: v1alpha1.ObjectRef{Namespace: "inference", Name: "hf-token"}},
				{Name: p + "hf-token", ExternalSecret: v1alpha1.ObjectRef{Namespace: "training", Name: "hf-token"}},
			}
			if !reflect.DeepEqual(sp.Secrets, want) {
				t.Errorf("secrets %v, want %v", sp.Secrets, want)
			}
		}},
		{name: "no secrets", edit: func(c *v1alpha1.Cluster) { c.Spec.Secrets = nil },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if sp.Secrets != nil {
					t.Errorf("secrets %v, want none", sp.Secrets)
				}
				if sp.ClusterSecretStore != onboarding.ClusterSecretStore {
					t.Errorf("clusterSecretStore %q, want %q", sp.ClusterSecretStore, onboarding.ClusterSecretStore)
				}
			}},
		{name: "registry secrets one per namespace, first seen first", edit: func(c *v1alpha1.Cluster) {
			c.Spec.Registries = []v1alpha1.Registry{
				{Purpose: "inference", Namespaces: []string{"inference", "batch"}},
				{Purpose: "tools", Namespaces: []string{"batch", "eval", "inference"}},
				{Purpose: "base", Namespaces: []string{"eval"}},
			}
		}, assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
			if want := []string{"eue1/inference", "eue1/tools", "eue1/base"}; !reflect.DeepEqual(sp.Registries, want) {
				t.Errorf("registries %v, want %v", sp.Registries, want)
			}
			want := []v1alpha1.ObjectRef{registrySecret("inference"), registrySecret("batch"), registrySecret("eval")}
			if !reflect.DeepEqual(sp.RegistrySecrets, want) {
				t.Errorf("registry secrets %v, want %v", sp.RegistrySecrets, want)
			}
		}},
		{name: "stabilization carried from the record", edit: func(c *v1alpha1.Cluster) { c.Spec.Stabilization = true },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if !sp.Stabilization {
					t.Error("stabilization false, want true")
				}
			}},
		{name: "no stabilization", edit: func(c *v1alpha1.Cluster) { c.Spec.Stabilization = false },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if sp.Stabilization {
					t.Error("stabilization true, want false")
				}
			}},
		{name: "default storage class", edit: func(c *v1alpha1.Cluster) { c.Spec.Storage.StorageClass = "" },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if sp.StorageClass != "spokeforge-local-block" {
					t.Errorf("storageClass %q, want spokeforge-local-block", sp.StorageClass)
				}
			}},
		{name: "explicit storage class", edit: func(c *v1alpha1.Cluster) { c.Spec.Storage.StorageClass = "fast-nvme" },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if sp.StorageClass != "fast-nvme" {
					t.Errorf("storageClass %q, want fast-nvme", sp.StorageClass)
				}
			}},
		{name: "storage without devices offers the class and no volumes", edit: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices = nil },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if sp.StorageClass != onboarding.DefaultStorageClass || sp.Volumes != nil {
					t.Errorf("storageClass %q volumes %v, want the default class and none", sp.StorageClass, sp.Volumes)
				}
			}},
		{name: "no storage, no class, no volumes", edit: func(c *v1alpha1.Cluster) { c.Spec.Storage = nil },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if sp.StorageClass != "" || sp.Volumes != nil {
					t.Errorf("storageClass %q volumes %v, want none", sp.StorageClass, sp.Volumes)
				}
			}},
		{name: "volumes named by names.PVName in device order", edit: func(c *v1alpha1.Cluster) {
			d := c.Spec.Storage.Devices
			c.Spec.Storage.Devices = []v1alpha1.Device{d[1], d[0], {Node: d[0].Node, Path: d[1].Path, Capacity: "1Ti", Safety: d[0].Safety}}
		}, assert: func(t *testing.T, c *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
			var want []string
			for _, d := range c.Spec.Storage.Devices {
				want = append(want, names.PVName(c.Metadata.Name, d))
			}
			if !reflect.DeepEqual(sp.Volumes, want) {
				t.Errorf("volumes %v, want %v", sp.Volumes, want)
			}
			seen := map[string]bool{}
			for _, v := range sp.Volumes {
				if seen[v] {
					t.Errorf("volume %s named twice: node and path must both count", v)
				}
				seen[v] = true
			}
		}},
		{name: "volume names follow the cluster name", edit: func(c *v1alpha1.Cluster) { c.Metadata.Name = "gpu-east-9" },
			assert: func(t *testing.T, c *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				for i, d := range c.Spec.Storage.Devices {
					if want := names.PVName("gpu-east-9", d); sp.Volumes[i] != want {
						t.Errorf("volumes[%d] %s, want %s", i, sp.Volumes[i], want)
					}
				}
				if sp.Cluster != "gpu-east-9" {
					t.Errorf("cluster %q", sp.Cluster)
				}
			}},
		{name: "migStrategy defaults to none and is kept otherwise", edit: func(c *v1alpha1.Cluster) {
			c.Spec.GPU.Nodes = []v1alpha1.GPUNode{
				{Name: "a", Product: "NVIDIA-L4", Count: 1},
				{Name: "b", Product: "NVIDIA-L4", Count: 2, MIGStrategy: "none"},
				{Name: "c", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MIGStrategy: "single"},
				{Name: "d", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MIGStrategy: "mixed", MemoryMiB: 81920},
			}
		}, assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
			want := []v1alpha1.GPUTopology{
				{Node: "a", Product: "NVIDIA-L4", Count: 1, MIGStrategy: "none"},
				{Node: "b", Product: "NVIDIA-L4", Count: 2, MIGStrategy: "none"},
				{Node: "c", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MIGStrategy: "single"},
				{Node: "d", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MIGStrategy: "mixed"},
			}
			if !reflect.DeepEqual(sp.GPUNodes, want) {
				t.Errorf("gpu nodes %v, want %v", sp.GPUNodes, want)
			}
		}},
		{name: "no gpu", edit: func(c *v1alpha1.Cluster) { c.Spec.GPU = nil },
			assert: func(t *testing.T, _ *v1alpha1.Cluster, _ *names.Names, sp v1alpha1.OnboardingSpec) {
				if sp.GPUNodes != nil {
					t.Errorf("gpu nodes %v, want none", sp.GPUNodes)
				}
			}},
		{name: "cloud names come from the derived names", edit: func(c *v1alpha1.Cluster) {
			c.Spec.ShortName = "gx9"
			c.Spec.Identity.RoleArn = "arn:aws:iam::111122223333:role/gx9-workload"
		}, assert: func(t *testing.T, _ *v1alpha1.Cluster, n *names.Names, sp v1alpha1.OnboardingSpec) {
			if sp.IAMRoleArn != "arn:aws:iam::111122223333:role/gx9-workload" || sp.IAMRoleArn != n.IAMRoleArn {
				t.Errorf("iamRoleArn %q, names %q", sp.IAMRoleArn, n.IAMRoleArn)
			}
			if want := []string{"gx9-jobs", "gx9-results.fifo"}; !reflect.DeepEqual(sp.Queues, want) {
				t.Errorf("queues %v, want %v", sp.Queues, want)
			}
			if want := []string{"gx9-models"}; !reflect.DeepEqual(sp.Buckets, want) {
				t.Errorf("buckets %v, want %v", sp.Buckets, want)
			}
			if want := []string{"gx9/inference"}; !reflect.DeepEqual(sp.Registries, want) {
				t.Errorf("registries %v, want %v", sp.Registries, want)
			}
			if sp.Subject != n.Subject || sp.SecretPath != n.SecretPath {
				t.Errorf("subject %q secretPath %q, want the names' %q %q", sp.Subject, sp.SecretPath, n.Subject, n.SecretPath)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := example(t, "gpu-east-1").Cluster
			tc.edit(c)
			c, n := derive(t, c)
			sp := onboarding.SpecFor(c, n)
			if !reflect.DeepEqual(sp.Boundaries, v1alpha1.Boundaries) {
				t.Errorf("boundaries %v, want %v", sp.Boundaries, v1alpha1.Boundaries)
			}
			if len(sp.Certificates) == 0 || sp.Certificates[0] != identityCert() {
				t.Errorf("first certificate %v, want the identity certificate", sp.Certificates)
			}
			tc.assert(t, c, n, sp)
		})
	}
}
