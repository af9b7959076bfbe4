package lua

import (
	"encoding/json"
	"testing"
	"time"

	argolua "github.com/argoproj/argo-cd/v3/util/lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokeforge/spokeforge/healthchecks"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/onboarding"
)

// TestAgentStatusThroughOnboardingScript feeds the status the agent writes
// (healthchecks.Status) to the Onboarding script in Argo CD's sandbox, so
// the Go status shape and the Lua reading of it cannot drift apart.
func TestAgentStatusThroughOnboardingScript(t *testing.T) {
	pass := func(b string) healthchecks.Result {
		return healthchecks.Result{Boundary: b, State: healthchecks.Passed, Reason: "Verified", Message: b + " ok"}
	}
	cases := []struct {
		name       string
		queues     healthchecks.Result
		generation int64 // the Onboarding's generation when read back
		status     string
		message    string
	}{
		{"all pass", pass("Queues"), 2, "Healthy",
			"all onboarding contracts hold: identity, secrets, certificates, registry, queues, storage and workload"},
		{"queue missing", healthchecks.Result{Boundary: "Queues", State: healthchecks.Failed, Reason: "QueueMissing",
			Message: "queue eue1-jobs does not exist", Summary: "the queue eue1-jobs has not been provisioned",
			// Evidence and NextRetry become status.boundaries, which the script does not read: same health.
			Evidence:  []healthchecks.Evidence{{Check: "sqs:GetQueueUrl eue1-jobs", State: healthchecks.Failed, Detail: "queue eue1-jobs does not exist"}},
			NextRetry: time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)}, 2, "Degraded",
			"queues: queue eue1-jobs does not exist (identity, secrets, certificates, registry ready)"},
		{"queue throttled", healthchecks.Result{Boundary: "Queues", State: healthchecks.Pending, Reason: "PendingQueueUnreadable",
			Message: "GetQueueUrl eue1-jobs: ThrottlingException", Unreachable: true}, 2, "Progressing",
			"queues: GetQueueUrl eue1-jobs: ThrottlingException (identity, secrets, certificates, registry ready)"},
		{"not checked", healthchecks.Result{Boundary: "Queues", State: healthchecks.NotChecked, Reason: "NotChecked"}, 2, "Progressing",
			"queues: not checked yet"},
		{"spec changed since", pass("Queues"), 3, "Progressing", "Waiting for the spokeforge agent to report"},
	}
	vm := argolua.VM{ResourceOverrides: overrides(loadScripts(t))}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rep healthchecks.Report
			rep.CheckedAt = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			for _, b := range v1alpha1.Boundaries {
				r := pass(b)
				if b == "Queues" {
					r = tc.queues
				}
				rep.Results = append(rep.Results, r)
			}
			rep.FirstFailed, rep.Message = healthchecks.Summarise(rep.Results)
			st := healthchecks.Status(rep, nil, 2)
			raw, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			var status map[string]any
			if err := json.Unmarshal(raw, &status); err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": onboarding.APIVersion, "kind": onboarding.Kind,
				"metadata": map[string]any{"name": "gpu-east-1", "generation": tc.generation},
				"status":   status,
			}}
			hs, err := evaluate(t, vm, obj)
			if err != nil {
				t.Fatal(err)
			}
			if string(hs.Status) != tc.status || hs.Message != tc.message {
				t.Fatalf("health = %s %q, want %s %q", hs.Status, hs.Message, tc.status, tc.message)
			}
		})
	}
}
