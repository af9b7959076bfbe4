//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/secretfile"
	"github.com/spokeforge/spokeforge/internal/sopstest"
)

// TestSecretsSync: two secrets encrypted with SOPS to an age key made for
// the test are written by `spokeforge secrets sync` into the fake Secrets
// Manager while it answers ResourceNotFoundException for 3 s after each
// create; a second run changes nothing; a changed value is one update; a
// broken file fails alone (exit 2) while the other is updated; then
// `spokeforge check`'s Secrets boundary passes against the same fake, External
// Secrets (real) writes the synced values on the spoke, and a rotated value
// reaches the spoke without Argo CD going out of sync.
func TestSecretsSync(t *testing.T) {
	parallel(t)
	start := time.Now()
	h := StartHub(t, Options{})
	if h.Spokeforge == "" {
		t.Fatal("spokeforge binary not built")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	const path = "acme-ml/us-east-1/dc-e2e/metal/e2e-gpu/"
	record := strings.Replace(onboardingRecord, "  secrets:\n", "  secrets:\n    - name: api-key\n      namespace: inference\n      keys: [token]\n", 1)
	fake := awsfake.New("111122223333", "us-east-1")
	fake.StaticKey("AKIAE2ESYNC", "arn:aws:iam::111122223333:role/gitops-sync")
	fake.SetSecretsConsistencyWindow(3 * time.Second)
	awsURL, err := fake.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()

	key, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keyFile, err := key.WriteIdentity(h.Dir)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(h.Dir, "secrets-repo")
	recordDir := filepath.Join(root, "clusters", "e2e-gpu")
	write := func(rel string, data []byte) {
		p := filepath.Join(recordDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// As a user writes a secret before `sops --encrypt`: its keys, and the
	// binding to its cluster and name.
	encrypt := func(name string, values map[string]string) {
		values[secretfile.BindingKey] = secretfile.Binding("e2e-gpu", name)
		b, err := sopstest.Encrypt(values, key.Recipient)
		if err != nil {
			t.Fatal(err)
		}
		write("secrets/"+name+".sops.yaml", b)
	}
	write("cluster.yaml", []byte(record))
	encrypt("api-key", map[string]string{"token": "e2e-api-value-1"})
	encrypt("hf-token", map[string]string{"token": "e2e-hf-value-1"})

	env := append(fakeAWSEnv(awsURL, "us-east-1"), "AWS_ACCESS_KEY_ID=AKIAE2ESYNC", "AWS_SECRET_ACCESS_KEY=e2e",
		"SOPS_AGE_KEY_FILE="+keyFile, "XDG_CONFIG_HOME="+h.Dir)
	type report struct {
		Items []struct {
			Secret, Status string
			Retries        int
		}
		Summary string
	}
	sync := func(want int) report {
		t.Helper()
		t0 := time.Now()
		cmd := exec.CommandContext(ctx, h.Spokeforge, "secrets", "sync", root, "-o", "json")
		cmd.Env = append(os.Environ(), env...)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"e2e-api-value", "e2e-hf-value"} {
			if strings.Contains(out.String()+stderr.String(), v) {
				t.Fatalf("the sync printed a secret value:\n%s\n%s", out.String(), stderr.String())
			}
		}
		var r report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || code != want {
			t.Fatalf("secrets sync: exit %d (want %d), %v\n%s\n%s", code, want, err, out.String(), stderr.String())
		}
		t.Logf("secrets sync took %s: %s", time.Since(t0).Round(time.Millisecond), r.Summary)
		return r
	}
	states := func(r report) string {
		var s []string
		for _, it := range r.Items {
			s = append(s, strings.TrimPrefix(it.Secret, path)+"="+it.Status)
		}
		return strings.Join(s, " ")
	}

	// Created through the consistency window.
	r := sync(0)
	if states(r) != "api-key=created hf-token=created" || r.Items[0].Retries == 0 {
		t.Fatalf("first run: %s %+v", states(r), r.Items)
	}
	// Again: zero changes, no write.
	puts := fake.Calls("secretsmanager.PutSecretValue")
	if r = sync(0); states(r) != "api-key=unchanged hf-token=unchanged" || fake.Calls("secretsmanager.PutSecretValue") != puts ||
		fake.Calls("secretsmanager.TagResource") != 0 {
		t.Fatalf("second run: %s", states(r))
	}
	// One value changes: one update, a second version.
	encrypt("api-key", map[string]string{"token": "e2e-api-value-2"})
	if r = sync(0); states(r) != "api-key=updated hf-token=unchanged" || fake.SecretVersions(path+"api-key") != 2 {
		t.Fatalf("update: %s", states(r))
	}
	// One file breaks while the other changes: partial, exit 2.
	encrypt("hf-token", map[string]string{"token": "e2e-hf-value-2"})
	b, err := os.ReadFile(filepath.Join(recordDir, "secrets", "api-key.sops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("data:")) + 5
	b[i] ^= 1
	write("secrets/api-key.sops.yaml", b)
	if r = sync(2); states(r) != "api-key=failed hf-token=updated" || !strings.Contains(r.Summary, "1 of 2 synchronised") {
		t.Fatalf("broken file: %s %q", states(r), r.Summary)
	}

	// spokeforge check's Secrets boundary passes against the same fake once
	// the spoke holds the rendered store and ExternalSecrets.
	repo, err := h.NewGitRepo("secrets", map[string]string{"clusters/e2e-gpu/cluster.yaml": record})
	if err != nil {
		t.Fatal(err)
	}
	const app = "spoke-e2e-gpu"
	if _, err := h.Hub.Apply(ctx, SpokeApplication(app, repo.URL, "clusters/e2e-gpu")); err != nil {
		t.Fatal(err)
	}
	// The rest of the account (the secrets are those synced above), and the real controllers.
	spoke, err := h.StartSpoke(ctx, recordDir, SpokeOptions{AWS: fake, Except: []string{path + "api-key", path + "hf-token"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ArgoCD(ctx, "app", "sync", app, "--timeout", "240"); err != nil {
		t.Fatal(err)
	}
	crt, certKey, err := spoke.IdentityFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var secrets string
	for deadline := time.Now().Add(2 * time.Minute); ; {
		cmd := exec.CommandContext(ctx, h.Spokeforge, "check", recordDir, "-o", "json", "--kubeconfig", h.Spoke.Kubeconfig, "--certificate", crt, "--private-key", certKey)
		cmd.Env = append(os.Environ(), fakeAWSEnv(awsURL, "us-east-1")...)
		out, _ := cmd.Output()
		var rep struct {
			Results []struct{ Boundary, State, Message string }
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("check -o json: %v\n%s", err, out)
		}
		for _, res := range rep.Results {
			if res.Boundary == "Secrets" {
				secrets = res.State + ": " + res.Message
			}
		}
		if strings.HasPrefix(secrets, "Passed: ") || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second) // External Secrets syncs the ExternalSecrets
	}
	if !strings.HasPrefix(secrets, "Passed: 2 secrets exist under "+strings.TrimSuffix(path, "/")) {
		t.Fatalf("check's Secrets boundary: %s", secrets)
	}
	// What External Secrets wrote on the spoke is what the SOPS files hold.
	for name, want := range map[string]string{"api-key": "e2e-api-value-2", "hf-token": "e2e-hf-value-2"} {
		if got := spokeSecretValue(ctx, t, h, "inference", name, "token"); got != want {
			t.Fatalf("Secret inference/%s token = %q, want the synced value", name, got)
		}
	}

	// Rotation: a new value in Secrets Manager reaches the spoke when External Secrets refreshes
	// (forced here, as `kubectl annotate … force-sync` does, instead of waiting for the
	// refreshInterval), and Argo CD stays Synced: the annotation is live state only.
	encrypt("api-key", map[string]string{"token": "e2e-api-value-3"})
	if r = sync(0); states(r) != "api-key=updated hf-token=unchanged" {
		t.Fatalf("rotation: %s", states(r))
	}
	rotated := time.Now()
	if err := forceSync(ctx, h.Spoke, "inference", "api-key"); err != nil {
		t.Fatal(err)
	}
	for spokeSecretValue(ctx, t, h, "inference", "api-key", "token") != "e2e-api-value-3" {
		if time.Since(rotated) > time.Minute {
			t.Fatal("the rotated value did not reach Secret inference/api-key within a minute of force-sync")
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("rotation: the new value reached the spoke %s after force-sync", time.Since(rotated).Round(time.Millisecond))
	if st, err := h.App(ctx, app); err != nil || st.Sync != "Synced" {
		t.Fatalf("after the rotation the spoke Application is %+v (%v), want Synced", st, err)
	}
	t.Logf("secrets sync test total %s", time.Since(start).Round(time.Second))
}

// spokeSecretValue is key of Secret namespace/name on the spoke, "" when absent.
func spokeSecretValue(ctx context.Context, t *testing.T, h *Hub, namespace, name, key string) string {
	t.Helper()
	s, err := h.Spoke.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return string(s.Data[key])
}

// forceSync asks External Secrets to refresh ExternalSecret namespace/name now, as its docs'
// `kubectl annotate es NAME force-sync=$(date +%s) --overwrite` does.
func forceSync(ctx context.Context, c *Cluster, namespace, name string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"force-sync":"%d"}}}`, time.Now().UnixNano())
	_, err := c.Dynamic.Resource(externalSecretsGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

var externalSecretsGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}
