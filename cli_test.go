package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/cmp"
	"github.com/spokeforge/spokeforge/internal/iampolicy"
)

const exampleCluster = "examples/gitops/clusters/gpu-east-1/cluster.yaml"

// writeCluster writes a cluster.yaml built by edit from the example record.
func writeCluster(t *testing.T, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(exampleCluster)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRenderBadInput(t *testing.T) {
	cases := []struct {
		name string
		edit func(string) string
		want []string // substrings of stderr
	}{
		{"syntax error", func(s string) string { return s + "\n  bad: [unclosed\n" }, []string{"cluster.yaml:", "invalid YAML"}},
		{"unknown field", func(s string) string {
			return strings.Replace(s, "  shortName: eue1", "  shortName: eue1\n  shortname: typo", 1)
		}, []string{"cluster.yaml:9: spec.shortname: unknown field"}},
		{"duplicate key", func(s string) string {
			return strings.Replace(s, "  shortName: eue1", "  shortName: eue1\n  shortName: eue2", 1)
		}, []string{"cluster.yaml:9: spec.shortName: duplicate key (first at line 8)"}},
		{"wrong type", func(s string) string { return strings.Replace(s, "count: 8", "count: eight", 1) }, []string{"spec.gpu.nodes[0].count: expected an integer"}},
		{"name of 43 characters", func(s string) string {
			return strings.Replace(s, "name: gpu-east-1", "name: "+strings.Repeat("a", 43), 1)
		}, []string{"cluster.yaml:4: metadata.name:", "is 43 characters; a cluster name has at most 42"}},
		{"uppercase name", func(s string) string { return strings.Replace(s, "name: gpu-east-1", "name: GPU-east-1", 1) }, []string{"metadata.name:", "lowercase"}},
		{"derived name over a service limit", func(s string) string {
			return strings.Replace(s, "    - purpose: jobs", "    - purpose: "+strings.Repeat("q", 60)+"-"+strings.Repeat("r", 20), 1)
		}, []string{"spec.queues[0].purpose"}},
		{"bucket over S3's limit", func(s string) string {
			return strings.Replace(s, "    - purpose: models", "    - purpose: "+strings.Repeat("m", 60), 1)
		}, []string{"spec.buckets[0].purpose: derived S3 bucket name", "3-63 characters"}},
		{"device without all safety proofs", func(s string) string { return strings.Replace(s, "notRaidMember: true", "notRaidMember: false", 1) }, []string{"spec.storage.devices[0].safety.notRaidMember: refused"}},
		{"device without safety", func(s string) string {
			return strings.Replace(s, `        safety:
          unpartitioned: true
          unmounted: true
          notRaidMember: true
          checkedAt: "2026-11-30T10:05:00Z"
          checkedBy: lsblk -f; findmnt; cat /proc/mdstat
`, "", 1)
		}, []string{"spec.storage.devices[1].safety: refused: no safety evidence"}},
		{"exec plugin", func(s string) string {
			return strings.Replace(s, "      type: bearerToken", "      type: bearerToken\n      exec:\n        command: aws", 1)
		}, []string{"spec.connection.credentials.exec: exec plugins are refused"}},
		{"auth provider", func(s string) string {
			return strings.Replace(s, "      type: bearerToken", "      type: bearerToken\n      authProvider:\n        name: gcp", 1)
		}, []string{"spec.connection.credentials.authProvider: auth-provider plugins are refused"}},
		{"token file", func(s string) string {
			return strings.Replace(s, "      type: bearerToken", "      type: bearerToken\n      tokenFile: /home/me/token", 1)
		}, []string{"spec.connection.credentials.tokenFile: token files are refused"}},
		{"inline token", func(s string) string {
			return strings.Replace(s, "      type: bearerToken", "      type: bearerToken\n      token: s3cr3t-value", 1)
		}, []string{"spec.connection.credentials.token: an inline token would put a credential in git"}},
		{"role ARN disagrees with derived name", func(s string) string { return strings.Replace(s, "role/eue1-workload", "role/eue1-other", 1) }, []string{"spec.identity.roleArn:", "differs from the derived role"}},
		{"dns outside service CIDR", func(s string) string {
			return strings.Replace(s, "dnsServiceIP: 10.43.0.10", "dnsServiceIP: 10.44.0.10", 1)
		}, []string{"spec.network.dnsServiceIP: 10.44.0.10 is outside serviceCIDR"}},
		{"bad account id", func(s string) string {
			return strings.Replace(s, `accountID: "111122223333"`, "accountID: 111122223333", 1)
		}, []string{"spec.accountID: expected a string"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCluster(t, tc.edit)
			code, stdout, stderr := run("render", dir)
			if code == 0 {
				t.Fatalf("exit 0, want non-zero; stderr:\n%s", stderr)
			}
			if stdout != "" {
				t.Fatalf("stdout not empty on error:\n%.300s", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "s3cr3t-value") {
				t.Errorf("error text leaks the credential:\n%s", stderr)
			}
		})
	}
}

func TestRenderMissingRecord(t *testing.T) {
	code, stdout, stderr := run("render", t.TempDir())
	if code == 0 || stdout != "" || !strings.Contains(stderr, "cluster.yaml: file not found") {
		t.Fatalf("code=%d stdout=%q stderr=%q", code, stdout, stderr)
	}
}

func TestRenderUsesArgoCDSourcePathInErrors(t *testing.T) {
	dir := writeCluster(t, func(s string) string { return strings.Replace(s, "zone: dc-ash1", "zone: DC", 1) })
	_, err := cmp.Generate(dir, "", func(k string) string {
		switch k {
		case "ARGOCD_APP_SOURCE_PATH":
			return "clusters/gpu-east-1"
		case "SPOKEFORGE_IMAGE":
			return testImage
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "spec.zone") {
		t.Fatalf("err = %v", err)
	}
}

func TestRenderRefusesMissingESO(t *testing.T) {
	_, err := cmp.Generate("examples/gitops/clusters/gpu-east-1", "", func(k string) string {
		if k == "KUBE_API_VERSIONS" {
			return "v1,apps/v1"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "External Secrets") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateRepo(t *testing.T) {
	code, out, stderr := run("validate", "examples/gitops")
	if code != 0 || !strings.Contains(out, "ok: 3 clusters") {
		t.Fatalf("code=%d out=%q stderr=%s", code, out, stderr)
	}
}

// copyRepo copies the example repo so a test can break it.
func copyRepo(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir("examples/gitops", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("examples/gitops", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func edit(t *testing.T, path string, f func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(f(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestValidateCrossFile(t *testing.T) {
	r := copyRepo(t)
	// gpu-west-2 takes gpu-east-1's shortName: every cloud name collides.
	edit(t, filepath.Join(r, "clusters/gpu-west-2/cluster.yaml"), func(s string) string { return strings.Replace(s, "shortName: euw2", "shortName: eue1", 1) })
	edit(t, filepath.Join(r, "orgs/globex.yaml"), func(s string) string { return strings.Replace(s, "[gpu-west-2]", "[gpu-west-2, gpu-nowhere]", 1) })
	edit(t, filepath.Join(r, "products/globex/trainer.yaml"), func(s string) string {
		return s + "      - name: checkout-prod\n        environment: release\n        cluster: gpu-mars\n"
	})
	code, out, stderr := run("validate", r)
	if code != 1 || out != "" {
		t.Fatalf("code=%d out=%q", code, out)
	}
	for _, w := range []string{
		`clusters/gpu-west-2/cluster.yaml:6: spec.shortName: derived IAM role "eue1-workload" collides with cluster gpu-east-1`,
		`orgs/globex.yaml:6: spec.clusterAllowlist[1]: unknown cluster "gpu-nowhere"`,
		`products/globex/trainer.yaml:12: spec.delivery.zones[1].name: zone "checkout-prod" is also defined in products/acme/checkout.yaml`,
		`products/globex/trainer.yaml:14: spec.delivery.zones[1].cluster: unknown cluster "gpu-mars"`,
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

func TestNamesJSON(t *testing.T) {
	code, out, stderr := run("names", "examples/gitops", "-o", "json")
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, w := range []string{`"iamRole": "eue1-workload"`, `"subject": "acme-ml/prod/us-east-1/dc-ash1/equinix/gpu-east-1"`, `"name": "eue1-results.fifo"`, `"appOfApps": "registry-gpu-east-1"`} {
		if !strings.Contains(out, w) {
			t.Errorf("names json lacks %s", w)
		}
	}
	// Under "iam", each cluster's two IAM documents, as IAM reads them.
	var got struct {
		Clusters map[string]struct {
			IAM struct {
				TrustPolicy      iampolicy.Document  `json:"trustPolicy"`
				PermissionPolicy *iampolicy.Document `json:"permissionPolicy"`
			} `json:"iam"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	east := got.Clusters["gpu-east-1"].IAM
	tags := map[string]string{
		"aws:SourceArn":                   "arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f",
		"aws:PrincipalTag/x509Subject/CN": "gpu-east-1", "aws:PrincipalTag/x509Subject/O": "acme-ml",
		"aws:PrincipalTag/x509Subject/OU": "prod", "aws:PrincipalTag/x509Subject/ST": "us-east-1",
		"aws:PrincipalTag/x509Subject/L": "dc-ash1.equinix", "aws:PrincipalTag/x509SAN/URI": "spiffe://spokeforge.io/acme-ml/prod/us-east-1/dc-ash1/equinix/gpu-east-1",
	}
	for _, a := range []string{"sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity"} {
		req := iampolicy.Request{Action: a, PrincipalService: "rolesanywhere.amazonaws.com", Context: tags}
		if d := iampolicy.Evaluate(req, east.TrustPolicy); d != iampolicy.Allow {
			t.Errorf("trust policy: %s for the record's certificate is %v", a, d)
		}
	}
	tags["aws:PrincipalTag/x509Subject/CN"] = "gpu-west-2"
	if d := iampolicy.Evaluate(iampolicy.Request{Action: "sts:AssumeRole", PrincipalService: "rolesanywhere.amazonaws.com", Context: tags}, east.TrustPolicy); d == iampolicy.Allow {
		t.Error("trust policy: gpu-west-2's certificate may assume gpu-east-1's role")
	}
	if east.PermissionPolicy == nil {
		t.Fatal("no permission policy for gpu-east-1")
	}
	for res, action := range map[string]string{
		"arn:aws:secretsmanager:us-east-1:111122223333:secret:acme-ml/us-east-1/dc-ash1/equinix/gpu-east-1/hf-token-a1B2c3": "secretsmanager:GetSecretValue",
		"arn:aws:sqs:us-east-1:111122223333:eue1-results.fifo":                                                              "sqs:ReceiveMessage",
		"arn:aws:s3:::eue1-models/weights/llama.bin":                                                                        "s3:GetObject",
		"arn:aws:ecr:us-east-1:111122223333:repository/eue1/inference":                                                      "ecr:BatchGetImage",
		"*": "ecr:GetAuthorizationToken",
	} {
		if d := iampolicy.Evaluate(iampolicy.Request{Action: action, Resource: res}, *east.PermissionPolicy); d != iampolicy.Allow {
			t.Errorf("permission policy: %s on %s is %v", action, res, d)
		}
	}
	for res, action := range map[string]string{
		"arn:aws:secretsmanager:us-east-1:111122223333:secret:acme-ml/us-west-2/dc-sea1/equinix/gpu-west-2/hf-token-a1B2c3": "secretsmanager:GetSecretValue",
		"arn:aws:secretsmanager:us-east-1:111122223333:secret:acme-ml/us-east-1/dc-ash1/equinix/gpu-east-1/hf-token-a1B2c3": "secretsmanager:PutSecretValue",
		"arn:aws:sqs:us-east-1:111122223333:eue1-results.fifo":                                                              "sqs:DeleteQueue",
		"arn:aws:s3:::eue1-models":                                     "s3:DeleteBucket",
		"arn:aws:ecr:us-east-1:111122223333:repository/eue1/inference": "ecr:PutImage",
	} {
		if d := iampolicy.Evaluate(iampolicy.Request{Action: action, Resource: res}, *east.PermissionPolicy); d == iampolicy.Allow {
			t.Errorf("permission policy allows %s on %s", action, res)
		}
	}
}
