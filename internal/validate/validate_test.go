package validate_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

const (
	clusterFile = "clusters/gpu-east-1/cluster.yaml"
	examples    = "../../examples/gitops"

	trustAnchorArn = "arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f"
	profileArn     = "arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d"
)

// validCluster is a record that passes every check and uses every section,
// so each case below can break exactly one field of it.
func validCluster() *v1alpha1.Cluster {
	safety := func() *v1alpha1.DeviceSafety {
		return &v1alpha1.DeviceSafety{Unpartitioned: true, Unmounted: true, NotRaidMember: true, CheckedAt: "2026-11-30T10:00:00Z", CheckedBy: "lsblk -f"}
	}
	return &v1alpha1.Cluster{
		APIVersion: v1alpha1.GroupVersion,
		Kind:       v1alpha1.KindCluster,
		Metadata: v1alpha1.ObjectMeta{
			Name:   "gpu-east-1",
			Labels: map[string]string{"gpu": "a100", "example.com/team": "ml-platform"},
		},
		Spec: v1alpha1.ClusterSpec{
			ShortName:   "eue1",
			Account:     "acme-ml",
			AccountID:   "111122223333",
			Environment: "prod",
			Region:      "us-east-1",
			Zone:        "dc-ash1",
			Provider:    "equinix",
			Project:     "gpu-fleet",
			Org:         "acme",
			Connection: v1alpha1.Connection{
				Server:      "https://10.20.0.10:6443",
				Credentials: &v1alpha1.Credentials{Type: "bearerToken", SecretName: "argocd-cluster"},
			},
			Identity: v1alpha1.Identity{
				TrustAnchorArn:         trustAnchorArn,
				ProfileArn:             profileArn,
				RoleArn:                "arn:aws:iam::111122223333:role/eue1-workload",
				Issuer:                 v1alpha1.IssuerRef{Name: "spokeforge-ca", Kind: "ClusterIssuer", Group: "cert-manager.io"},
				SessionDurationSeconds: 3600,
			},
			Network: v1alpha1.Network{PodCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", DNSServiceIP: "10.43.0.10"},
			GPU: &v1alpha1.GPU{Nodes: []v1alpha1.GPUNode{
				{Name: "gpu-node-01", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MemoryMiB: 81920},
				{Name: "gpu-node-02", Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MemoryMiB: 81920, MIGStrategy: "single"},
			}},
			Storage: &v1alpha1.Storage{Devices: []v1alpha1.Device{
				{Node: "gpu-node-01", Path: "/dev/disk/by-id/nvme-SAMSUNG_0001", Capacity: "3576Gi", Safety: safety()},
				{Node: "gpu-node-02", Path: "/dev/disk/by-id/nvme-SAMSUNG_0002", Capacity: "3576Gi", Safety: safety()},
			}},
			Queues:  []v1alpha1.Queue{{Purpose: "jobs"}, {Purpose: "jobs", FIFO: true}},
			Buckets: []v1alpha1.Bucket{{Purpose: "models"}},
			Secrets: []v1alpha1.Secret{
				{Name: "model-api-key", Namespace: "inference", Keys: []string{"token", "api.key"}},
				{Name: "hf-token", Namespace: "inference", RefreshInterval: "1h30m"},
			},
			Registries:   []v1alpha1.Registry{{Purpose: "inference", Namespaces: []string{"inference", "batch"}}},
			Certificates: []v1alpha1.Certificate{{Name: "inference-serving", Namespace: "inference", DNSNames: []string{"inference.example.internal", "*.inference.example.internal"}}},
			Workloads: []v1alpha1.Workload{
				{Name: "inference", Namespace: "inference", Path: "workloads/inference"},
				{Name: "trainer", Namespace: "batch", Path: "apps/trainer", RepoURL: "https://git.example.com/ml/trainer.git", TargetRevision: "v1.2.3"},
			},
		},
	}
}

// finding is one expected error: its field path and a phrase its message contains.
type finding struct{ path, phrase string }

// assertFindings checks that errs are exactly want (in any order), that
// each names file, and that no message repeats any of secrets.
func assertFindings(t *testing.T, file string, errs record.Errors, want []finding, secrets ...string) {
	t.Helper()
	used := make([]bool, len(errs))
	for _, w := range want {
		found := false
		for i, e := range errs {
			if !used[i] && e.Path == w.path && strings.Contains(e.Msg, w.phrase) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing finding at %s containing %q", w.path, w.phrase)
		}
	}
	for i, e := range errs {
		if !used[i] {
			t.Errorf("unexpected finding: %s: %s", e.Path, e.Msg)
		}
		if e.File != file {
			t.Errorf("finding %s names file %q, want %q", e.Path, e.File, file)
		}
		for _, s := range secrets {
			if strings.Contains(e.Msg, s) || strings.Contains(e.Error(), s) {
				t.Errorf("finding %s repeats the secret %q: %s", e.Path, s, e.Msg)
			}
		}
	}
}

// checkCluster runs validate.Cluster and checks its names are returned
// exactly when there are no findings.
func checkCluster(t *testing.T, lines record.Lines, c *v1alpha1.Cluster) record.Errors {
	t.Helper()
	n, errs := validate.Cluster(clusterFile, lines, c)
	switch {
	case len(errs) > 0 && n != nil:
		t.Errorf("names returned beside %d findings", len(errs))
	case len(errs) == 0 && n == nil:
		t.Error("no names returned for a valid record")
	}
	return errs
}

func TestClusterValid(t *testing.T) {
	c := validCluster()
	n, errs := validate.Cluster(clusterFile, nil, c)
	assertFindings(t, clusterFile, errs, nil)
	if n == nil {
		t.Fatal("no names for a valid record")
	}
	want, _ := names.Derive(c)
	if !reflect.DeepEqual(n, want) {
		t.Errorf("names = %+v, want names.Derive's %+v", n, want)
	}
}

// The example records are valid as they stand (parsed strictly, then checked).
func TestClusterExamplesValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examples, "clusters", "*", repo.ClusterFile))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example clusters: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			e, errs := repo.ParseCluster(f, data)
			if len(errs) > 0 {
				t.Fatalf("findings on a valid example:\n%v", errs)
			}
			if e.Names == nil {
				t.Fatal("no derived names for a valid record")
			}
		})
	}
}

