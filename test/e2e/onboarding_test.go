//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokeforge/spokeforge/internal/awsfake"
)

const onboardingRecord = `apiVersion: spokeforge.io/v1alpha1
kind: Cluster
metadata:
  name: e2e-gpu
spec:
  shortName: e2eg
  account: acme-ml
  accountID: "111122223333"
  environment: prod
  region: us-east-1
  zone: dc-e2e
  provider: metal
  connection:
    server: https://10.20.0.10:6443
    credentials:
      type: bearerToken
  identity:
    trustAnchorArn: arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f
    profileArn: arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d
    issuer:
      name: spokeforge-ca
  network:
    podCIDR: 10.42.0.0/16
    serviceCIDR: 10.43.0.0/16
    dnsServiceIP: 10.43.0.10
  gpu:
    nodes:
      - name: gpu-e2e-01
        product: NVIDIA-A100-SXM4-80GB
        count: 8
  storage:
    devices:
      - node: gpu-e2e-01
        path: /dev/disk/by-id/nvme-E2E_0001
        capacity: 100Gi
        safety: {unpartitioned: true, unmounted: true, notRaidMember: true, checkedAt: "2026-11-30T10:00:00Z"}
  queues:
    - purpose: jobs
  buckets:
    - purpose: models
  secrets:
    - name: hf-token
      namespace: inference
  registries:
    - purpose: inference
      namespaces: [inference]
`

// TestOnboarding: the agent, as a process with the rendered agent RBAC
// (impersonating its ServiceAccount), writes the Onboarding status on the
// spoke; Argo CD shows the spoke Application Degraded with the queue
// boundary's message, then Healthy once the queue is created.
//
// cert-manager and External Secrets run for real on the spoke; no
// kube-controller-manager, NFD or device plugin runs: a stand-in writes
// Deployment status, and the harness registers the GPU node as the
// kubelet, device plugin and NFD would.
func TestOnboarding(t *testing.T) {
	parallel(t)
	start := time.Now()
	h := StartHub(t, Options{})
	if h.Spokeforge == "" {
		t.Fatal("spokeforge binary not built")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	recordDir := filepath.Join(h.Dir, "record", "clusters", "e2e-gpu")
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recordDir, "cluster.yaml"), []byte(onboardingRecord), 0o644); err != nil {
		t.Fatal(err)
	}
	// AWS: everything the record derives, except the jobs queue; the real cert-manager and
	// External Secrets on the spoke.
	spoke, err := h.StartSpoke(ctx, recordDir, SpokeOptions{Except: []string{"e2eg-jobs"}})
	if err != nil {
		t.Fatal(err)
	}
	fake, awsURL := spoke.AWS, spoke.AWSURL

	repo, err := h.NewGitRepo("onboarding", map[string]string{"clusters/e2e-gpu/cluster.yaml": onboardingRecord})
	if err != nil {
		t.Fatal(err)
	}
	const app = "spoke-e2e-gpu"
	if _, err := h.Hub.Apply(ctx, SpokeApplication(app, repo.URL, "clusters/e2e-gpu")); err != nil {
		t.Fatal(err)
	}
	syncStart := time.Now()
	if _, err := h.ArgoCD(ctx, "app", "sync", app, "--timeout", "240"); err != nil {
		t.Fatal(err)
	}
	t.Logf("spoke synced in %s", time.Since(syncStart).Round(time.Millisecond))

	// The agent, with exactly the rendered RBAC and the certificate cert-manager issued.
	crt, key, err := spoke.IdentityFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	awsEnv := spoke.AWSEnv
	agentStart := time.Now()
	agentProc, metricsAddr, err := h.runAgent(ctx, h.Spoke, "e2e-gpu", 5*time.Second, crt, key, awsEnv)
	if err != nil {
		t.Fatal(err)
	}

	// Degraded with the queue boundary's message, as Argo CD shows it.
	msg, err := waitOnboardingHealth(ctx, h, app, "Degraded", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Degraded %s after the agent started: %s", time.Since(agentStart).Round(time.Millisecond), msg)
	for _, want := range []string{"queues: ", "e2eg-jobs", "(identity, secrets, certificates, registry ready)"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("Onboarding health message %q lacks %q", msg, want)
		}
	}
	ob, err := h.Spoke.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", "e2e-gpu")
	if err != nil {
		t.Fatal(err)
	}
	if ff, _, _ := unstructured.NestedString(ob.Object, "status", "firstFailedBoundary"); ff != "Queues" {
		t.Fatalf("status.firstFailedBoundary = %q, want Queues", ff)
	}

	// spokeforge check from a laptop says the same and exits 3.
	checkStart := time.Now()
	out, code := runCheck(ctx, h, recordDir, crt, key, awsEnv)
	t.Logf("spokeforge check (failing) took %s", time.Since(checkStart).Round(time.Millisecond))
	if code != 3 || !strings.Contains(out, "the workload identity is valid and secrets, certificates and the registry are ready, but the queue e2eg-jobs has not been provisioned") {
		t.Fatalf("spokeforge check exit %d:\n%s", code, out)
	}

	// Create the missing queue with the real SDK; the agent notices on its next check.
	fake.StaticKey("AKIAE2ESETUP", "arn:aws:iam::111122223333:role/e2e-setup")
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(awsURL),
		Credentials: awscreds.NewStaticCredentialsProvider("AKIAE2ESETUP", "setup-secret", "")})
	if _, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("e2eg-jobs")}); err != nil {
		t.Fatal(err)
	}
	fixed := time.Now()
	if _, err := h.ArgoCD(ctx, "app", "wait", app, "--health", "--timeout", "120"); err != nil {
		t.Fatal(err)
	}
	t.Logf("argocd app wait --health saw Healthy %s after the queue was created", time.Since(fixed).Round(time.Millisecond))
	msg, err = waitOnboardingHealth(ctx, h, app, "Healthy", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "all onboarding contracts hold") {
		t.Fatalf("Healthy message = %q", msg)
	}
	checkStart = time.Now()
	out, code = runCheck(ctx, h, recordDir, crt, key, awsEnv)
	t.Logf("spokeforge check (passing) took %s", time.Since(checkStart).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("spokeforge check exit %d:\n%s", code, out)
	}

	// AWS times out: the agent keeps the last known result instead of flapping.
	before := fake.Calls("sqs.GetQueueUrl")
	fake.Inject("sqs.GetQueueUrl", awsfake.Fault{Times: -1, Delay: 3 * time.Second})
	for fake.Calls("sqs.GetQueueUrl") < before+8 { // two agent cycles of four attempts
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		time.Sleep(time.Second)
	}
	if ready := onboardingReady(ctx, h); ready != "True" {
		t.Fatalf("Ready = %s while SQS timed out, want the last known True", ready)
	}
	if m := scrape(t, metricsAddr); !strings.Contains(m, `spokeforge_last_known_results_kept_total{boundary="Queues"}`) {
		t.Fatalf("metrics lack the kept-result counter:\n%s", m)
	}
	fake.Inject("sqs.GetQueueUrl", awsfake.Fault{})

	// The spoke API server restarts: the agent survives and writes again.
	checkedAt := statusString(ctx, t, h, "checkedAt")
	old := h.Spoke.Process
	old.stop(5 * time.Second)
	time.Sleep(6 * time.Second) // more than one agent interval without an API server
	if exited, err := agentProc.Exited(); exited {
		t.Fatalf("agent exited while the API server was down: %v", err)
	}
	restarted, err := h.run(old.spec)
	if err != nil {
		t.Fatal(err)
	}
	h.Spoke.Process = restarted
	downAt := time.Now()
	for {
		if ctx.Err() != nil {
			t.Fatalf("no status write after the API server restart (checkedAt still %s)", checkedAt)
		}
		if ob, err := h.Spoke.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", "e2e-gpu"); err == nil {
			at, _, _ := unstructured.NestedString(ob.Object, "status", "checkedAt")
			if at > checkedAt && onboardingReady(ctx, h) == "True" {
				break
			}
		}
		time.Sleep(time.Second)
	}
	t.Logf("agent wrote status again %s after the spoke API server came back", time.Since(downAt).Round(time.Millisecond))
	if _, err := h.ArgoCD(ctx, "app", "wait", app, "--health", "--timeout", "120"); err != nil {
		t.Fatal(err)
	}
	t.Logf("onboarding test total %s", time.Since(start).Round(time.Second))
}

