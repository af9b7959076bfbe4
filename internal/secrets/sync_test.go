package secrets

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/stores/yaml"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/secretfile"
	"github.com/spokeforge/spokeforge/internal/sopstest"
)

// The example cluster gpu-east-1 lists model-api-key (keys: [token]) and
// hf-token under acme-ml/us-east-1/dc-ash1/equinix/gpu-east-1.
const (
	secretPath = "acme-ml/us-east-1/dc-ash1/equinix/gpu-east-1/"
	apiKey     = secretPath + "model-api-key"
	hfToken    = secretPath + "hf-token"
)

// world is a repo with the example record, a fresh age key, and a fake
// Secrets Manager driven by the real SDK client; the fake's KMS serves
// SOPS's KMS keys through the SDK's default config (sopstest.UseFakeKMS).
type world struct {
	t    testing.TB
	root string
	key  sopstest.Key
	aws  *awsfake.Server
	url  string
}

func newWorld(t testing.TB, record string) *world {
	t.Helper()
	w := &world{t: t, root: t.TempDir()}
	var err error
	if w.key, err = sopstest.NewKey(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOPS_AGE_KEY", w.key.Identity)
	for _, k := range []string{"SOPS_AGE_KEY_FILE", "SOPS_AGE_KEY_CMD", "SOPS_AGE_SSH_PRIVATE_KEY_FILE"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	if record == "" {
		b, err := os.ReadFile("../../examples/gitops/clusters/gpu-east-1/cluster.yaml")
		if err != nil {
			t.Fatal(err)
		}
		record = string(b)
	}
	w.write("clusters/gpu-east-1/cluster.yaml", []byte(record))
	// The record's spec.org: its workloads go through that org's AppProject.
	w.write("orgs/acme.yaml", []byte("apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: acme}\nspec: {clusterAllowlist: [gpu-east-1]}\n"))
	w.aws = awsfake.New("111122223333", "us-east-1")
	w.aws.StaticKey("AKIASYNC", "arn:aws:iam::111122223333:role/gitops-sync")
	if w.url, err = w.aws.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.aws.Close() })
	sopstest.UseFakeKMS(t, w.url, "AKIASYNC")
	return w
}