func TestCluster(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.c2VjcmV0"
	for _, tc := range []struct {
		name    string
		mutate  func(c *v1alpha1.Cluster)
		want    []finding
		secrets []string // values no message may repeat
	}{
		// header
		{name: "apiVersion", mutate: func(c *v1alpha1.Cluster) { c.APIVersion = "spokeforge.io/v1" },
			want: []finding{{"apiVersion", "must be spokeforge.io/v1alpha1"}}},
		{name: "kind", mutate: func(c *v1alpha1.Cluster) { c.Kind = "Organization" },
			want: []finding{{"kind", "must be Cluster"}}},

		// metadata.name
		{name: "name empty", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Name = "" },
			want: []finding{{"metadata.name", "required"}}},
		{name: "name 43 characters", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Name = strings.Repeat("a", 43) },
			want: []finding{{"metadata.name", "at most 42"}}},
		{name: "name 42 characters is fine", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Name = strings.Repeat("a", 42); c.Spec.Workloads = nil }},
		{name: "name uppercase", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Name = "GPU-East-1" },
			want: []finding{{"metadata.name", "no uppercase"}}},
		{name: "name trailing hyphen", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Name = "gpu-east-" },
			want: []finding{{"metadata.name", "no leading or trailing hyphen"}}},
		{name: "name underscore", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Name = "gpu_east_1" },
			want: []finding{{"metadata.name", "lowercase letters, digits and hyphens"}}},

		{name: "name in-cluster is reserved", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Name = "in-cluster"; c.Spec.Workloads = nil },
			want: []finding{{"metadata.name", `"in-cluster" is reserved: Argo CD's name for the management cluster`}}},

		// spec.org and the hub's namespaces
		{name: "org required with workloads", mutate: func(c *v1alpha1.Cluster) { c.Spec.Org = "" },
			want: []finding{{"spec.org", "required with spec.workloads"}}},
		{name: "org not needed without workloads", mutate: func(c *v1alpha1.Cluster) { c.Spec.Org = ""; c.Spec.Workloads = nil }},
		{name: "project naming an org's AppProject", mutate: func(c *v1alpha1.Cluster) { c.Spec.Project = "org-globex" },
			want: []finding{{"spec.project", "names an org's AppProject"}}},
		{name: "org not a slug", mutate: func(c *v1alpha1.Cluster) { c.Spec.Org = "Acme" },
			want: []finding{{"spec.org", "lowercase letters"}}},
		{name: "inCluster workload in kube-system", mutate: func(c *v1alpha1.Cluster) {
			inClusterRecord(c)
			c.Spec.Workloads[1].Namespace = "kube-system"
		}, want: []finding{{"spec.workloads[1].namespace", `"kube-system" is a Kubernetes system namespace of the management cluster`}, noHubWorkloads}},
		{name: "inCluster workload in argocd", mutate: func(c *v1alpha1.Cluster) {
			inClusterRecord(c)
			c.Spec.Workloads[0].Namespace = "argocd"
		}, want: []finding{{"spec.workloads[0].namespace", "Argo CD's namespace"}, noHubWorkloads}},
		{name: "inCluster secret in argocd", mutate: func(c *v1alpha1.Cluster) {
			inClusterRecord(c)
			c.Spec.Secrets[0].Namespace = "argocd"
			c.Spec.Workloads = nil
		}, want: []finding{{"spec.secrets[0].namespace", "Argo CD's namespace"}}},
		{name: "inCluster registry in kube-public", mutate: func(c *v1alpha1.Cluster) {
			inClusterRecord(c)
			c.Spec.Registries[0].Namespaces[1] = "kube-public"
			c.Spec.Workloads = nil
		}, want: []finding{{"spec.registries[0].namespaces[1]", "Kubernetes system namespace"}}},
		{name: "inCluster certificate in spokeforge-system", mutate: func(c *v1alpha1.Cluster) {
			inClusterRecord(c)
			c.Spec.Certificates[0].Namespace = "spokeforge-system"
			c.Spec.Workloads = nil
		}, want: []finding{{"spec.certificates[0].namespace", "spokeforge's own namespace"}}},
		{name: "inCluster with storage devices", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Connection = v1alpha1.Connection{InCluster: true}
			c.Spec.GPU, c.Spec.Workloads = nil, nil
		}, want: []finding{{"spec.storage", "takes no local volumes or StorageClass from a record"}}},
		{name: "inCluster with GPU nodes", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Connection = v1alpha1.Connection{InCluster: true}
			c.Spec.Storage, c.Spec.Workloads = nil, nil
		}, want: []finding{{"spec.gpu", "whose nodes a record does not label"}}},
		{name: "inCluster with workloads", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Connection = v1alpha1.Connection{InCluster: true}
			c.Spec.Storage, c.Spec.GPU = nil, nil
		}, want: []finding{noHubWorkloads}},
		{name: "inCluster secret in external-secrets", mutate: func(c *v1alpha1.Cluster) {
			inClusterRecord(c)
			c.Spec.Workloads = nil
			c.Spec.Secrets[0].Namespace = "external-secrets"
		}, want: []finding{{"spec.secrets[0].namespace", "platform namespace of the management cluster"}}},
		{name: "a spoke's workload in kube-system is its own business", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[0].Namespace = "kube-system" }},

		// labels
		{name: "label key invalid", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["bad key!"] = "x" },
			want: []finding{{"metadata.labels", `key "bad key!" is not a Kubernetes label key`}}},
		{name: "label key prefix not a DNS subdomain", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["Example.COM/team"] = "x" },
			want: []finding{{"metadata.labels", "is not a Kubernetes label key"}}},
		{name: "label key name too long", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels[strings.Repeat("k", 64)] = "x" },
			want: []finding{{"metadata.labels", "is not a Kubernetes label key"}}},
		{name: "label value with space", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["gpu"] = "a 100" },
			want: []finding{{"metadata.labels.gpu", `"a 100" is not a Kubernetes label value`}}},
		{name: "label value too long", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["gpu"] = strings.Repeat("v", 64) },
			want: []finding{{"metadata.labels.gpu", "is not a Kubernetes label value"}}},
		{name: "label value empty is fine", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["gpu"] = "" }},
		{name: "label prefix argocd.argoproj.io", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["argocd.argoproj.io/secret-type"] = "cluster" },
			want: []finding{{"metadata.labels.argocd.argoproj.io/secret-type", "the argocd.argoproj.io/ prefix belongs to Argo CD"}}},
		{name: "label prefix spokeforge.io", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["spokeforge.io/cluster"] = "other" },
			want: []finding{{"metadata.labels.spokeforge.io/cluster", "the spokeforge.io/ prefix"}}},
		{name: "label prefix subdomain of kubernetes.io", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["node.kubernetes.io/role"] = "gpu" },
			want: []finding{{"metadata.labels.node.kubernetes.io/role", "the node.kubernetes.io/ prefix"}}},
		{name: "label prefix that only ends like a reserved one is fine", mutate: func(c *v1alpha1.Cluster) { c.Metadata.Labels["myspokeforge.io/team"] = "x" }},

		// slugs
		{name: "shortName empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.ShortName = "" },
			want: []finding{{"spec.shortName", "required"}, {"spec.identity.roleArn", "differs from the derived role"}}},
		{name: "shortName uppercase", mutate: func(c *v1alpha1.Cluster) { c.Spec.ShortName = "EUE1" },
			want: []finding{{"spec.shortName", "lowercase letters, digits and hyphens"}, {"spec.identity.roleArn", `differs from the derived role "EUE1-workload"`}}},
		{name: "shortName 21 characters", mutate: func(c *v1alpha1.Cluster) { c.Spec.ShortName = strings.Repeat("e", 21) },
			want: []finding{{"spec.shortName", "is 21 characters; at most 20"}, {"spec.identity.roleArn", "differs from the derived role"}}},
		{name: "account", mutate: func(c *v1alpha1.Cluster) { c.Spec.Account = "acme_ml" },
			want: []finding{{"spec.account", "lowercase letters"}}},
		{name: "environment empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.Environment = "" },
			want: []finding{{"spec.environment", "required"}}},
		{name: "zone", mutate: func(c *v1alpha1.Cluster) { c.Spec.Zone = "dc/ash1" },
			want: []finding{{"spec.zone", "lowercase letters"}}},
		{name: "provider", mutate: func(c *v1alpha1.Cluster) { c.Spec.Provider = strings.Repeat("p", 33) },
			want: []finding{{"spec.provider", "at most 32"}}},
		{name: "project", mutate: func(c *v1alpha1.Cluster) { c.Spec.Project = "GPU_Fleet" },
			want: []finding{{"spec.project", "lowercase letters"}}},
		{name: "project empty is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Project = "" }},

		// accountID: the ARNs that carried the old account now differ from it
		{name: "accountID 11 digits", mutate: func(c *v1alpha1.Cluster) { c.Spec.AccountID = "11112222333" },
			want: []finding{
				{"spec.accountID", "must be a 12-digit AWS account ID"},
				{"spec.identity.trustAnchorArn", "account 111122223333 differs from spec.accountID 11112222333"},
				{"spec.identity.profileArn", "differs from spec.accountID"},
				{"spec.identity.roleArn", "differs from spec.accountID"},
			}},
		{name: "accountID letters", mutate: func(c *v1alpha1.Cluster) { c.Spec.AccountID = "11112222333x" },
			want: []finding{
				{"spec.accountID", "12-digit"},
				{"spec.identity.trustAnchorArn", "differs"},
				{"spec.identity.profileArn", "differs"},
				{"spec.identity.roleArn", "differs"},
			}},

		// region
		{name: "region without number", mutate: func(c *v1alpha1.Cluster) { c.Spec.Region = "us-east" },
			want: []finding{{"spec.region", `"us-east" is not an AWS region name`}}},
		{name: "region uppercase", mutate: func(c *v1alpha1.Cluster) { c.Spec.Region = "US-EAST-1" },
			want: []finding{{"spec.region", "is not an AWS region name"}}},
		{name: "region empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.Region = "" },
			want: []finding{{"spec.region", "required"}}},
		{name: "account ID empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.AccountID = "" },
			want: []finding{{"spec.accountID", "required"}}},
		{name: "region govcloud is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Region = "us-gov-west-1" }},

		// connection
		{name: "inCluster and server", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.InCluster = true; hubless(c) },
			want: []finding{
				{"spec.connection", "set inCluster or server, not both"},
				{"spec.connection.credentials", "not used with inCluster"},
			}},
		{name: "inCluster with credentials", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Connection = v1alpha1.Connection{InCluster: true, Credentials: &v1alpha1.Credentials{Type: "bearerToken"}}
			hubless(c)
		}, want: []finding{{"spec.connection.credentials", "not used with inCluster"}}},
		{name: "inCluster alone is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection = v1alpha1.Connection{InCluster: true}; hubless(c) }},
		{name: "neither inCluster nor server", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "" },
			want: []finding{{"spec.connection", "set inCluster: true or server"}}},
		{name: "server with user information", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://admin:hunter2-pw@10.20.0.10:6443" },
			want:    []finding{{"spec.connection.server", "must not carry user information"}},
			secrets: []string{"hunter2-pw", "admin:"}},
		{name: "server with user only", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://sometoken@10.20.0.10:6443" },
			want:    []finding{{"spec.connection.server", "must not carry user information"}},
			secrets: []string{"sometoken"}},
		{name: "server http", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "http://10.20.0.10:6443" },
			want: []finding{{"spec.connection.server", `"http://10.20.0.10:6443" must be an https URL with a host`}}},
		{name: "server without host", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https:///api" },
			want: []finding{{"spec.connection.server", "must be an https URL with a host"}}},
		{name: "server not a URL", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://10.20.0.10:port" },
			want: []finding{{"spec.connection.server", "is not a URL"}}},
		{name: "server with query", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://10.20.0.10:6443/?timeout=1s" },
			want: []finding{{"spec.connection.server", "must not have a query"}}},
		{name: "server with fragment", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://10.20.0.10:6443/#x" },
			want: []finding{{"spec.connection.server", "must not have a query"}}},
		// servers that reach the management cluster under another spelling
		{name: "server is the in-cluster address with a trailing slash", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://kubernetes.default.svc/" },
			want: []finding{{"spec.connection.server", "Argo CD's in-cluster address"}}},
		{name: "server is the in-cluster address", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://kubernetes.default.svc" },
			want: []finding{{"spec.connection.server", "Argo CD's in-cluster address"}}},
		{name: "server kubernetes.default.svc with port", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://kubernetes.default.svc:443" },
			want: []finding{{"spec.connection.server", "Kubernetes API service of the cluster Argo CD runs in"}}},
		{name: "server kubernetes.default", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://kubernetes.default" },
			want: []finding{{"spec.connection.server", "Kubernetes API service"}}},
		{name: "server kubernetes", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://kubernetes:443" },
			want: []finding{{"spec.connection.server", "Kubernetes API service"}}},
		{name: "server cluster.local with trailing dot and capitals", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Connection.Server = "https://Kubernetes.Default.SVC.cluster.local./"
		}, want: []finding{{"spec.connection.server", "Kubernetes API service"}}},
		{name: "server custom cluster domain", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://kubernetes.default.svc.hub.example" },
			want: []finding{{"spec.connection.server", "Kubernetes API service"}}},
		{name: "server localhost is a spoke (loopback dials the pod, not the hub)", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://localhost:6443" }},
		{name: "server sub.localhost is a spoke (loopback dials the pod, not the hub)", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://api.localhost" }},
		{name: "server 127.0.0.1 is a spoke (loopback dials the pod, not the hub)", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://127.0.0.1:6443" }},
		{name: "server 127.8.9.10 is a spoke (loopback dials the pod, not the hub)", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://127.8.9.10" }},
		{name: "server ::1 is a spoke (loopback dials the pod, not the hub)", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://[::1]:6443" }},
		{name: "server IPv4-mapped loopback is a spoke (loopback dials the pod, not the hub)", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://[::ffff:127.0.0.1]:6443" }},
		{name: "server 0.0.0.0 is a spoke (loopback dials the pod, not the hub)", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://0.0.0.0:6443" }},
		{name: "server short numeric form", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://127.1:6443" },
			want: []finding{{"spec.connection.server", "not a canonical IP address"}}},
		{name: "server decimal form", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://2130706433" },
			want: []finding{{"spec.connection.server", "not a canonical IP address"}}},
		{name: "server hex form", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://0x7f.0.0.1" },
			want: []finding{{"spec.connection.server", "not a canonical IP address"}}},
		{name: "server octal form", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://0177.0.0.1" },
			want: []finding{{"spec.connection.server", "not a canonical IP address"}}},
		{name: "server whose name merely starts with kubernetes is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://kubernetes.example.com:6443" }},
		{name: "server hex-looking DNS name is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Server = "https://cafe.be:6443" }},
		{name: "server without credentials", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials = nil },
			want: []finding{{"spec.connection.credentials", "required with server"}}},
		{name: "credentials.type wrong", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.Type = token },
			want:    []finding{{"spec.connection.credentials.type", "must be bearerToken or clientCertificate"}},
			secrets: []string{token}},
		{name: "credentials.type empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.Type = "" },
			want: []finding{{"spec.connection.credentials.type", "must be bearerToken or clientCertificate"}}},
		{name: "credentials.type clientCertificate is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.Type = "clientCertificate" }},
		{name: "inline token", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.Token = token },
			want:    []finding{{"spec.connection.credentials.token", "an inline token would put a credential in git"}},
			secrets: []string{token}},
		{name: "inline client key", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.ClientKeyData = "LS0tLS1CRUdJTi1rZXk=" },
			want:    []finding{{"spec.connection.credentials.clientKeyData", "inline key data would put a credential in git"}},
			secrets: []string{"LS0tLS1CRUdJTi1rZXk="}},
		{name: "exec plugin", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Connection.Credentials.Exec = map[string]any{"command": "aws", "args": []any{"eks", "get-token"}}
		}, want: []finding{{"spec.connection.credentials.exec", "exec plugins are refused"}}},
		{name: "auth provider", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.AuthProvider = map[string]any{"name": "oidc"} },
			want: []finding{{"spec.connection.credentials.authProvider", "auth-provider plugins are refused"}}},
		{name: "token file", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.TokenFile = "/home/me/.kube/token" },
			want: []finding{{"spec.connection.credentials.tokenFile", "token files are refused"}}, secrets: []string{"/home/me/.kube/token"}},
		{name: "secretName holding a credential", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.SecretName = token },
			want:    []finding{{"spec.connection.credentials.secretName", "never the credential itself"}},
			secrets: []string{token}},
		{name: "secretName 129 characters", mutate: func(c *v1alpha1.Cluster) { c.Spec.Connection.Credentials.SecretName = strings.Repeat("s", 129) },
			want: []finding{{"spec.connection.credentials.secretName", "at most 128"}}},

		// identity ARNs
		{name: "trustAnchorArn not an ARN", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.TrustAnchorArn = "trust-anchor/abc" },
			want: []finding{{"spec.identity.trustAnchorArn", "is not a Roles Anywhere trust-anchor ARN"}}},
		{name: "trustAnchorArn is a profile ARN", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.TrustAnchorArn = profileArn },
			want: []finding{{"spec.identity.trustAnchorArn", "is not a Roles Anywhere trust-anchor ARN"}}},
		{name: "trustAnchorArn empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.TrustAnchorArn = "" },
			want: []finding{{"spec.identity.trustAnchorArn", "is not a Roles Anywhere trust-anchor ARN"}}},
		{name: "trustAnchorArn other account", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.TrustAnchorArn = strings.Replace(trustAnchorArn, "111122223333", "999988887777", 1)
		}, want: []finding{{"spec.identity.trustAnchorArn", "account 999988887777 differs from spec.accountID 111122223333"}}},
		{name: "profileArn is a trust-anchor ARN", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.ProfileArn = trustAnchorArn },
			want: []finding{{"spec.identity.profileArn", "is not a Roles Anywhere profile ARN"}}},
		{name: "profileArn other account", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.ProfileArn = strings.Replace(profileArn, "111122223333", "999988887777", 1)
		}, want: []finding{{"spec.identity.profileArn", "account 999988887777 differs from spec.accountID"}}},
		{name: "profileArn in GovCloud partition is fine", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.ProfileArn = strings.Replace(profileArn, "arn:aws:", "arn:aws-us-gov:", 1)
		}},
		{name: "roleArn not an IAM role ARN", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.RoleArn = "arn:aws:iam::111122223333:user/eue1-workload" },
			want: []finding{{"spec.identity.roleArn", "is not an IAM role ARN"}}},
		{name: "roleArn other account", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.RoleArn = "arn:aws:iam::999988887777:role/eue1-workload" },
			want: []finding{{"spec.identity.roleArn", "account 999988887777 differs from spec.accountID"}}},
		{name: "roleArn other role", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.RoleArn = "arn:aws:iam::111122223333:role/gpu-workload" },
			want: []finding{{"spec.identity.roleArn", `role "gpu-workload" differs from the derived role "eue1-workload"`}}},
		{name: "roleArn with path differs", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.RoleArn = "arn:aws:iam::111122223333:role/spoke/eue1-workload"
		}, want: []finding{{"spec.identity.roleArn", "differs from the derived role"}}},
		{name: "roleArn empty is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.RoleArn = "" }},
		{name: "session too short", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.SessionDurationSeconds = 899 },
			want: []finding{{"spec.identity.sessionDurationSeconds", "899 is outside Roles Anywhere's 900-43200 seconds"}}},
		{name: "session too long", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.SessionDurationSeconds = 43201 },
			want: []finding{{"spec.identity.sessionDurationSeconds", "outside"}}},

		// issuer
		{name: "issuer name empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.Issuer.Name = "" },
			want: []finding{{"spec.identity.issuer.name", "required"}}},
		{name: "issuer name not an object name", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.Issuer.Name = "Spokeforge_CA" },
			want: []finding{{"spec.identity.issuer.name", `"Spokeforge_CA" is not a Kubernetes object name`}}},
		{name: "issuer group not a DNS subdomain", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.Issuer.Group = "Cert_Manager"
			c.Spec.Identity.Issuer.Kind = ""
		}, want: []finding{{"spec.identity.issuer.group", "is not an API group"}}},
		{name: "cert-manager group needs ClusterIssuer or Issuer", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.Issuer.Kind = "AWSPCAClusterIssuer" },
			want: []finding{{"spec.identity.issuer.kind", `must be ClusterIssuer or Issuer for cert-manager.io, got "AWSPCAClusterIssuer"`}}},
		{name: "default group needs ClusterIssuer or Issuer", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.Issuer.Group = ""
			c.Spec.Identity.Issuer.Kind = "clusterissuer"
		}, want: []finding{{"spec.identity.issuer.kind", "must be ClusterIssuer or Issuer"}}},
		{name: "cert-manager Issuer is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Identity.Issuer.Kind = "Issuer" }},
		{name: "external group with its own kind is fine", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.Issuer = v1alpha1.IssuerRef{Name: "pca", Group: "awspca.cert-manager.io", Kind: "AWSPCAClusterIssuer"}
		}},
		{name: "external group needs an identifier kind", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.Issuer = v1alpha1.IssuerRef{Name: "pca", Group: "awspca.cert-manager.io", Kind: "aws-pca"}
		}, want: []finding{{"spec.identity.issuer.kind", `"aws-pca" is not a Kubernetes kind`}}},
		{name: "external kind too long", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Identity.Issuer = v1alpha1.IssuerRef{Name: "pca", Group: "example.com", Kind: "K" + strings.Repeat("x", 63)}
		}, want: []finding{{"spec.identity.issuer.kind", "is not a Kubernetes kind"}}},

		// network
		{name: "podCIDR not a CIDR", mutate: func(c *v1alpha1.Cluster) { c.Spec.Network.PodCIDR = "10.42.0.0/33" },
			want: []finding{{"spec.network.podCIDR", `"10.42.0.0/33" is not a CIDR`}}},
		{name: "serviceCIDR not a CIDR", mutate: func(c *v1alpha1.Cluster) { c.Spec.Network.ServiceCIDR = "10.43.0.0" },
			want: []finding{{"spec.network.serviceCIDR", "is not a CIDR"}}},
		{name: "podCIDR contains serviceCIDR", mutate: func(c *v1alpha1.Cluster) { c.Spec.Network.PodCIDR = "10.0.0.0/8" },
			want: []finding{{"spec.network.serviceCIDR", "10.43.0.0/16 overlaps podCIDR 10.0.0.0/8"}}},
		{name: "serviceCIDR contains podCIDR", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Network.ServiceCIDR = "10.40.0.0/14"
		}, want: []finding{{"spec.network.serviceCIDR", "overlaps podCIDR 10.42.0.0/16"}}},
		{name: "dnsServiceIP outside serviceCIDR", mutate: func(c *v1alpha1.Cluster) { c.Spec.Network.DNSServiceIP = "10.42.0.10" },
			want: []finding{{"spec.network.dnsServiceIP", "10.42.0.10 is outside serviceCIDR 10.43.0.0/16"}}},
		{name: "dnsServiceIP not an IP", mutate: func(c *v1alpha1.Cluster) { c.Spec.Network.DNSServiceIP = "kube-dns" },
			want: []finding{{"spec.network.dnsServiceIP", `"kube-dns" is not an IP address`}}},
		{name: "IPv6 network is fine", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Network = v1alpha1.Network{PodCIDR: "fd00:10:42::/56", ServiceCIDR: "fd00:10:43::/112", DNSServiceIP: "fd00:10:43::a"}
		}},

		// gpu
		{name: "gpu node name", mutate: func(c *v1alpha1.Cluster) { c.Spec.GPU.Nodes[0].Name = "GPU_Node" },
			want: []finding{{"spec.gpu.nodes[0].name", `"GPU_Node" is not a Kubernetes node name`}}},
		{name: "gpu node listed twice", mutate: func(c *v1alpha1.Cluster) { c.Spec.GPU.Nodes[1].Name = "gpu-node-01" },
			want: []finding{{"spec.gpu.nodes[1].name", `node "gpu-node-01" listed twice`}}},
		{name: "gpu product empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.GPU.Nodes[0].Product = "" },
			want: []finding{{"spec.gpu.nodes[0].product", "must be a GPU product label value"}}},
		{name: "gpu product with spaces", mutate: func(c *v1alpha1.Cluster) { c.Spec.GPU.Nodes[1].Product = "NVIDIA A100" },
			want: []finding{{"spec.gpu.nodes[1].product", "must be a GPU product label value"}}},
		{name: "gpu count zero", mutate: func(c *v1alpha1.Cluster) { c.Spec.GPU.Nodes[0].Count = 0 },
			want: []finding{{"spec.gpu.nodes[0].count", "0 must be 1-64"}}},
		{name: "gpu count 65", mutate: func(c *v1alpha1.Cluster) { c.Spec.GPU.Nodes[0].Count = 65 },
			want: []finding{{"spec.gpu.nodes[0].count", "must be 1-64"}}},
		{name: "gpu memory negative", mutate: func(c *v1alpha1.Cluster) { c.Spec.GPU.Nodes[0].MemoryMiB = -1 },
			want: []finding{{"spec.gpu.nodes[0].memoryMiB", "must not be negative"}}},
		{name: "gpu migStrategy", mutate: func(c *v1alpha1.Cluster) { c.Spec.GPU.Nodes[1].MIGStrategy = "all" },
			want: []finding{{"spec.gpu.nodes[1].migStrategy", `must be none, single or mixed, got "all"`}}},

		// storage
		{name: "storage device without safety evidence", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[0].Safety = nil },
			want: []finding{{"spec.storage.devices[0].safety", "refused: no safety evidence"}}},
		{name: "storage device maybe partitioned", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[1].Safety.Unpartitioned = false },
			want: []finding{{"spec.storage.devices[1].safety.unpartitioned", "it may hold a partition table"}}},
		{name: "storage device maybe mounted", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[0].Safety.Unmounted = false },
			want: []finding{{"spec.storage.devices[0].safety.unmounted", "it may be mounted"}}},
		{name: "storage device maybe a RAID member", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[0].Safety.NotRaidMember = false },
			want: []finding{{"spec.storage.devices[0].safety.notRaidMember", "RAID"}}},
		{name: "storage safety with no proofs", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Storage.Devices[0].Safety = &v1alpha1.DeviceSafety{CheckedAt: "2026-11-30T10:00:00Z"}
		}, want: []finding{
			{"spec.storage.devices[0].safety.unpartitioned", "refused"},
			{"spec.storage.devices[0].safety.unmounted", "refused"},
			{"spec.storage.devices[0].safety.notRaidMember", "refused"},
		}},
		{name: "storage safety checkedAt", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[0].Safety.CheckedAt = "2026-11-30" },
			want: []finding{{"spec.storage.devices[0].safety.checkedAt", "must be an RFC 3339 time"}}},
		{name: "storage device path outside /dev", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[0].Path = "/mnt/disk0" },
			want: []finding{{"spec.storage.devices[0].path", "must be a device path under /dev"}}},
		{name: "storage device listed twice", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[1] = c.Spec.Storage.Devices[0] },
			want: []finding{{"spec.storage.devices[1].path", "already listed at devices[0]"}}},
		{name: "same device path on another node is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[1].Path = c.Spec.Storage.Devices[0].Path }},
		{name: "storage device node", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[0].Node = "" },
			want: []finding{{"spec.storage.devices[0].node", "is not a Kubernetes node name"}}},
		{name: "storage capacity", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.Devices[0].Capacity = "3.5TB" },
			want: []finding{{"spec.storage.devices[0].capacity", "is not a Kubernetes quantity"}}},
		{name: "storage class", mutate: func(c *v1alpha1.Cluster) { c.Spec.Storage.StorageClass = "Local_NVMe" },
			want: []finding{{"spec.storage.storageClass", "lowercase letters"}}},

		// duplicates
		{name: "queue listed twice", mutate: func(c *v1alpha1.Cluster) { c.Spec.Queues = append(c.Spec.Queues, v1alpha1.Queue{Purpose: "jobs"}) },
			want: []finding{{"spec.queues[2].purpose", "already listed at index 0"}}},
		{name: "FIFO queue listed twice", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Queues = append(c.Spec.Queues, v1alpha1.Queue{Purpose: "jobs", FIFO: true})
		}, want: []finding{{"spec.queues[2].purpose", "already listed at index 1"}}},
		{name: "bucket listed twice", mutate: func(c *v1alpha1.Cluster) { c.Spec.Buckets = append(c.Spec.Buckets, v1alpha1.Bucket{Purpose: "models"}) },
			want: []finding{{"spec.buckets[1].purpose", `bucket "models" already listed at index 0`}}},
		{name: "secret listed twice", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Secrets = append(c.Spec.Secrets, v1alpha1.Secret{Name: "hf-token", Namespace: "inference"})
		}, want: []finding{{"spec.secrets[2].name", `secret "inference/hf-token" already listed at index 1`}}},
		{name: "same secret in another namespace is fine", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Secrets = append(c.Spec.Secrets, v1alpha1.Secret{Name: "hf-token", Namespace: "batch"})
		}},
		{name: "registry listed twice", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Registries = append(c.Spec.Registries, v1alpha1.Registry{Purpose: "inference", Namespaces: []string{"other"}})
		}, want: []finding{{"spec.registries[1].purpose", `registry "inference" already listed at index 0`}}},
		{name: "workload listed twice", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Workloads = append(c.Spec.Workloads, v1alpha1.Workload{Name: "inference", Namespace: "other", Path: "x"})
		}, want: []finding{{"spec.workloads[2].name", `workload "inference" already listed at index 0`}}},

		// secrets
		{name: "secret key with a space", mutate: func(c *v1alpha1.Cluster) { c.Spec.Secrets[0].Keys[1] = "api key" },
			want: []finding{{"spec.secrets[0].keys[1]", `"api key" is not a Secret key`}}},
		{name: "secret key with a slash", mutate: func(c *v1alpha1.Cluster) { c.Spec.Secrets[0].Keys[0] = "a/b" },
			want: []finding{{"spec.secrets[0].keys[0]", "is not a Secret key"}}},
		{name: "secret refreshInterval", mutate: func(c *v1alpha1.Cluster) { c.Spec.Secrets[1].RefreshInterval = "1 hour" },
			want: []finding{{"spec.secrets[1].refreshInterval", "must be a duration such as 1h"}}},
		{name: "secret namespace", mutate: func(c *v1alpha1.Cluster) { c.Spec.Secrets[1].Namespace = "" },
			want: []finding{{"spec.secrets[1].namespace", "required"}}},
		{name: "secret name clashing with the ARN suffix", mutate: func(c *v1alpha1.Cluster) { c.Spec.Secrets[1].Name = "db-secret" },
			want: []finding{{"spec.secrets[1].name", "clashes with the ARN's random suffix"}}},

		// registries, certificates, queues and buckets
		{name: "registry without namespaces", mutate: func(c *v1alpha1.Cluster) { c.Spec.Registries[0].Namespaces = nil },
			want: []finding{{"spec.registries[0].namespaces", "list at least one namespace"}}},
		{name: "registry namespace", mutate: func(c *v1alpha1.Cluster) { c.Spec.Registries[0].Namespaces[1] = "Batch" },
			want: []finding{{"spec.registries[0].namespaces[1]", "lowercase letters"}}},
		{name: "certificate without dnsNames", mutate: func(c *v1alpha1.Cluster) { c.Spec.Certificates[0].DNSNames = nil },
			want: []finding{{"spec.certificates[0].dnsNames", "list at least one DNS name"}}},
		{name: "certificate dnsName", mutate: func(c *v1alpha1.Cluster) { c.Spec.Certificates[0].DNSNames[0] = "inference_example" },
			want: []finding{{"spec.certificates[0].dnsNames[0]", `"inference_example" is not a DNS name`}}},
		{name: "certificate issuer kind", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Certificates[0].Issuer = &v1alpha1.IssuerRef{Name: "ca", Kind: "CA"}
		}, want: []finding{{"spec.certificates[0].issuer.kind", "must be ClusterIssuer or Issuer"}}},
		{name: "certificate issuer name", mutate: func(c *v1alpha1.Cluster) { c.Spec.Certificates[0].Issuer = &v1alpha1.IssuerRef{Kind: "Issuer"} },
			want: []finding{{"spec.certificates[0].issuer.name", "required"}}},
		{name: "queue purpose", mutate: func(c *v1alpha1.Cluster) { c.Spec.Queues[0].Purpose = "Jobs" },
			want: []finding{{"spec.queues[0].purpose", "lowercase letters"}}},
		{name: "derived bucket name too long", mutate: func(c *v1alpha1.Cluster) { c.Spec.Buckets[0].Purpose = strings.Repeat("m", 60) },
			want: []finding{{"spec.buckets[0].purpose", "derived S3 bucket name"}}},
		{name: "derived names are not checked once shortName is broken", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.ShortName = strings.Repeat("e", 21)
			c.Spec.Identity.RoleArn = ""
			c.Spec.Buckets[0].Purpose = strings.Repeat("m", 60)
		}, want: []finding{{"spec.shortName", "at most 20"}}},

		// workloads
		{name: "workload path with ..", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[0].Path = "workloads/../secrets" },
			want: []finding{{"spec.workloads[0].path", "must be a clean relative path"}}},
		{name: "workload path absolute", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[0].Path = "/etc" },
			want: []finding{{"spec.workloads[0].path", `"/etc" must be a relative path`}}},
		{name: "workload path empty", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[0].Path = "" },
			want: []finding{{"spec.workloads[0].path", "required"}}},
		{name: "workload repoURL http", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[1].RepoURL = "http://git.example.com/ml/trainer.git" },
			want: []finding{{"spec.workloads[1].repoURL", "must be an https://, ssh:// or user@host:path git URL"}}},
		{name: "workload repoURL with password", mutate: func(c *v1alpha1.Cluster) {
			c.Spec.Workloads[1].RepoURL = "https://deploy:ghp_s3cretvalue@git.example.com/ml/trainer.git"
		}, want: []finding{{"spec.workloads[1].repoURL", "must not carry user information"}},
			secrets: []string{"ghp_s3cretvalue"}},
		{name: "workload repoURL scp form is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[1].RepoURL = "git@git.example.com:ml/trainer.git" }},
		{name: "workload targetRevision", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[1].TargetRevision = "main..dev" },
			want: []finding{{"spec.workloads[1].targetRevision", "is not a git branch, tag or commit"}}},
		{name: "workload name too long for the Application", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[0].Name = strings.Repeat("w", 53) },
			want: []finding{{"spec.workloads[0].name", "at most 52"}}},
		{name: "workload name filling the Application name is fine", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[0].Name = strings.Repeat("w", 52) }},
		{name: "workload namespace", mutate: func(c *v1alpha1.Cluster) { c.Spec.Workloads[0].Namespace = "-inference" },
			want: []finding{{"spec.workloads[0].namespace", "lowercase letters"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validCluster()
			tc.mutate(c)
			assertFindings(t, clusterFile, checkCluster(t, nil, c), tc.want, tc.secrets...)
		})
	}
}

