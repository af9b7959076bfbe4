package agent

import (
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spokeforge/spokeforge/healthchecks"
)

func results(queues healthchecks.Result) []healthchecks.Result {
	var out []healthchecks.Result
	for _, b := range v1alpha1.Boundaries {
		r := healthchecks.Result{Boundary: b, State: healthchecks.Passed, Reason: "Verified"}
		if b == "Queues" {
			r = queues
			r.Boundary = b
		}
		out = append(out, r)
	}
	return out
}

func TestCarryOverKeepsLastKnownResult(t *testing.T) {
	a := New(Options{StaleAfter: 10 * time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics()})
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	missing := healthchecks.Result{State: healthchecks.Failed, Reason: "QueueMissing", Summary: "the queue q has not been provisioned", Message: "queue q does not exist",
		Evidence: []healthchecks.Evidence{{Check: "sqs:GetQueueUrl q", State: healthchecks.Failed, Detail: "queue q does not exist"}}}
	timeout := healthchecks.Result{State: healthchecks.Pending, Reason: "PendingQueueUnreadable", Summary: "the queue q cannot be reached",
		Message: "GetQueueUrl q: context deadline exceeded", Unreachable: true,
		Evidence: []healthchecks.Evidence{{Check: "sqs:GetQueueUrl q", State: healthchecks.Pending, Detail: "GetQueueUrl q: context deadline exceeded"}}}

	// wantEvidence is the Queues boundary's evidence in the status the agent writes, as check=result.
	cases := []struct {
		name         string
		at           time.Duration
		queues       healthchecks.Result
		wantState    healthchecks.State
		wantFirst    string
		wantEvidence []string
	}{
		{"first definitive result", 0, missing, healthchecks.Failed, "Queues", []string{"sqs:GetQueueUrl q=Failed"}},
		{"timeout keeps the failure", time.Minute, timeout, healthchecks.Failed, "Queues",
			[]string{"sqs:GetQueueUrl q=Failed", "last known result=Pending"}},
		{"fixed", 2 * time.Minute, healthchecks.Result{State: healthchecks.Passed, Reason: "Verified"}, healthchecks.Passed, "", nil},
		{"timeout keeps the pass", 3 * time.Minute, timeout, healthchecks.Passed, "", []string{"last known result=Pending"}},
		{"still unreachable past stale-after", 13 * time.Minute, timeout, healthchecks.Pending, "Queues", []string{"sqs:GetQueueUrl q=Pending"}},
	}
	for _, tc := range cases {
		rep := healthchecks.Report{CheckedAt: t0.Add(tc.at), Results: results(tc.queues)}
		a.carryOver(&rep)
		q := rep.Results[4]
		if q.State != tc.wantState || rep.FirstFailed != tc.wantFirst {
			t.Fatalf("%s: queues %s, first failed %q; want %s, %q", tc.name, q.State, rep.FirstFailed, tc.wantState, tc.wantFirst)
		}
		var evidence []string
		for _, e := range healthchecks.Status(rep, nil, 1).Boundaries[4].Evidence {
			evidence = append(evidence, e.Check+"="+e.Result)
		}
		if !slices.Equal(evidence, tc.wantEvidence) {
			t.Fatalf("%s: status evidence %q, want %q", tc.name, evidence, tc.wantEvidence)
		}
		if tc.queues.Unreachable && tc.wantState != healthchecks.Pending {
			last := q.Evidence[len(q.Evidence)-1]
			if last.Check != "last known result" || !strings.Contains(last.Detail, "deadline exceeded") {
				t.Fatalf("%s: evidence %+v", tc.name, q.Evidence)
			}
		}
	}
}

func TestDecodeSpec(t *testing.T) {
	good := map[string]any{"cluster": "c", "region": "us-east-1", "iamRoleArn": "arn:aws:iam::1:role/r",
		"trustAnchorArn": "arn:ta", "profileArn": "arn:p", "queues": []any{"q1"}}
	cases := []struct {
		name string
		in   any
		err  string
	}{
		{"good", good, ""},
		{"missing spec", nil, "spec is missing"},
		{"not an object", "x", "spec is missing"},
		{"empty region", map[string]any{"cluster": "c", "iamRoleArn": "a", "trustAnchorArn": "t", "profileArn": "p"}, "spec.region is empty"},
		{"wrong type", map[string]any{"cluster": "c", "region": "r", "iamRoleArn": "a", "trustAnchorArn": "t", "profileArn": "p", "queues": "q"}, "spec:"},
	}
	for _, tc := range cases {
		sp, err := DecodeSpec(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && (len(sp.Queues) != 1 || sp.Region != "us-east-1"):
			t.Errorf("%s: spec %+v", tc.name, sp)
		}
	}
}

// FuzzDecodeSpec: whatever an Onboarding's spec holds, decoding returns a
// spec or an error, never panics.
func FuzzDecodeSpec(f *testing.F) {
	f.Add("c", "us-east-1", "arn:aws:iam::1:role/r", int64(3))
	f.Add("", "", "", int64(-1))
	f.Fuzz(func(t *testing.T, cluster, region, role string, n int64) {
		in := map[string]any{"cluster": cluster, "region": region, "iamRoleArn": role, "trustAnchorArn": role, "profileArn": role,
			"gpuNodes": []any{map[string]any{"node": cluster, "count": n}}, "queues": []any{region, n}}
		sp, err := DecodeSpec(in)
		if err == nil && (sp.Cluster == "" || sp.Region == "") {
			t.Fatalf("accepted a spec without cluster or region: %+v", sp)
		}
	})
}
