//go:build !cmponly

package main

import (
	"context"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/spokeforge/spokeforge/healthchecks"
)

func TestCheckBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad output", []string{"check", "examples/gitops/clusters/gpu-east-1", "-o", "yaml"}, `-o "yaml": want table or json`},
		{"bad record", []string{"check", writeCluster(t, func(s string) string { return s + "\n  bad: [unclosed\n" })}, "invalid YAML"},
		{"no record", []string{"check", t.TempDir()}, "cluster.yaml"},
		{"bad kubeconfig", []string{"check", "examples/gitops/clusters/gpu-east-1", "--kubeconfig", "does-not-exist"}, "kubernetes client"},
	}
	for _, tc := range cases {
		code, out, errOut := run(tc.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1, no stdout, %q", tc.name, code, out, errOut, tc.want)
		}
	}
}

func TestAgentBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent"}, "--onboarding is required"},
		{[]string{"agent", "--onboarding=x", "--interval=10ms"}, "--interval 10ms: want at least 1s"},
	} {
		if code, _, errOut := run(tc.args...); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}

func TestCheckTable(t *testing.T) {
	rep := healthchecks.Report{Cluster: "gpu-east-1", CheckedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	for _, b := range v1alpha1.Boundaries {
		r := healthchecks.Result{Boundary: b, State: healthchecks.Passed, Reason: "Verified", Message: "ok",
			Evidence: []healthchecks.Evidence{{Check: "probe " + b, State: healthchecks.Passed, Detail: "fine"}}}
		if b == "Queues" {
			r = healthchecks.Result{Boundary: b, State: healthchecks.Failed, Reason: "QueueMissing", Message: "queue eue1-jobs does not exist",
				Summary:  "the queue eue1-jobs has not been provisioned",
				Evidence: []healthchecks.Evidence{{Check: "sqs:GetQueueUrl eue1-jobs", State: healthchecks.Failed, Detail: "queue eue1-jobs does not exist"}}}
		}
		rep.Results = append(rep.Results, r)
	}
	rep.FirstFailed, rep.Message = healthchecks.Summarise(rep.Results)
	var b strings.Builder
	writeCheckTable(&b, rep)
	for _, want := range []string{
		"BOUNDARY      STATE   REASON        MESSAGE",
		"Queues        Failed  QueueMissing  queue eue1-jobs does not exist",
		"Queues        FAIL  sqs:GetQueueUrl eue1-jobs  queue eue1-jobs does not exist",
		"gpu-east-1: first failed boundary Queues: the workload identity is valid and secrets, certificates and the registry are ready, but the queue eue1-jobs has not been provisioned",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if rep.ExitCode() != healthchecks.ExitFailed {
		t.Fatalf("exit = %d", rep.ExitCode())
	}
}

func TestIdentityFromSecret(t *testing.T) {
	ctx := context.Background()
	kc := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "spokeforge-system", Name: "workload-identity-tls"},
		Data: map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY")}})
	dir, err := identityFromSecret(ctx, kc, "spokeforge-system/workload-identity-tls")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	fi, err := os.Stat(filepath.Join(dir, "tls.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tls.crt")); string(b) != "CERT" {
		t.Fatalf("tls.crt = %q", b)
	}
	// Not issued yet: an empty folder, which the identity check reports as pending.
	empty, err := identityFromSecret(ctx, kc, "spokeforge-system/other")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(empty)
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("files for a missing Secret: %v", entries)
	}
	if _, err := identityFromSecret(ctx, kc, "no-slash"); err == nil || !strings.Contains(err.Error(), "want NAMESPACE/NAME") {
		t.Fatalf("bad ref: %v", err)
	}
}