// A finding points at the line of the field it names, as the record's
// decoder recorded it.
func TestClusterFindingLine(t *testing.T) {
	path := filepath.Join(examples, "clusters", "gpu-east-1", repo.ClusterFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(prefix string) int {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for n := 1; sc.Scan(); n++ {
			if strings.HasPrefix(sc.Text(), prefix) {
				return n
			}
		}
		t.Fatalf("no line starting %q", prefix)
		return 0
	}
	for _, tc := range []struct {
		name   string
		mutate func(c *v1alpha1.Cluster)
		path   string
		line   int
	}{
		{"region", func(c *v1alpha1.Cluster) { c.Spec.Region = "east" }, "spec.region", lineOf("  region:")},
		{"dnsServiceIP", func(c *v1alpha1.Cluster) { c.Spec.Network.DNSServiceIP = "10.0.0.1" }, "spec.network.dnsServiceIP", lineOf("    dnsServiceIP:")},
		// A field the record does not set points where its parent's content
		// starts.
		{"project", func(c *v1alpha1.Cluster) { c.Spec.Project = "Fleet" }, "spec.project", lineOf("  shortName:")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c v1alpha1.Cluster
			lines, errs := repo.DecodeBytes(clusterFile, data, &c)
			if errs != nil {
				t.Fatal(errs)
			}
			tc.mutate(&c)
			got := checkCluster(t, lines, &c)
			if len(got) != 1 || got[0].Path != tc.path || got[0].Line != tc.line {
				t.Fatalf("got %v, want one finding at %s line %d", got, tc.path, tc.line)
			}
		})
	}
}

