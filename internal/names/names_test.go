package names

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/iampolicy"
)

func cluster(short string, edit func(*v1alpha1.ClusterSpec)) *v1alpha1.Cluster {
	c := &v1alpha1.Cluster{Metadata: v1alpha1.ObjectMeta{Name: "gpu-east-1"}, Spec: v1alpha1.ClusterSpec{
		ShortName: short, Account: "acme-ml", AccountID: "111122223333", Environment: "prod",
		Region: "us-east-1", Zone: "dc1", Provider: "equinix",
	}}
	if edit != nil {
		edit(&c.Spec)
	}
	return c
}

func TestDerive(t *testing.T) {
	n, errs := Derive(cluster("eue1", func(s *v1alpha1.ClusterSpec) {
		s.Queues = []v1alpha1.Queue{{Purpose: "jobs"}, {Purpose: "results", FIFO: true}}
		s.Buckets = []v1alpha1.Bucket{{Purpose: "models"}}
		s.Registries = []v1alpha1.Registry{{Purpose: "inference"}}
		s.Secrets = []v1alpha1.Secret{{Name: "hf-token"}}
	}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for got, want := range map[string]string{
		n.Subject:            "acme-ml/prod/us-east-1/dc1/equinix/gpu-east-1",
		n.SecretPath:         "acme-ml/us-east-1/dc1/equinix/gpu-east-1",
		n.IAMRoleArn:         "arn:aws:iam::111122223333:role/eue1-workload",
		n.Queues[0].Ref:      "https://sqs.us-east-1.amazonaws.com/111122223333/eue1-jobs",
		n.Queues[1].Name:     "eue1-results.fifo",
		n.Buckets[0].Name:    "eue1-models",
		n.Registries[0].Ref:  "111122223333.dkr.ecr.us-east-1.amazonaws.com/eue1/inference",
		n.Secrets[0].Name:    "acme-ml/us-east-1/dc1/equinix/gpu-east-1/hf-token",
		n.ArgoCD.AppOfApps:   "registry-gpu-east-1",
		n.ArgoCD.SpokeApp:    "spoke-gpu-east-1",
		n.SubjectDN.Locality: "dc1.equinix",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestDeriveRefusesOutOfRuleNames(t *testing.T) {
	long := strings.Repeat("a", 60)
	cases := []struct {
		name  string
		short string
		edit  func(*v1alpha1.ClusterSpec)
		path  string
		msg   string
	}{
		{"iam role over 64", strings.Repeat("r", 56), nil, "spec.shortName", "IAM role"},
		{"queue over 80", "eue1", func(s *v1alpha1.ClusterSpec) { s.Queues = []v1alpha1.Queue{{Purpose: long + strings.Repeat("q", 20)}} }, "spec.queues[0].purpose", "SQS"},
		{"bucket over 63", "eue1", func(s *v1alpha1.ClusterSpec) { s.Buckets = []v1alpha1.Bucket{{Purpose: long}} }, "spec.buckets[0].purpose", "3-63"},
		{"bucket forbidden suffix", "eue1", func(s *v1alpha1.ClusterSpec) { s.Buckets = []v1alpha1.Bucket{{Purpose: "x-s3alias"}} }, "spec.buckets[0].purpose", "-s3alias"},
		{"bucket adjacent dots", "eue1", func(s *v1alpha1.ClusterSpec) { s.Buckets = []v1alpha1.Bucket{{Purpose: "a..b"}} }, "spec.buckets[0].purpose", "adjacent dots"},
		{"ecr bad separator", "eue1", func(s *v1alpha1.ClusterSpec) { s.Registries = []v1alpha1.Registry{{Purpose: "a--"}} }, "spec.registries[0].purpose", "ECR"},
		{"secrets manager random suffix", "eue1", func(s *v1alpha1.ClusterSpec) { s.Secrets = []v1alpha1.Secret{{Name: "db-abcdef"}} }, "spec.secrets[0].name", "random suffix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Derive(cluster(tc.short, tc.edit))
			for _, e := range errs {
				if e.Path == tc.path && strings.Contains(e.Msg, tc.msg) {
					return
				}
			}
			t.Fatalf("no error on %s mentioning %q: %v", tc.path, tc.msg, errs)
		})
	}
}

// TestReservedSecretNames: a spec.secrets entry may not take the cluster's
// connection credential (the default or the record's secretName) or a name
// in the platform's prefix; the refusal never repeats a secretName. Policies is
// the second layer: handed Names that skipped that check, the workload role
// still never reads the credential.
func TestReservedSecretNames(t *testing.T) {
	for _, tc := range []struct {
		name, secretName string
		refused          bool
	}{
		{"argocd-cluster", "", true},
		{"argocd-x", "", true},
		{"argocd-", "", true},
		{"hub-creds7q", "hub-creds7q", true},
		{"argocd-cluster", "hub-creds7q", true},
		{"hub-creds7q", "", false},
		{"argocd", "", false},
		{"my-argocd-cluster", "", false},
		{"aws-credentials", "", true},
		{"spokeforge-registry", "", true},
		{"spokeforge-x", "", true},
		{"aws-credentials-2", "", false},
	} {
		c := cluster("eue1", func(s *v1alpha1.ClusterSpec) {
			s.Connection.Credentials = &v1alpha1.Credentials{Type: "bearerToken", SecretName: tc.secretName}
			s.Secrets = []v1alpha1.Secret{{Name: "ok"}, {Name: tc.name}}
		})
		n, errs := Derive(c)
		if got := len(errs) == 1 && errs[0].Path == "spec.secrets[1].name" && strings.Contains(errs[0].Msg, "is reserved"); got != tc.refused {
			t.Errorf("%s (secretName %q): refused %v, want %v: %v", tc.name, tc.secretName, got, tc.refused, errs)
		}
		for _, e := range errs {
			if tc.secretName != "" && strings.Contains(e.Msg, tc.secretName) {
				t.Errorf("the refusal repeats the name: %s", e.Msg)
			}
		}
		if !tc.refused {
			continue
		}
		p := Policies(c, n)
		credential := fmt.Sprintf("arn:aws:secretsmanager:us-east-1:111122223333:secret:%s/%s-AbCdEf", n.SecretPath, CredentialsSecret(c))
		asked := fmt.Sprintf("arn:aws:secretsmanager:us-east-1:111122223333:secret:%s/%s-AbCdEf", n.SecretPath, tc.name)
		for _, arn := range []string{credential, asked} {
			if d := iampolicy.Evaluate(iampolicy.Request{Action: "secretsmanager:GetSecretValue", Resource: arn}, *p.PermissionPolicy); d != iampolicy.ImplicitDeny {
				t.Errorf("%s: the workload role reads %s: %s", tc.name, arn, d)
			}
		}
	}
}
