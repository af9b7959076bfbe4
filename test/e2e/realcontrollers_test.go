//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// TestContractsBreakForReal onboards the example spoke with the real cert-manager and External
// Secrets Operator, then breaks what they and Roles Anywhere decide, one thing at a time, and
// checks that the Onboarding (what the Contracts tab shows), Argo CD's health of the resource
// that failed, the spoke Application's health and that of its app-of-apps (registry-<cluster>,
// a directory Application holding the spoke Application) all lead to the boundary that broke,
// then that it recovers:
//   - a secret scheduled for deletion in Secrets Manager: External Secrets' refresh fails
//     (SecretSyncedError), the Secrets boundary fails;
//   - the role's trust policy no longer matches the certificate subject: Roles Anywhere refuses
//     the credentials helper and the agent, the Identity boundary fails;
//   - the role's permission policy (as spokeforge names derives it, which the fake AWS account
//     enforces) narrowed by one queue: SQS refuses GetQueueUrl, the Queues boundary fails with
//     reason NotAuthorized and IAM's refusal.
//
// The steps share one hub; a failed step skips the rest.
func TestContractsBreakForReal(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	recordDir := filepath.Join(h.opts.RepoRoot, ExampleRepo, exampleSpokeDir)
	spoke, err := h.StartSpoke(ctx, recordDir, SpokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := RepoFiles(filepath.Join(h.opts.RepoRoot, ExampleRepo))
	if err != nil {
		t.Fatal(err)
	}
	const (
		registryApp        = "registry-" + exampleSpoke
		secretNS, secretES = "inference", "hf-token"
		secretName         = "acme-ml/us-east-1/dc-ash1/equinix/gpu-east-1/hf-token"
		role               = "arn:aws:iam::111122223333:role/eue1-workload"
	)
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"onboard with the real controllers", func(t *testing.T) {
			repo, err := h.NewGitRepo("gitops", files)
			if err != nil {
				t.Fatal(err)
			}
			if err := repo.Commit("the spoke's app-of-apps", map[string]string{
				"hub-apps/" + exampleSpoke + "/spoke.yaml": SpokeApplication(exampleSpokeApp, repo.URL, exampleSpokeDir),
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Hub.Apply(ctx, SpokeApplication(exampleSpokeApp, repo.URL, exampleSpokeDir)); err != nil {
				t.Fatal(err)
			}
			started := time.Now()
			if _, err := h.ArgoCD(ctx, "app", "sync", exampleSpokeApp, "--timeout", "300"); err != nil {
				t.Fatal(err)
			}
			t.Logf("sync through every wave with the real cert-manager and External Secrets: %s", time.Since(started).Round(time.Millisecond))
			if _, err := spoke.StartAgent(ctx, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if _, err := waitOnboardingHealth(ctx, h, exampleSpokeApp, "Healthy", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			t.Logf("commit -> Healthy in %s", time.Since(started).Round(time.Millisecond))
			if err := applyAppOfApps(ctx, h, registryApp, repo.URL); err != nil {
				t.Fatal(err)
			}
			if _, err := h.WaitApp(ctx, registryApp, "Healthy", time.Minute, func(s AppState) bool { return s.Health == "Healthy" }); err != nil {
				t.Fatal(err)
			}
			// What the real controllers wrote, for the fixtures and the note.
			for _, r := range []struct{ apiVersion, kind, ns, name string }{
				{"cert-manager.io/v1", "Certificate", spokeforgeNamespace, "workload-identity"},
				{"external-secrets.io/v1", "ClusterSecretStore", "", "spokeforge-aws"},
				{"external-secrets.io/v1", "ExternalSecret", secretNS, secretES},
				{"external-secrets.io/v1", "ExternalSecret", secretNS, "spokeforge-registry"},
			} {
				u, err := h.Spoke.Get(ctx, r.apiVersion, r.kind, r.ns, r.name)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s %s/%s: %s", r.kind, r.ns, r.name, conditionsOf(u))
			}
			if v := spokeSecretValue(ctx, t, h, secretNS, "spokeforge-registry", ".dockerconfigjson"); !strings.Contains(v, `"auths":{"https://111122223333.dkr.ecr.us-east-1.amazonaws.com"`) {
				t.Fatalf("the registry pull Secret holds no ECR auth: %q", v)
			}
		}},
		{"a secret scheduled for deletion fails Secrets", func(t *testing.T) {
			broken := time.Now()
			spoke.AWS.MarkSecretDeleted(secretName)
			if err := forceSync(ctx, h.Spoke, secretNS, secretES); err != nil {
				t.Fatal(err)
			}
			es := waitCondition(ctx, t, h, "external-secrets.io/v1", "ExternalSecret", secretNS, secretES, "Ready", "False", time.Minute)
			t.Logf("External Secrets wrote %s in %s", conditionsOf(es), time.Since(broken).Round(time.Millisecond))
			msg := waitFirstFailed(ctx, t, h, "Secrets", 2*time.Minute)
			t.Logf("Onboarding: Secrets first failed %s after the deletion: %s", time.Since(broken).Round(time.Millisecond), msg)
			health, err := waitResourceHealth(ctx, h, exampleSpokeApp, "ExternalSecret", secretES, "Progressing", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Argo CD: ExternalSecret %s/%s Progressing (young, inside the grace period): %s", secretNS, secretES, health)
			appsDegraded(ctx, t, h)
			spoke.AWS.RestoreSecret(secretName)
			if err := forceSync(ctx, h.Spoke, secretNS, secretES); err != nil {
				t.Fatal(err)
			}
			fixed := time.Now()
			if _, err := waitOnboardingHealth(ctx, h, exampleSpokeApp, "Healthy", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			t.Logf("restored -> Healthy in %s", time.Since(fixed).Round(time.Millisecond))
			if _, err := h.WaitApp(ctx, registryApp, "Healthy", 2*time.Minute, func(s AppState) bool { return s.Health == "Healthy" }); err != nil {
				t.Fatal(err)
			}
		}},
		{"a trust policy that no longer matches the subject fails Identity", func(t *testing.T) {
			broken := time.Now()
			spoke.AWS.RoleCondition(role, "aws:PrincipalTag/x509Subject/OU", "staging")
			msg := waitFirstFailed(ctx, t, h, "Identity", 2*time.Minute)
			t.Logf("Onboarding: Identity first failed %s after the trust policy changed: %s", time.Since(broken).Round(time.Millisecond), msg)
			if !strings.Contains(msg, "AccessDeniedException: Unable to assume role for arn "+role) {
				t.Fatalf("the Identity message does not carry Roles Anywhere's refusal: %q", msg)
			}
			// The credentials helper restarts (a new pod) and is refused too.
			cred := spoke.credentialsProcess()
			if cred == nil {
				t.Fatal("the credentials helper is not running")
			}
			cred.stop(5 * time.Second)
			if err := waitLog(ctx, cred.LogPath, "Unable to assume role for arn "+role, time.Minute); err != nil {
				t.Fatal(err)
			}
			appsDegraded(ctx, t, h)
			spoke.AWS.RoleCondition(role, "aws:PrincipalTag/x509Subject/OU", "prod")
			fixed := time.Now()
			if _, err := waitOnboardingHealth(ctx, h, exampleSpokeApp, "Healthy", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			t.Logf("trust policy fixed -> Healthy in %s", time.Since(fixed).Round(time.Millisecond))
			if _, err := h.WaitApp(ctx, registryApp, "Healthy", 2*time.Minute, func(s AppState) bool { return s.Health == "Healthy" }); err != nil {
				t.Fatal(err)
			}
		}},
		{"a permission policy narrowed by one queue fails Queues", func(t *testing.T) {
			e, errs := repo.LoadCluster(recordDir, exampleSpokeDir)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			full := names.Policies(e.Cluster, e.Names).PermissionPolicy
			queue := e.Names.Queues[0].Name
			queueArn := "arn:aws:sqs:us-east-1:111122223333:" + queue
			broken := time.Now()
			spoke.AWS.PutRolePolicy(role, "spokeforge", full.WithoutResource(queueArn))
			msg := waitFirstFailed(ctx, t, h, "Queues", 2*time.Minute)
			t.Logf("Onboarding: Queues first failed %s after the policy lost %s: %s", time.Since(broken).Round(time.Millisecond), queue, msg)
			if !strings.Contains(msg, "sqs:GetQueueUrl "+queue+": refused by IAM") || !strings.Contains(msg, "not authorized to perform: sqs:GetQueueUrl on resource: "+queueArn) {
				t.Fatalf("Argo CD's health message does not carry IAM's refusal of the call: %q", msg)
			}
			ob, err := h.Spoke.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", exampleSpoke)
			if err != nil {
				t.Fatal(err)
			}
			if c := conditionOf(ob, "Queues"); c["reason"] != "NotAuthorized" || !strings.Contains(fmt.Sprint(c["message"]), "on resource: "+queueArn) {
				t.Fatalf("Queues condition %v, want NotAuthorized with IAM's refusal naming %s", c, queueArn)
			}
			if m := fmt.Sprint(conditionOf(ob, "Ready")["message"]); !strings.Contains(m, "the workload role's policy does not allow sqs:GetQueueUrl on "+queue) {
				t.Fatalf("the Onboarding's Ready sentence does not name the refused call: %q", m)
			}
			appsDegraded(ctx, t, h)
			spoke.AWS.PutRolePolicy(role, "spokeforge", *full)
			fixed := time.Now()
			if _, err := waitOnboardingHealth(ctx, h, exampleSpokeApp, "Healthy", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			t.Logf("policy restored -> Healthy in %s", time.Since(fixed).Round(time.Millisecond))
			if _, err := h.WaitApp(ctx, registryApp, "Healthy", 2*time.Minute, func(s AppState) bool { return s.Health == "Healthy" }); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			t.Fatalf("step %q failed; skipping the rest", s.name)
		}
	}
}

// conditionOf is the status condition of type typ of u, or nil.
func conditionOf(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// waitFirstFailed waits until the Onboarding's status names boundary as the first failed one,
// and returns the Onboarding's health message in Argo CD.
func waitFirstFailed(ctx context.Context, t *testing.T, h *Hub, boundary string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if ob, err := h.Spoke.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", exampleSpoke); err == nil {
			last, _, _ = unstructured.NestedString(ob.Object, "status", "firstFailedBoundary")
			if last == boundary {
				msg, err := waitOnboardingHealth(ctx, h, exampleSpokeApp, "Degraded", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				return msg
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("Onboarding first failed boundary %q, want %q within %s", last, boundary, timeout)
	return ""
}

// waitCondition waits until condition typ of the object has status, and returns the object.
func waitCondition(ctx context.Context, t *testing.T, h *Hub, apiVersion, kind, ns, name, typ, status string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		u, err := h.Spoke.Get(ctx, apiVersion, kind, ns, name)
		if err == nil && conditionStatus(u, typ) == status {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s/%s: %s not %s within %s (%v)", kind, ns, name, typ, status, timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// conditionsOf renders status.conditions as "Type=Status Reason: message; …".
func conditionsOf(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			out = append(out, strings.TrimSpace(
				str(m["type"])+"="+str(m["status"])+" "+str(m["reason"])+": "+str(m["message"])))
		}
	}
	return strings.Join(out, "; ")
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// waitLog waits until the log file at path contains want.
func waitLog(ctx context.Context, path, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return &waitError{what: "log " + path + " to contain " + want, last: tail(path, 5)}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// appsDegraded waits until the spoke Application and its app-of-apps are Degraded, and logs what
// Argo CD says of each: the app-of-apps points at the spoke Application, which points at the
// Onboarding.
func appsDegraded(ctx context.Context, t *testing.T, h *Hub) {
	t.Helper()
	for _, app := range []string{exampleSpokeApp, "registry-" + exampleSpoke} {
		st, err := h.WaitApp(ctx, app, "Degraded", 2*time.Minute, func(s AppState) bool { return s.Health == "Degraded" })
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Argo CD: %s %s: %s", app, st.Health, st.HealthMessage)
	}
}

// applyAppOfApps creates the spoke's app-of-apps as a directory Application of the repo's
// hub-apps/<cluster> (holding the spoke Application), labelled with its cluster as the clusters
// ApplicationSet labels it, and syncs it.
func applyAppOfApps(ctx context.Context, h *Hub, name, repoURL string) error {
	if _, err := h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {spokeforge.io/cluster: %[3]s}
spec:
  project: default
  source: {repoURL: %[4]s, targetRevision: main, path: hub-apps/%[3]s}
  destination: {server: https://kubernetes.default.svc, namespace: %[2]s}
`, name, ArgoCDNamespace, exampleSpoke, repoURL)); err != nil {
		return err
	}
	_, err := h.ArgoCD(ctx, "app", "sync", name, "--timeout", "120")
	return err
}