func TestRepoURLProblem(t *testing.T) {
	for _, tc := range []struct {
		url, want string // want is a phrase of the problem; "" means none
	}{
		{"https://github.com/acme/gitops.git", ""},
		{"https://git.example.com:8443/acme/gitops", ""},
		{"ssh://git@github.com/acme/gitops.git", ""},
		{"git@github.com:acme/gitops.git", ""},
		{"http://github.com/acme/gitops.git", "must be an https://, ssh:// or user@host:path"},
		{"git://github.com/acme/gitops.git", "must be an https://"},
		{"file:///srv/gitops", "must be an https://"},
		{"github.com/acme/gitops", "must be an https://"},
		{"", "must be an https://"},
		{"https:///acme/gitops", "must have a host"},
		{"https:github.com/acme", "must have a host"},
		{"https://token@github.com/acme/gitops", "must not carry user information"},
		{"https://user:pw@github.com/acme/gitops", "must not carry user information"},
		{"ssh://git:pw@github.com/acme/gitops", "must not carry a password"},
		{"https://github.com/acme/gitops?ref=main", "must not have a query, fragment or spaces"},
		{"https://github.com/acme/gitops#main", "must not have a query, fragment or spaces"},
		{"https://github.com/acme/git ops", "must not have a query, fragment or spaces"},
		{"https://github.com:port/acme", "is not a URL"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			got := validate.RepoURLProblem(tc.url)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("RepoURLProblem(%q) = %q, want %q", tc.url, got, tc.want)
			}
			if strings.Contains(got, "pw") || strings.Contains(got, "token") {
				t.Errorf("RepoURLProblem(%q) repeats user information: %q", tc.url, got)
			}
		})
	}
}