func (w *world) write(rel string, data []byte) {
	p := filepath.Join(w.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) secret(name string, values map[string]string) {
	w.secretBoundTo(name, secretfile.Binding("gpu-east-1", name), values)
}

// secretBoundTo writes the secret file of name with binding as its
// secretfile.BindingKey value.
func (w *world) secretBoundTo(name, binding string, values map[string]string) {
	b, err := sopstest.Encrypt(bind(values, binding), w.key.Recipient)
	if err != nil {
		w.t.Fatal(err)
	}
	w.write("clusters/gpu-east-1/secrets/"+name+".sops.yaml", b)
}

// bind is values with the binding added, as a user writes it before encrypting.
func bind(values map[string]string, binding string) map[string]string {
	out := map[string]string{secretfile.BindingKey: binding}
	for k, v := range values {
		out[k] = v
	}
	return out
}

// kmsSecret writes a secret file encrypted to a KMS key ARN of the fake
// at url (the world's, or another fake's), and returns its data key.
func (w *world) kmsSecret(name string, values map[string]string, url, arn string) []byte {
	w.t.Helper()
	sopstest.UseFakeKMS(w.t, url, "AKIASYNC")
	defer sopstest.UseFakeKMS(w.t, w.url, "AKIASYNC")
	b, err := sopstest.EncryptKMS(bind(values, secretfile.Binding("gpu-east-1", name)), map[string]string{"cluster": "gpu-east-1"}, arn)
	if err != nil {
		w.t.Fatal(err)
	}
	tree, err := yaml.NewStore(&config.YAMLStoreConfig{}).LoadEncryptedFile(b)
	if err != nil {
		w.t.Fatal(err)
	}
	key, err := tree.Metadata.GetDataKey()
	if err != nil {
		w.t.Fatal(err)
	}
	w.write("clusters/gpu-east-1/secrets/"+name+".sops.yaml", b)
	return key
}

func (w *world) client() *sm.Client {
	return sm.New(sm.Options{Region: "us-east-1", BaseEndpoint: aws.String(w.url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIASYNC", "secret", "")})
}

func (w *world) sync(dry bool) *Report {
	w.t.Helper()
	rep, err := Sync(context.Background(), Options{Root: w.root, DryRun: dry,
		Policy: Policy{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Deadline: 5 * time.Second},
		Client: func(context.Context, string) (API, error) { return w.client(), nil }})
	if err != nil {
		w.t.Fatal(err)
	}
	return rep
}

// calls sums the fake's Secrets Manager calls.
func (w *world) calls() map[string]int {
	out := map[string]int{}
	for _, op := range []string{"GetSecretValue", "CreateSecret", "PutSecretValue", "TagResource", "DescribeSecret", "ListSecrets"} {
		out[op] = w.aws.Calls("secretsmanager." + op)
	}
	return out
}

func statuses(r *Report) string {
	var s []string
	for _, it := range r.Items {
		s = append(s, fmt.Sprintf("%s=%s", strings.TrimPrefix(it.Secret, secretPath), it.Status))
	}
	return strings.Join(s, " ")
}

// noValues fails if the report, as JSON or table, holds a secret value.
func noValues(t *testing.T, r *Report, values ...string) {
	t.Helper()
	var b bytes.Buffer
	_ = r.WriteJSON(&b)
	_ = r.WriteTable(&b)
	for _, v := range values {
		if strings.Contains(b.String(), v) {
			t.Fatalf("the report holds the value %q:\n%s", v, b.String())
		}
	}
}

func TestSyncAgainstSecretsManager(t *testing.T) {
	w := newWorld(t, "")
	w.aws.SetSecretsConsistencyWindow(300 * time.Millisecond)
	w.secret("model-api-key", map[string]string{"token": "value-api-1"})
	w.secret("hf-token", map[string]string{"token": "value-hf-1", "user": "value-user"})

	// Created, through the consistency window after each create.
	r := w.sync(false)
	if statuses(r) != "hf-token=created model-api-key=created" || r.ExitCode() != ExitSynchronised || r.Summary != "2 of 2 synchronised (2 created)" {
		t.Fatalf("first run: %s, %q, exit %d: %+v", statuses(r), r.Summary, r.ExitCode(), r.Items)
	}
	if r.Items[0].Retries == 0 || strings.Join(r.Items[0].Keys, ",") != "token,user" {
		t.Fatalf("first run item: %+v (the put after the create must have met the window)", r.Items[0])
	}
	noValues(t, r, "value-api-1", "value-hf-1", "value-user")
	got, err := w.client().GetSecretValue(context.Background(), &sm.GetSecretValueInput{SecretId: aws.String(hfToken)})
	if err != nil || aws.ToString(got.SecretString) != `{"token":"value-hf-1","user":"value-user"}` {
		t.Fatalf("written value: %v", err)
	}
	d, err := w.client().DescribeSecret(context.Background(), &sm.DescribeSecretInput{SecretId: aws.String(hfToken)})
	if err != nil || len(d.Tags) != 3 || aws.ToString(d.Tags[0].Value) != "gpu-east-1" || aws.ToString(d.Tags[1].Value) != "clusters/gpu-east-1/cluster.yaml" {
		t.Fatalf("tags: %+v %v", d.Tags, err)
	}

	// Again: nothing written, one read per secret plus the listing.
	before := w.calls()
	r = w.sync(false)
	after := w.calls()
	if statuses(r) != "hf-token=unchanged model-api-key=unchanged" || r.Summary != "2 of 2 synchronised (2 unchanged)" {
		t.Fatalf("second run: %s %q", statuses(r), r.Summary)
	}
	for _, op := range []string{"CreateSecret", "PutSecretValue", "TagResource", "DescribeSecret"} {
		if after[op] != before[op] {
			t.Fatalf("second run called %s", op)
		}
	}
	if after["GetSecretValue"]-before["GetSecretValue"] != 2 || after["ListSecrets"]-before["ListSecrets"] != 1 {
		t.Fatalf("second run calls: %v → %v", before, after)
	}

	// One value changes: a dry run names the key, then one update, a new version.
	w.secret("model-api-key", map[string]string{"token": "value-api-2"})
	r = w.sync(true)
	if statuses(r) != "hf-token=unchanged model-api-key=would update" || strings.Join(r.Items[1].Keys, ",") != "~token" || w.aws.SecretVersions(apiKey) != 1 {
		t.Fatalf("dry run: %s %v", statuses(r), r.Items[1].Keys)
	}
	noValues(t, r, "value-api-1", "value-api-2")
	r = w.sync(false)
	if statuses(r) != "hf-token=unchanged model-api-key=updated" || w.aws.SecretVersions(apiKey) != 2 || r.Items[1].Tags {
		t.Fatalf("update: %s, %d versions, %+v", statuses(r), w.aws.SecretVersions(apiKey), r.Items[1])
	}
	prev, err := w.client().GetSecretValue(context.Background(), &sm.GetSecretValueInput{SecretId: aws.String(apiKey), VersionStage: aws.String("AWSPREVIOUS")})
	if err != nil || aws.ToString(prev.SecretString) != `{"token":"value-api-1"}` {
		t.Fatalf("AWSPREVIOUS: %v", err)
	}

	// One file breaks (edited by hand): partial, the other is still synchronised.
	w.secret("hf-token", map[string]string{"token": "value-hf-2", "user": "value-user"})
	p := filepath.Join(w.root, "clusters/gpu-east-1/secrets/model-api-key.sops.yaml")
	b, _ := os.ReadFile(p)
	i := bytes.Index(b, []byte("data:")) + 5
	// Another base64 character: a flipped bit could leave the alphabet
	// ('A' ^ 1 is '@') and make the value read as not encrypted instead.
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	w.write("clusters/gpu-east-1/secrets/model-api-key.sops.yaml", b)
	r = w.sync(false)
	if statuses(r) != "hf-token=updated model-api-key=failed" || r.ExitCode() != ExitPartial || r.Summary != "1 of 2 synchronised (1 updated), 1 failed" {
		t.Fatalf("broken file: %s %q exit %d", statuses(r), r.Summary, r.ExitCode())
	}
	if !strings.Contains(r.Items[1].Reason, "model-api-key.sops.yaml: ") {
		t.Fatalf("reason: %q", r.Items[1].Reason)
	}
	noValues(t, r, "value-api-2", "value-hf-2")

	// A plaintext file fails alone, its value never repeated.
	w.write("clusters/gpu-east-1/secrets/model-api-key.sops.yaml", []byte("token: value-plain\n"))
	r = w.sync(false)
	if statuses(r) != "hf-token=unchanged model-api-key=failed" || !strings.Contains(r.Items[1].Reason, "not encrypted") {
		t.Fatalf("plaintext file: %s %+v", statuses(r), r.Items[1])
	}
	noValues(t, r, "value-plain")
}

func TestSyncOrphansAndMissingFiles(t *testing.T) {
	b, err := os.ReadFile("../../examples/gitops/clusters/gpu-east-1/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, "")
	w.secret("model-api-key", map[string]string{"token": "a"})
	w.secret("hf-token", map[string]string{"token": "b"})
	if r := w.sync(false); r.ExitCode() != ExitSynchronised {
		t.Fatalf("setup: %s", r.Summary)
	}
	// hf-token leaves the record and its file goes: orphaned, not deleted.
	w.write("clusters/gpu-east-1/cluster.yaml", []byte(strings.Replace(string(b), "    - name: hf-token\n      namespace: inference\n      refreshInterval: 30m\n", "", 1)))
	if err := os.Remove(filepath.Join(w.root, "clusters/gpu-east-1/secrets/hf-token.sops.yaml")); err != nil {
		t.Fatal(err)
	}
	r := w.sync(false)
	if statuses(r) != "model-api-key=unchanged hf-token=orphaned" || r.ExitCode() != ExitSynchronised ||
		!strings.Contains(r.Items[1].Reason, "aws secretsmanager delete-secret --region us-east-1 --secret-id "+hfToken) {
		t.Fatalf("orphan: %s %+v", statuses(r), r.Items)
	}
	if w.aws.SecretVersions(hfToken) != 1 {
		t.Fatal("the orphan was touched")
	}
	// The record lists a secret without a file, and a file has no entry.
	w.write("clusters/gpu-east-1/cluster.yaml", b)
	w.write("clusters/gpu-east-1/secrets/stray.sops.yaml", []byte("x: y\n"))
	r = w.sync(false)
	if statuses(r) != "=failed hf-token=failed model-api-key=unchanged" || r.ExitCode() != ExitPartial {
		t.Fatalf("missing and stray: %s", statuses(r))
	}
	if !strings.Contains(r.Items[0].Reason, "no entry in clusters/gpu-east-1/cluster.yaml spec.secrets lists this file") ||
		!strings.Contains(r.Items[1].Reason, "the file clusters/gpu-east-1/secrets/hf-token.sops.yaml is missing") {
		t.Fatalf("reasons: %+v", r.Items)
	}
	// Access denied on every write: nothing synchronised.
	w.secret("hf-token", map[string]string{"token": "c"})
	w.secret("model-api-key", map[string]string{"token": "d"})
	if err := os.Remove(filepath.Join(w.root, "clusters/gpu-east-1/secrets/stray.sops.yaml")); err != nil {
		t.Fatal(err)
	}
	w.aws.Inject("secretsmanager.PutSecretValue", awsfake.Fault{Times: -1, Status: 400, Code: "AccessDeniedException", Message: "not authorized to perform secretsmanager:PutSecretValue"})
	r = w.sync(false)
	if r.ExitCode() != ExitNone || r.Items[0].Retries != 0 || !strings.Contains(r.Items[0].Reason, "PutSecretValue: AccessDeniedException") {
		t.Fatalf("denied: %s %+v", r.Summary, r.Items)
	}
}

// Files encrypted to AWS KMS keys decrypt through the fake's KMS, reached
// as in production through the SDK's default config. A file whose key
// refuses kms:Decrypt, or does not exist, fails alone: its reason names the
// file and the credentials it needs, never a value or the data key.
func TestSyncKMSRecipients(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hf is hf-token's recipient: "kms", "age", "denied" (kms:Decrypt
		// refused) or "missing" (a key the account does not have);
		// model-api-key is always encrypted to a KMS key.
		hf            string
		first, second string
		hfKMSDecrypts int // kms.Decrypt calls hf-token makes per run
	}{
		{"kms", "kms", "hf-token=created model-api-key=created", "hf-token=unchanged model-api-key=unchanged", 1},
		{"age beside kms", "age", "hf-token=created model-api-key=created", "hf-token=unchanged model-api-key=unchanged", 0},
		{"kms:Decrypt denied", "denied", "hf-token=failed model-api-key=created", "hf-token=failed model-api-key=unchanged", 1},
		{"kms key missing", "missing", "hf-token=failed model-api-key=created", "hf-token=failed model-api-key=unchanged", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "")
			apiArn, hfArn := w.aws.NewKMSKey(), w.aws.NewKMSKey()
			apiDataKey := w.kmsSecret("model-api-key", map[string]string{"token": "value-api-kms"}, w.url, apiArn)
			hfValues := map[string]string{"token": "value-hf-kms", "user": "value-user-kms"}
			var hfDataKey []byte
			switch tc.hf {
			case "age":
				w.secret("hf-token", hfValues)
			case "kms":
				hfDataKey = w.kmsSecret("hf-token", hfValues, w.url, hfArn)
			case "denied":
				hfDataKey = w.kmsSecret("hf-token", hfValues, w.url, hfArn)
				w.aws.DenyKMS(hfArn, "kms:Decrypt")
			case "missing":
				other := awsfake.New("111122223333", "us-east-1")
				other.StaticKey("AKIASYNC", "arn:aws:iam::111122223333:role/gitops-sync")
				url, err := other.Start("127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				hfArn = other.NewKMSKey()
				hfDataKey = w.kmsSecret("hf-token", hfValues, url, hfArn)
			}
			secretValues := []string{"value-api-kms", "value-hf-kms", "value-user-kms"}
			for _, k := range [][]byte{apiDataKey, hfDataKey} {
				if k != nil {
					secretValues = append(secretValues, string(k), hex.EncodeToString(k), base64.StdEncoding.EncodeToString(k))
				}
			}

			for run, want := range []string{tc.first, tc.second} {
				before := w.aws.Calls("kms.Decrypt")
				r := w.sync(false)
				if statuses(r) != want {
					t.Fatalf("run %d: %s, want %s: %+v", run+1, statuses(r), want, r.Items)
				}
				if got := w.aws.Calls("kms.Decrypt") - before; got != 1+tc.hfKMSDecrypts {
					t.Fatalf("run %d: %d kms.Decrypt calls, want %d", run+1, got, 1+tc.hfKMSDecrypts)
				}
				noValues(t, r, secretValues...)
				if tc.hf == "denied" || tc.hf == "missing" {
					hf := r.Items[0]
					if r.ExitCode() != ExitPartial || hf.Status != Failed ||
						!strings.Contains(hf.Reason, "clusters/gpu-east-1/secrets/hf-token.sops.yaml: no key at hand decrypts its data key (it is encrypted to KMS "+hfArn+")") ||
						!strings.Contains(hf.Reason, "AWS credentials allowed kms:Decrypt") {
						t.Fatalf("run %d: exit %d, hf-token %+v", run+1, r.ExitCode(), hf)
					}
					if w.aws.SecretVersions(hfToken) != 0 {
						t.Fatal("hf-token was written")
					}
				} else if r.ExitCode() != ExitSynchronised {
					t.Fatalf("run %d: exit %d %q", run+1, r.ExitCode(), r.Summary)
				}
			}
			got, err := w.client().GetSecretValue(context.Background(), &sm.GetSecretValueInput{SecretId: aws.String(apiKey)})
			if err != nil || aws.ToString(got.SecretString) != `{"token":"value-api-kms"}` || w.aws.SecretVersions(apiKey) != 1 {
				t.Fatalf("model-api-key: %v, %d versions", err, w.aws.SecretVersions(apiKey))
			}
		})
	}
}

// BenchmarkSyncUnchanged1000: a sync of 1,000 secrets already current,
// reporting the Secrets Manager calls per secret.
func BenchmarkSyncUnchanged1000(b *testing.B) {
	const n = 1000
	var rec strings.Builder
	ex, err := os.ReadFile("../../examples/gitops/clusters/gpu-east-1/cluster.yaml")
	if err != nil {
		b.Fatal(err)
	}
	head, _, _ := strings.Cut(string(ex), "  secrets:\n")
	rec.WriteString(head + "  secrets:\n")
	for i := range n {
		fmt.Fprintf(&rec, "    - name: s%04d\n      namespace: inference\n", i)
	}
	w := newWorld(b, rec.String())
	for i := range n {
		w.secret(fmt.Sprintf("s%04d", i), map[string]string{"token": fmt.Sprintf("value-%d", i)})
	}
	if r := w.sync(false); r.ExitCode() != ExitSynchronised {
		b.Fatalf("setup: %s", r.Summary)
	}
	total := func() int {
		s := 0
		for _, v := range w.calls() {
			s += v
		}
		return s
	}
	before := total()
	b.ResetTimer()
	for b.Loop() {
		if r := w.sync(false); r.Summary != "1000 of 1000 synchronised (1000 unchanged)" {
			b.Fatal(r.Summary)
		}
	}
	b.ReportMetric(float64(total()-before)/float64(n*b.N), "calls/secret")
}

// The sync checks each file as validate does: a file whose keys differ from
// the record's keys fails alone, before any AWS call; --cluster refuses a
// cluster folder that is a symlink (it would be read outside the repo).
func TestSyncRefusesWhatValidateRefuses(t *testing.T) {
	w := newWorld(t, "")
	w.secret("model-api-key", map[string]string{"token": "a", "extra": "hunter2"})
	w.secret("hf-token", map[string]string{"token": "b"})
	r := w.sync(false)
	if statuses(r) != "hf-token=created model-api-key=failed" || r.ExitCode() != ExitPartial ||
		!strings.Contains(r.Items[1].Reason, "extra: is not in clusters/gpu-east-1/cluster.yaml spec.secrets[0].keys") {
		t.Fatalf("keys: %s %+v", statuses(r), r.Items)
	}
	if w.aws.SecretVersions(apiKey) != 0 || strings.Contains(fmt.Sprint(r.Items), "hunter2") {
		t.Fatal("the refused file was written, or its value repeated")
	}

	outside := t.TempDir()
	if err := os.Rename(filepath.Join(w.root, "clusters", "gpu-east-1"), filepath.Join(outside, "gpu-east-1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "gpu-east-1"), filepath.Join(w.root, "clusters", "gpu-east-1")); err != nil {
		t.Fatal(err)
	}
	_, err := Sync(context.Background(), Options{Root: w.root, Cluster: "gpu-east-1",
		Client: func(context.Context, string) (API, error) { return w.client(), nil }})
	if err == nil || !strings.Contains(err.Error(), "clusters/gpu-east-1/: is a symlink") {
		t.Fatalf("symlinked cluster folder: %v", err)
	}
}

// A secret file is bound to its secret by its encrypted BindingKey value: a
// file copied from another cluster, or from another secret of the same
// cluster, decrypts (same recipients) but fails alone, writes nothing and
// does not repeat what the copied file was bound to; the value written to
// Secrets Manager never holds the binding.
func TestSyncRefusesACopiedFile(t *testing.T) {
	for _, tc := range []struct{ name, binding string }{
		{"from another cluster", "gpu-west-2/model-api-key"},
		{"from another secret", "gpu-east-1/hf-token"},
		{"a near miss", "gpu-east-1/model-api-key "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "")
			w.secretBoundTo("model-api-key", tc.binding, map[string]string{"token": "hunter2"})
			w.secret("hf-token", map[string]string{"token": "b"})
			r := w.sync(false)
			if statuses(r) != "hf-token=created model-api-key=failed" || r.ExitCode() != ExitPartial ||
				!strings.Contains(r.Items[1].Reason, "the file is bound to another secret: its spokeforge.io/bound-to value does not name gpu-east-1/model-api-key") {
				t.Fatalf("%s %+v", statuses(r), r.Items)
			}
			if w.aws.SecretVersions(apiKey) != 0 || strings.Contains(fmt.Sprint(r.Items), "hunter2") ||
				tc.binding != "" && strings.Contains(r.Items[1].Reason, tc.binding) {
				t.Fatal("the copied file was written, or its value or binding repeated")
			}
		})
	}
	w := newWorld(t, "")
	w.secret("model-api-key", map[string]string{"token": "a"})
	w.secret("hf-token", map[string]string{"token": "b"})
	if r := w.sync(false); r.ExitCode() != ExitSynchronised {
		t.Fatal(r.Summary)
	}
	v, err := w.client().GetSecretValue(context.Background(), &sm.GetSecretValueInput{SecretId: aws.String(apiKey)})
	if err != nil || aws.ToString(v.SecretString) != `{"token":"a"}` {
		t.Fatalf("written value %q (%v), want only the secret's keys", aws.ToString(v.SecretString), err)
	}
}

// TestSyncNeverWritesAReservedName is the second layer under the record
// check (names.Derive refuses a spec.secrets name that is the cluster's
// connection credential or starts with names.ReservedSecretPrefix): with
// that check bypassed, the sync still refuses the secret, names its file,
// and makes no Secrets Manager call for it.
func TestSyncNeverWritesAReservedName(t *testing.T) {
	for _, tc := range []struct{ name, secretName string }{
		{"argocd-cluster", ""},
		{"argocd-anything", ""},
		{"hub-creds", "hub-creds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "")
			w.secret("hf-token", map[string]string{"token": "b"})
			e, errs := repo.LoadCluster(filepath.Join(w.root, "clusters", "gpu-east-1"), "clusters/gpu-east-1")
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			// After Derive: the record check has passed the example's names.
			if tc.secretName != "" {
				e.Cluster.Spec.Connection.Credentials.SecretName = tc.secretName
			}
			e.Cluster.Spec.Secrets[1].Name = tc.name
			e.Names.Secrets[1].Name = secretPath + tc.name
			w.secret(tc.name, map[string]string{"bearerToken": "planted", "caData": "x"})
			var job *job
			for _, j := range plan(w.root, e) {
				if j.item.Secret == secretPath+tc.name {
					job = j
				}
			}
			file := "clusters/gpu-east-1/secrets/" + tc.name + ".sops.yaml"
			if job == nil {
				t.Fatal("no job planned for the secret")
			}
			if !strings.Contains(job.fail, "is reserved") || !strings.Contains(job.fail, file) {
				t.Fatalf("planned refusal %q: want one that names %s", job.fail, file)
			}
			before := w.calls()
			(&secretSync{o: Options{Decrypt: Decrypt}, c: w.client(), j: job}).run(context.Background())
			if job.item.Status != Failed || fmt.Sprint(w.calls()) != fmt.Sprint(before) || w.aws.SecretVersions(secretPath+tc.name) != 0 {
				t.Fatalf("status %s, calls %v then %v: the reserved secret reached Secrets Manager", job.item.Status, before, w.calls())
			}
		})
	}
}