func scrape(t *testing.T, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func statusString(ctx context.Context, t *testing.T, h *Hub, field string) string {
	ob, err := h.Spoke.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", "e2e-gpu")
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(ob.Object, "status", field)
	return v
}

func onboardingReady(ctx context.Context, h *Hub) string {
	ob, err := h.Spoke.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", "e2e-gpu")
	if err != nil {
		return "unreadable: " + err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(ob.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func runCheck(ctx context.Context, h *Hub, dir, crt, key string, env []string) (string, int) {
	cmd := exec.CommandContext(ctx, h.Spokeforge, "check", dir, "--kubeconfig", h.Spoke.Kubeconfig, "--certificate", crt, "--private-key", key)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		return err.Error(), -1
	}
	return string(out), 0
}

// waitOnboardingHealth polls the Application until Argo CD reports the
// Onboarding resource with the given health, and returns its message.
func waitOnboardingHealth(ctx context.Context, h *Hub, app, want string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		out, err := h.ArgoCD(ctx, "app", "get", app, "-o", "json", "--refresh")
		if err == nil {
			var a struct {
				Status struct {
					Health    struct{ Status string }
					Resources []struct {
						Kind   string
						Health *struct{ Status, Message string }
					}
				}
			}
			if json.Unmarshal([]byte(out), &a) == nil {
				for _, r := range a.Status.Resources {
					if r.Kind == "Onboarding" && r.Health != nil {
						last = r.Health.Status + ": " + r.Health.Message
						if r.Health.Status == want && a.Status.Health.Status == want {
							return r.Health.Message, nil
						}
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return "", fmt.Errorf("Application %s: Onboarding not %s within %s; last %q", app, want, timeout, last)
}