func TestRevisionProblem(t *testing.T) {
	for _, tc := range []struct {
		rev string
		ok  bool
	}{
		{"HEAD", true},
		{"main", true},
		{"v1.2.3", true},
		{"release/2026.1", true},
		{"feature_x-y", true},
		{"0c5d6a3e1f2b4c8d9e0f1a2b3c4d5e6f01234567", true},
		{".hidden", true},
		{strings.Repeat("r", 255), true},
		{strings.Repeat("r", 256), false},
		{"", false},
		{"-rf", false},
		{"/main", false},
		{"main/", false},
		{"a//b", false},
		{"main..dev", false},
		{"main.lock", false},
		{"has space", false},
		{"main~1", false},
		{"refs/heads/main^{}", false},
		{"@{-1}", false},
	} {
		t.Run(tc.rev, func(t *testing.T) {
			got := validate.RevisionProblem(tc.rev)
			if (got == "") != tc.ok {
				t.Errorf("RevisionProblem(%q) = %q, want ok=%v", tc.rev, got, tc.ok)
			}
			if !tc.ok && !strings.Contains(got, "is not a git branch, tag or commit") {
				t.Errorf("RevisionProblem(%q) = %q, want the git ref phrase", tc.rev, got)
			}
		})
	}
}

func TestPathProblem(t *testing.T) {
	for _, tc := range []struct {
		path, want string // want is a phrase of the problem; "" means none
	}{
		{"workloads/inference", ""},
		{"products/acme/checkout/checkout-rc", ""},
		{"a/b.c/d_e-f", ""},
		{".config/app", ""},
		{strings.Repeat("p", 512), ""},
		{strings.Repeat("p", 513), "must be a relative path"},
		{"", "required"},
		{"/etc/passwd", "must be a relative path"},
		{"-rf", "must be a relative path"},
		{"a b", "must be a relative path"},
		{`a\b`, "must be a relative path"},
		{"apps/*", "must be a relative path"},
		{"..", "must be a clean relative path"},
		{"a/../../b", "must be a clean relative path"},
		{"./a", "must be a clean relative path"},
		{"a/./b", "must be a clean relative path"},
		{"a//b", "must be a clean relative path"},
		{"a/", "must be a clean relative path"},
		{".", "must be a clean relative path"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got := validate.PathProblem(tc.path)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("PathProblem(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

func validOrg() *v1alpha1.Organization {
	return &v1alpha1.Organization{
		APIVersion: v1alpha1.GroupVersion, Kind: v1alpha1.KindOrganization,
		Metadata: v1alpha1.ObjectMeta{Name: "acme", Labels: map[string]string{"tier": "gold"}},
		Spec:     v1alpha1.OrganizationSpec{ClusterAllowlist: []string{"gpu-east-1", "hub-local"}},
	}
}

func TestOrg(t *testing.T) {
	const file = "orgs/acme.yaml"
	for _, tc := range []struct {
		name   string
		file   string // default file
		mutate func(o *v1alpha1.Organization)
		want   []finding
	}{
		{name: "valid", mutate: func(*v1alpha1.Organization) {}},
		{name: "empty allowlist is fine", mutate: func(o *v1alpha1.Organization) { o.Spec.ClusterAllowlist = nil }},
		{name: "apiVersion", mutate: func(o *v1alpha1.Organization) { o.APIVersion = "v1" },
			want: []finding{{"apiVersion", `must be spokeforge.io/v1alpha1, got "v1"`}}},
		{name: "kind", mutate: func(o *v1alpha1.Organization) { o.Kind = "Org" },
			want: []finding{{"kind", `must be Organization, got "Org"`}}},
		{name: "name differs from file name", mutate: func(o *v1alpha1.Organization) { o.Metadata.Name = "globex" },
			want: []finding{{"metadata.name", `"globex" differs from the file name "acme"`}}},
		{name: "name empty", mutate: func(o *v1alpha1.Organization) { o.Metadata.Name = "" },
			want: []finding{{"metadata.name", "required"}}},
		{name: "name uppercase in a matching file", file: "orgs/Acme.yaml", mutate: func(o *v1alpha1.Organization) { o.Metadata.Name = "Acme" },
			want: []finding{{"metadata.name", "lowercase letters"}}},
		{name: "name 51 characters", file: "orgs/" + strings.Repeat("o", 51) + ".yaml", mutate: func(o *v1alpha1.Organization) { o.Metadata.Name = strings.Repeat("o", 51) },
			want: []finding{{"metadata.name", "at most 50"}}},
		{name: "reserved label", mutate: func(o *v1alpha1.Organization) { o.Metadata.Labels["argocd.argoproj.io/instance"] = "x" },
			want: []finding{{"metadata.labels.argocd.argoproj.io/instance", "prefix belongs to Argo CD"}}},
		{name: "hub namespaces", mutate: func(o *v1alpha1.Organization) { o.Spec.HubNamespaces = []string{"checkout-rc", "acme-tools"} }},
		{name: "hub namespace duplicate", mutate: func(o *v1alpha1.Organization) { o.Spec.HubNamespaces = []string{"checkout-rc", "checkout-rc"} },
			want: []finding{{"spec.hubNamespaces[1]", "already listed at index 0"}}},
		{name: "hub namespace not a name", mutate: func(o *v1alpha1.Organization) { o.Spec.HubNamespaces = []string{"Tools"} },
			want: []finding{{"spec.hubNamespaces[0]", "lowercase letters"}}},
		{name: "hub namespaces of the platform", mutate: func(o *v1alpha1.Organization) {
			o.Spec.HubNamespaces = []string{"argocd", "kube-system", "spokeforge-system", "external-secrets", "cert-manager", "default"}
		}, want: []finding{
			{"spec.hubNamespaces[0]", "Argo CD's namespace"}, {"spec.hubNamespaces[1]", "Kubernetes system namespace"},
			{"spec.hubNamespaces[2]", "spokeforge's own namespace"}, {"spec.hubNamespaces[3]", "platform namespace"},
			{"spec.hubNamespaces[4]", "platform namespace"}, {"spec.hubNamespaces[5]", "platform namespace"},
		}},
		{name: "allowlist duplicate", mutate: func(o *v1alpha1.Organization) {
			o.Spec.ClusterAllowlist = append(o.Spec.ClusterAllowlist, "gpu-east-1")
		}, want: []finding{{"spec.clusterAllowlist[2]", `"gpu-east-1" already listed at index 0`}}},
		{name: "allowlist bad cluster name", mutate: func(o *v1alpha1.Organization) { o.Spec.ClusterAllowlist[1] = "Hub_Local" },
			want: []finding{{"spec.clusterAllowlist[1]", `"Hub_Local" is not a cluster name`}}},
		{name: "allowlist cluster name too long", mutate: func(o *v1alpha1.Organization) { o.Spec.ClusterAllowlist[0] = strings.Repeat("c", 43) },
			want: []finding{{"spec.clusterAllowlist[0]", "is not a cluster name"}}},
		{name: "allowlist empty cluster name", mutate: func(o *v1alpha1.Organization) { o.Spec.ClusterAllowlist[0] = "" },
			want: []finding{{"spec.clusterAllowlist[0]", `"" is not a cluster name`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := file
			if tc.file != "" {
				f = tc.file
			}
			o := validOrg()
			tc.mutate(o)
			assertFindings(t, f, validate.Org(f, nil, o), tc.want)
		})
	}
}

func validProduct() *v1alpha1.Product {
	return &v1alpha1.Product{
		APIVersion: v1alpha1.GroupVersion, Kind: v1alpha1.KindProduct,
		Metadata: v1alpha1.ObjectMeta{Name: "checkout"},
		Spec: v1alpha1.ProductSpec{
			Source: &v1alpha1.ProductSource{RepoURL: "https://git.example.com/acme/checkout.git", TargetRevision: "main"},
			Delivery: v1alpha1.Delivery{Zones: []v1alpha1.Zone{
				{Name: "checkout-rc", Environment: "pre-release"},
				{Name: "checkout-prod", Environment: "release", Cluster: "gpu-east-1", Namespace: "checkout", Path: "deploy/prod", ApplicationPath: "apps/checkout-prod"},
			}},
		},
	}
}

func TestProduct(t *testing.T) {
	const file = "products/acme/checkout.yaml"
	for _, tc := range []struct {
		name    string
		mutate  func(p *v1alpha1.Product)
		want    []finding
		secrets []string
	}{
		{name: "valid", mutate: func(*v1alpha1.Product) {}},
		{name: "no source is fine", mutate: func(p *v1alpha1.Product) { p.Spec.Source = nil }},
		{name: "kind", mutate: func(p *v1alpha1.Product) { p.Kind = "Cluster" },
			want: []finding{{"kind", "must be Product"}}},
		{name: "name differs from file name", mutate: func(p *v1alpha1.Product) { p.Metadata.Name = "cart" },
			want: []finding{{"metadata.name", `"cart" differs from the file name "checkout"`}}},
		{name: "label value", mutate: func(p *v1alpha1.Product) { p.Metadata.Labels = map[string]string{"team": "-payments"} },
			want: []finding{{"metadata.labels.team", "is not a Kubernetes label value"}}},
		{name: "no zones", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones = nil },
			want: []finding{{"spec.delivery.zones", "list at least one zone"}}},
		{name: "zone name empty", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[0].Name = "" },
			want: []finding{{"spec.delivery.zones[0].name", "required"}}},
		{name: "zone name too long for its Application", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[0].Name = strings.Repeat("z", 56) },
			want: []finding{{"spec.delivery.zones[0].name", "at most 55"}}},
		{name: "zone name filling its Application name is fine", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[0].Name = strings.Repeat("z", 55) }},
		{name: "zone environment", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[1].Environment = "Release" },
			want: []finding{{"spec.delivery.zones[1].environment", "lowercase letters"}}},
		{name: "zone namespace", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[1].Namespace = "check_out" },
			want: []finding{{"spec.delivery.zones[1].namespace", "lowercase letters"}}},
		{name: "zone cluster", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[1].Cluster = "GPU-East-1" },
			want: []finding{{"spec.delivery.zones[1].cluster", `"GPU-East-1" is not a cluster name`}}},
		{name: "zone path escaping the source", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[1].Path = "../../etc" },
			want: []finding{{"spec.delivery.zones[1].path", "must be a clean relative path"}}},
		{name: "zone path absolute", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[1].Path = "/deploy" },
			want: []finding{{"spec.delivery.zones[1].path", "must be a relative path"}}},
		{name: "zone applicationPath", mutate: func(p *v1alpha1.Product) { p.Spec.Delivery.Zones[1].ApplicationPath = "apps//x" },
			want: []finding{{"spec.delivery.zones[1].applicationPath", "must be a clean relative path"}}},
		{name: "source repoURL http", mutate: func(p *v1alpha1.Product) { p.Spec.Source.RepoURL = "http://git.example.com/acme/checkout.git" },
			want: []finding{{"spec.source.repoURL", "must be an https://, ssh:// or user@host:path git URL"}}},
		{name: "source repoURL with a token", mutate: func(p *v1alpha1.Product) {
			p.Spec.Source.RepoURL = "https://x-access-token:ghs_T0kenValue@git.example.com/acme/checkout.git"
		}, want: []finding{{"spec.source.repoURL", `"https://***@git.example.com/acme/checkout.git" must not carry user information`}},
			secrets: []string{"ghs_T0kenValue", "x-access-token"}},
		{name: "source targetRevision", mutate: func(p *v1alpha1.Product) { p.Spec.Source.TargetRevision = "-main" },
			want: []finding{{"spec.source.targetRevision", "is not a git branch, tag or commit"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validProduct()
			tc.mutate(p)
			assertFindings(t, file, validate.Product(file, nil, p), tc.want, tc.secrets...)
		})
	}
}

// The example orgs and products are valid as they stand.
func TestOrgProductExamplesValid(t *testing.T) {
	orgs, _ := filepath.Glob(filepath.Join(examples, "orgs", "*.yaml"))
	products, _ := filepath.Glob(filepath.Join(examples, "products", "*", "*.yaml"))
	if len(orgs) == 0 || len(products) == 0 {
		t.Fatal("no example orgs or products")
	}
	for _, f := range append(orgs, products...) {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var errs record.Errors
			if strings.Contains(f, "/orgs/") {
				var o v1alpha1.Organization
				lines, derrs := repo.DecodeBytes(f, data, &o)
				errs = append(derrs, validate.Org(f, lines, &o)...)
			} else {
				var p v1alpha1.Product
				lines, derrs := repo.DecodeBytes(f, data, &p)
				errs = append(derrs, validate.Product(f, lines, &p)...)
			}
			if len(errs) > 0 {
				t.Fatalf("findings on a valid example:\n%v", errs)
			}
		})
	}
}

// crossFinding is one expected cross-file finding.
type crossFinding struct {
	file, path string
	code       record.Code
	phrase     string
}

// fixture is a small valid repo: two clusters, two orgs, two products.
type fixture struct {
	clusters []validate.ClusterEntry
	orgs     []validate.OrgEntry
	products []validate.ProductEntry
}

// clusterEntry is validCluster renamed, as a loaded repo holds it: with
// the names validate.Cluster derived.
func clusterEntry(t *testing.T, name, short string, edit func(*v1alpha1.Cluster)) validate.ClusterEntry {
	t.Helper()
	c := validCluster()
	c.Metadata.Name = name
	c.Spec.ShortName = short
	c.Spec.Identity.RoleArn = ""
	if name == "gpu-west-2" {
		c.Spec.Org = "globex"
	}
	if edit != nil {
		edit(c)
	}
	file := "clusters/" + name + "/cluster.yaml"
	n, errs := validate.Cluster(file, nil, c)
	if len(errs) > 0 {
		t.Fatalf("fixture cluster %s: %v", name, errs)
	}
	return validate.ClusterEntry{Loc: validate.Loc{File: file, Lines: record.Lines{"spec.shortName": 8, "spec.queues[0].purpose": 40}}, Cluster: c, Names: n}
}

// inClusterRecord makes c the management cluster, without the storage and
// GPU nodes an inCluster record may not have.
func inClusterRecord(c *v1alpha1.Cluster) {
	c.Spec.Connection = v1alpha1.Connection{InCluster: true}
	c.Spec.Storage, c.Spec.GPU = nil, nil
}

// hubless drops what an inCluster record may not have.
func hubless(c *v1alpha1.Cluster) { c.Spec.Storage, c.Spec.GPU, c.Spec.Workloads = nil, nil, nil }

var noHubWorkloads = finding{"spec.workloads", "where an org's applications are zones"}

// hubRecord makes a fixture cluster the management cluster, without what
// an inCluster record may not have.
func hubRecord(c *v1alpha1.Cluster) {
	c.Spec.Connection = v1alpha1.Connection{InCluster: true}
	hubless(c)
}

func newFixture(t *testing.T) *fixture {
	org := func(name string, allow ...string) validate.OrgEntry {
		o := validOrg()
		o.Metadata.Name = name
		o.Spec.ClusterAllowlist = allow
		return validate.OrgEntry{Loc: validate.Loc{File: "orgs/" + name + ".yaml"}, Org: o}
	}
	product := func(org, name string, zones ...v1alpha1.Zone) validate.ProductEntry {
		p := validProduct()
		p.Metadata.Name = name
		p.Spec.Delivery.Zones = zones
		return validate.ProductEntry{Loc: validate.Loc{File: "products/" + org + "/" + name + ".yaml"}, Org: org, Product: p}
	}
	acme := org("acme", "gpu-east-1")
	acme.Org.Spec.HubNamespaces = []string{"checkout-rc"}
	return &fixture{
		clusters: []validate.ClusterEntry{
			clusterEntry(t, "gpu-east-1", "eue1", nil),
			clusterEntry(t, "gpu-west-2", "euw2", nil),
		},
		orgs: []validate.OrgEntry{acme, org("globex", "gpu-west-2")},
		products: []validate.ProductEntry{
			product("acme", "checkout",
				v1alpha1.Zone{Name: "checkout-rc", Environment: "pre-release"},
				v1alpha1.Zone{Name: "checkout-prod", Environment: "release", Cluster: "gpu-east-1"}),
			product("globex", "trainer",
				v1alpha1.Zone{Name: "trainer-staging", Environment: "pre-release", Cluster: "gpu-west-2"}),
		},
	}
}

func TestCrossFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, f *fixture)
		want   []crossFinding
	}{
		{name: "valid", mutate: func(*testing.T, *fixture) {}},
		{name: "same shortName collides on every derived cloud name", mutate: func(t *testing.T, f *fixture) {
			f.clusters[1] = clusterEntry(t, "gpu-west-2", "eue1", nil)
		}, want: []crossFinding{
			{"clusters/gpu-west-2/cluster.yaml", "spec.shortName", record.CodeCloudNameCollision,
				`derived IAM role "eue1-workload" collides with cluster gpu-east-1 (clusters/gpu-east-1/cluster.yaml:8 spec.shortName)`},
			{"clusters/gpu-west-2/cluster.yaml", "spec.queues[0].purpose", record.CodeCloudNameCollision,
				`derived SQS queue "eue1-jobs" collides with cluster gpu-east-1 (clusters/gpu-east-1/cluster.yaml:40 spec.queues[0].purpose)`},
			{"clusters/gpu-west-2/cluster.yaml", "spec.queues[1].purpose", record.CodeCloudNameCollision, `derived SQS queue "eue1-jobs.fifo" collides`},
			{"clusters/gpu-west-2/cluster.yaml", "spec.buckets[0].purpose", record.CodeCloudNameCollision, `derived S3 bucket "eue1-models" collides`},
			{"clusters/gpu-west-2/cluster.yaml", "spec.registries[0].purpose", record.CodeCloudNameCollision, `derived ECR repository "eue1/inference" collides`},
		}},
		{name: "different shortName and purpose giving the same queue", mutate: func(t *testing.T, f *fixture) {
			// eue1 + x-jobs and eue1-x + jobs are both eue1-x-jobs.
			f.clusters[0] = clusterEntry(t, "gpu-east-1", "eue1", func(c *v1alpha1.Cluster) {
				c.Spec.Queues = append(c.Spec.Queues, v1alpha1.Queue{Purpose: "x-jobs"})
			})
			f.clusters[1] = clusterEntry(t, "gpu-west-2", "eue1-x", nil)
		}, want: []crossFinding{
			{"clusters/gpu-west-2/cluster.yaml", "spec.queues[0].purpose", record.CodeCloudNameCollision,
				`derived SQS queue "eue1-x-jobs" collides with cluster gpu-east-1 (clusters/gpu-east-1/cluster.yaml:0 spec.queues[2].purpose)`},
		}},
		{name: "different shortName and purpose giving the same bucket", mutate: func(t *testing.T, f *fixture) {
			f.clusters[0] = clusterEntry(t, "gpu-east-1", "eue1", func(c *v1alpha1.Cluster) {
				c.Spec.Buckets = append(c.Spec.Buckets, v1alpha1.Bucket{Purpose: "x-models"})
			})
			f.clusters[1] = clusterEntry(t, "gpu-west-2", "eue1-x", nil)
		}, want: []crossFinding{
			{"clusters/gpu-west-2/cluster.yaml", "spec.buckets[0].purpose", record.CodeCloudNameCollision, `derived S3 bucket "eue1-x-models" collides with cluster gpu-east-1`},
		}},
		{name: "a cluster without names (it has findings of its own) claims nothing", mutate: func(t *testing.T, f *fixture) {
			e := clusterEntry(t, "gpu-west-2", "eue1", nil)
			e.Names = nil
			f.clusters[1] = e
		}},
		{name: "duplicate cluster name", mutate: func(t *testing.T, f *fixture) {
			e := clusterEntry(t, "gpu-east-1", "eue1", nil)
			e.File = "clusters/gpu-east-1-copy/cluster.yaml"
			f.clusters = append(f.clusters, e)
		}, want: []crossFinding{
			{"clusters/gpu-east-1-copy/cluster.yaml", "metadata.name", record.CodeDuplicateCluster,
				`cluster "gpu-east-1" is also defined in clusters/gpu-east-1/cluster.yaml`},
		}},
		{name: "unknown cluster in an allowlist", mutate: func(t *testing.T, f *fixture) {
			f.orgs[0].Org.Spec.ClusterAllowlist = append(f.orgs[0].Org.Spec.ClusterAllowlist, "gpu-north-9")
		}, want: []crossFinding{
			{"orgs/acme.yaml", "spec.clusterAllowlist[1]", record.CodeUnknownCluster,
				`unknown cluster "gpu-north-9" (no clusters/gpu-north-9/cluster.yaml)`},
		}},
		{name: "unknown cluster in a zone", mutate: func(t *testing.T, f *fixture) {
			f.products[0].Product.Spec.Delivery.Zones[1].Cluster = "gpu-north-9"
		}, want: []crossFinding{
			{"products/acme/checkout.yaml", "spec.delivery.zones[1].cluster", record.CodeUnknownCluster, `unknown cluster "gpu-north-9"`},
		}},
		{name: "zone on the management cluster needs no record", mutate: func(t *testing.T, f *fixture) {
			f.products[1].Product.Spec.Delivery.Zones[0].Cluster = ""
			f.orgs[1].Org.Spec.HubNamespaces = []string{"trainer-staging"}
		}},
		{name: "zone on the management cluster outside its org's hub namespaces", mutate: func(t *testing.T, f *fixture) {
			f.products[1].Product.Spec.Delivery.Zones[0].Cluster = ""
		}, want: []crossFinding{
			{"products/globex/trainer.yaml", "spec.delivery.zones[0].name", record.CodeHubNamespace,
				`zone "trainer-staging" runs on the management cluster in namespace "trainer-staging", which org globex does not list in spec.hubNamespaces (orgs/globex.yaml): its AppProject org-globex refuses it`},
		}},
		{name: "zone on the management cluster in another org's hub namespace", mutate: func(t *testing.T, f *fixture) {
			z := &f.products[1].Product.Spec.Delivery.Zones[0]
			z.Cluster, z.Namespace = "", "checkout-rc"
		}, want: []crossFinding{
			{"products/globex/trainer.yaml", "spec.delivery.zones[0].namespace", record.CodeHubNamespace, `namespace "checkout-rc", which org globex does not list`},
		}},
		{name: "zone on the inCluster cluster outside its org's hub namespaces", mutate: func(t *testing.T, f *fixture) {
			f.clusters[0] = clusterEntry(t, "gpu-east-1", "eue1", hubRecord)
			f.products[0].Product.Spec.Delivery.Zones[1].Namespace = "argocd"
		}, want: []crossFinding{
			{"products/acme/checkout.yaml", "spec.delivery.zones[1].namespace", record.CodeHubNamespace, `zone "checkout-prod" runs on the management cluster in namespace "argocd"`},
		}},
		{name: "spoke zone in a platform namespace", mutate: func(t *testing.T, f *fixture) {
			f.products[0].Product.Spec.Delivery.Zones[1].Namespace = "external-secrets"
		}, want: []crossFinding{
			{"products/acme/checkout.yaml", "spec.delivery.zones[1].namespace", record.CodeHubNamespace, `platform namespace of the management cluster`},
		}},
		{name: "spoke zone in a hub namespace", mutate: func(t *testing.T, f *fixture) {
			f.products[1].Product.Spec.Delivery.Zones[0].Namespace = "checkout-rc"
		}, want: []crossFinding{
			{"products/globex/trainer.yaml", "spec.delivery.zones[0].namespace", record.CodeHubNamespace, `a hub namespace of org acme (orgs/acme.yaml)`},
		}},
		{name: "hub namespace of two orgs", mutate: func(t *testing.T, f *fixture) {
			f.orgs[1].Org.Spec.HubNamespaces = []string{"checkout-rc"}
		}, want: []crossFinding{
			{"orgs/globex.yaml", "spec.hubNamespaces[0]", record.CodeHubNamespace, `hub namespace "checkout-rc" is also listed by org acme (orgs/acme.yaml)`},
		}},
		{name: "inCluster record delivers secrets into an org's hub namespace", mutate: func(t *testing.T, f *fixture) {
			f.clusters[0] = clusterEntry(t, "gpu-east-1", "eue1", func(c *v1alpha1.Cluster) {
				hubRecord(c)
				c.Spec.Secrets[0].Namespace = "checkout-rc"
			})
		}, want: []crossFinding{
			{"clusters/gpu-east-1/cluster.yaml", "spec.secrets[0].namespace", record.CodeHubNamespace, `namespace "checkout-rc" of the management cluster is a hub namespace of org acme`},
			{"products/acme/checkout.yaml", "spec.delivery.zones[1].name", record.CodeHubNamespace, `zone "checkout-prod" runs on the management cluster`},
		}},
		{name: "duplicate zone across products", mutate: func(t *testing.T, f *fixture) {
			f.products[1].Product.Spec.Delivery.Zones[0].Name = "checkout-rc"
		}, want: []crossFinding{
			{"products/globex/trainer.yaml", "spec.delivery.zones[0].name", record.CodeDuplicateZone,
				`zone "checkout-rc" is also defined in products/acme/checkout.yaml; zone names are unique (the Application is product-checkout-rc)`},
			{"products/globex/trainer.yaml", "spec.delivery.zones[0].name", record.CodeHubNamespace, `uses namespace "checkout-rc", a hub namespace of org acme`},
		}},
		{name: "duplicate zone in one product", mutate: func(t *testing.T, f *fixture) {
			z := &f.products[0].Product.Spec.Delivery
			z.Zones = append(z.Zones, v1alpha1.Zone{Name: "checkout-prod", Environment: "release", Cluster: "gpu-east-1"})
		}, want: []crossFinding{
			{"products/acme/checkout.yaml", "spec.delivery.zones[2].name", record.CodeDuplicateZone, "is also defined in products/acme/checkout.yaml"},
		}},
		{name: "workload org unknown", mutate: func(t *testing.T, f *fixture) {
			f.clusters[0] = clusterEntry(t, "gpu-east-1", "eue1", func(c *v1alpha1.Cluster) { c.Spec.Org = "initech" })
		}, want: []crossFinding{
			{"clusters/gpu-east-1/cluster.yaml", "spec.org", record.CodeWorkloadOrg, `unknown org "initech" (no orgs/initech.yaml)`},
		}},
		{name: "workload org that does not allowlist the cluster", mutate: func(t *testing.T, f *fixture) {
			f.clusters[0] = clusterEntry(t, "gpu-east-1", "eue1", func(c *v1alpha1.Cluster) { c.Spec.Org = "globex" })
		}, want: []crossFinding{
			{"clusters/gpu-east-1/cluster.yaml", "spec.org", record.CodeWorkloadOrg, `org "globex" does not list "gpu-east-1" in its spec.clusterAllowlist`},
		}},
		{name: "two inCluster records", mutate: func(t *testing.T, f *fixture) {
			f.clusters[0] = clusterEntry(t, "gpu-east-1", "eue1", hubRecord)
			f.clusters[1] = clusterEntry(t, "gpu-west-2", "euw2", hubRecord)
		}, want: []crossFinding{
			{"clusters/gpu-west-2/cluster.yaml", "spec.connection.inCluster", record.CodeSecondInCluster, "cluster gpu-east-1 (clusters/gpu-east-1/cluster.yaml) is already the management cluster"},
			{"products/acme/checkout.yaml", "spec.delivery.zones[1].name", record.CodeHubNamespace, `zone "checkout-prod" runs on the management cluster`},
			{"products/globex/trainer.yaml", "spec.delivery.zones[0].name", record.CodeHubNamespace, `zone "trainer-staging" runs on the management cluster`},
		}},
		{name: "product of an unknown org", mutate: func(t *testing.T, f *fixture) {
			f.orgs = f.orgs[:1]
		}, want: []crossFinding{
			{"products/globex/trainer.yaml", "metadata.name", record.CodeUnknownOrg, `product of unknown org "globex" (no orgs/globex.yaml)`},
			{"clusters/gpu-west-2/cluster.yaml", "spec.org", record.CodeWorkloadOrg, `unknown org "globex"`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.mutate(t, f)
			errs := validate.CrossFile(f.clusters, f.orgs, f.products, validate.Present{})
			used := make([]bool, len(errs))
			for _, w := range tc.want {
				found := false
				for i, e := range errs {
					if !used[i] && e.File == w.file && e.Path == w.path && e.Code == w.code && strings.Contains(e.Msg, w.phrase) {
						used[i], found = true, true
						break
					}
				}
				if !found {
					t.Errorf("missing %s finding at %s %s containing %q", w.code, w.file, w.path, w.phrase)
				}
			}
			for i, e := range errs {
				if !used[i] {
					t.Errorf("unexpected finding: %v (code %q)", e, e.Code)
				}
			}
		})
	}
}

// Findings of several rules come back sorted by file, then line.
func TestCrossFileSorted(t *testing.T) {
	f := newFixture(t)
	f.products[0].Loc.Lines = record.Lines{"metadata.name": 4, "spec.delivery.zones[1].cluster": 12}
	f.products[0].Product.Spec.Delivery.Zones[1].Cluster = "gpu-north-9" // line 12
	f.products[0].Org = "initech"                                        // line 4
	f.orgs[1].Org.Spec.ClusterAllowlist = []string{"gpu-south-3"}
	f.clusters = append(f.clusters, f.clusters[0])

	var got []string
	for _, e := range validate.CrossFile(f.clusters, f.orgs, f.products, validate.Present{}) {
		got = append(got, e.File+":"+e.Path)
	}
	want := []string{
		"clusters/gpu-east-1/cluster.yaml:metadata.name",
		"clusters/gpu-west-2/cluster.yaml:spec.org", // globex no longer allowlists it
		"orgs/globex.yaml:spec.clusterAllowlist[0]",
		"products/acme/checkout.yaml:metadata.name",
		"products/acme/checkout.yaml:spec.delivery.zones[1].cluster",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order:\n got %q\nwant %q", got, want)
	}
}
