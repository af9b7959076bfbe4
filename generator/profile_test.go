package generator

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
)

var profileNow = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func holdingOnboarding(at time.Time) *OnboardingView {
	return &OnboardingView{Generation: 3, ObservedGeneration: 3, CheckedAt: at, KubernetesVersion: "v1.31.4", NodeCount: 4, ConnectedAt: at,
		Conditions: map[string]OnboardingCondition{"Ready": {Status: "True", Message: "all 7 boundaries hold"}}}
}

func failingOnboarding(at time.Time, boundary, msg string) *OnboardingView {
	ob := holdingOnboarding(at)
	ob.FirstFailedBoundary = boundary
	ob.Conditions = map[string]OnboardingCondition{"Ready": {Status: "False"}, boundary: {Status: "False", Message: msg}}
	return ob
}

// healthyInputs: every read fresh, Argo CD connected, every boundary holds.
func healthyInputs(c *v1alpha1.Cluster) ProfileInputs {
	return ProfileInputs{Now: profileNow, Staleness: 5 * time.Minute, Cluster: c,
		Connection:        &ClusterConnection{Name: "gpu-east-1", Server: "https://10.20.0.10:6443", Status: "Successful", AttemptedAt: profileNow.Add(-10 * time.Second), ServerVersion: "1.31"},
		ConnectionsReadAt: profileNow.Add(-5 * time.Second),
		Onboarding:        holdingOnboarding(profileNow.Add(-time.Minute)), OnboardingReadAt: profileNow.Add(-20 * time.Second)}
}

func exampleCluster(t testing.TB, name string) *v1alpha1.Cluster {
	t.Helper()
	snap := mustSnapshot(t, exampleFS(t, nil), "c1")
	for _, e := range snap.Repo.Clusters {
		if e.Cluster.Metadata.Name == name {
			return e.Cluster
		}
	}
	t.Fatalf("no example record %s", name)
	return nil
}

func cond(st ProfileStatus, typ string) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func TestComputeProfileStatus(t *testing.T) {
	c := exampleCluster(t, "gpu-east-1")
	stale := profileNow.Add(-6 * time.Minute)
	tests := []struct {
		name          string
		edit          func(*ProfileInputs)
		plane, hold   metav1.ConditionStatus
		planeReason   string
		holdReason    string
		holdMessage   string // a part of it
		wantVersion   string
		forbiddenText string // never in any message
	}{
		{name: "everything holds", edit: func(*ProfileInputs) {}, plane: "True", planeReason: "ArgoCDConnected", hold: "True", holdReason: "AllBoundariesHold", wantVersion: "v1.31.4"},
		{name: "never read anything", edit: func(in *ProfileInputs) {
			*in = ProfileInputs{Now: profileNow, Staleness: 5 * time.Minute, Cluster: c}
		}, plane: "Unknown", planeReason: "StateUnreadable", hold: "Unknown", holdReason: "StateUnreadable"},
		{name: "not registered", edit: func(in *ProfileInputs) { in.Connection = nil }, plane: "False", planeReason: "ClusterNotRegistered", hold: "True", holdReason: "AllBoundariesHold", wantVersion: "v1.31.4"},
		{name: "Argo CD cannot connect", edit: func(in *ProfileInputs) {
			in.Connection.Status, in.Connection.Message = "Failed", "dial tcp 10.20.0.10:6443: connect: connection refused"
		}, plane: "False", planeReason: "ArgoCDConnectionFailed", hold: "True", holdReason: "AllBoundariesHold", wantVersion: "v1.31.4"},
		{name: "Argo CD not monitoring yet", edit: func(in *ProfileInputs) { in.Connection.Status = "Unknown" },
			plane: "Unknown", planeReason: "ArgoCDConnectionUnknown", hold: "True", holdReason: "AllBoundariesHold", wantVersion: "v1.31.4"},
		{name: "Argo CD's state old", edit: func(in *ProfileInputs) { in.Connection.AttemptedAt = stale },
			plane: "Unknown", planeReason: "ConnectionStateStale", hold: "True", holdReason: "AllBoundariesHold", wantVersion: "v1.31.4"},
		{name: "cluster list unreadable for too long: an old True is not kept", edit: func(in *ProfileInputs) {
			in.ConnectionsReadAt, in.ConnectionsErr = stale, errors.New("argocd-server /api/v1/clusters: connection refused")
		}, plane: "Unknown", planeReason: "StateUnreadable", hold: "True", holdReason: "AllBoundariesHold", wantVersion: "v1.31.4"},
		{name: "cluster list failed once: the last read stands", edit: func(in *ProfileInputs) {
			in.ConnectionsErr = errors.New("timeout")
		}, plane: "True", planeReason: "ArgoCDConnected", hold: "True", holdReason: "AllBoundariesHold", wantVersion: "v1.31.4"},
		{name: "no Onboarding yet", edit: func(in *ProfileInputs) { in.Onboarding = nil },
			plane: "True", planeReason: "ArgoCDConnected", hold: "False", holdReason: "NotOnboarded"},
		{name: "agent never checked", edit: func(in *ProfileInputs) {
			in.Onboarding = &OnboardingView{Generation: 1, Conditions: map[string]OnboardingCondition{}}
		}, plane: "True", planeReason: "ArgoCDConnected", hold: "False", holdReason: "NotChecked"},
		{name: "a boundary fails", edit: func(in *ProfileInputs) {
			in.Onboarding = failingOnboarding(profileNow.Add(-time.Minute), "Queues", "sqs:GetQueueUrl eue1-jobs: AWS.SimpleQueueService.NonExistentQueue")
		}, plane: "True", planeReason: "ArgoCDConnected", hold: "False", holdReason: "Queues", holdMessage: "Queues: sqs:GetQueueUrl eue1-jobs", wantVersion: "v1.31.4"},
		{name: "an unknown boundary name is no reason", edit: func(in *ProfileInputs) {
			in.Onboarding = failingOnboarding(profileNow.Add(-time.Minute), "Bad Name\n", "x")
		}, plane: "True", planeReason: "ArgoCDConnected", hold: "False", holdReason: "BoundaryFailed", wantVersion: "v1.31.4"},
		{name: "agent silent", edit: func(in *ProfileInputs) { in.Onboarding = holdingOnboarding(stale) },
			plane: "True", planeReason: "ArgoCDConnected", hold: "Unknown", holdReason: "AgentSilent"},
		{name: "new spec not checked", edit: func(in *ProfileInputs) { in.Onboarding.Generation = 4 },
			plane: "True", planeReason: "ArgoCDConnected", hold: "Unknown", holdReason: "SpecNotChecked", wantVersion: "v1.31.4"},
		{name: "spoke unreachable for too long: the last True turns Unknown", edit: func(in *ProfileInputs) {
			in.OnboardingReadAt, in.OnboardingErr = stale, errors.New("argocd-server /api/v1/applications/spoke-gpu-east-1/resource: 500 Internal Server Error: dial tcp: i/o timeout")
		}, plane: "True", planeReason: "ArgoCDConnected", hold: "Unknown", holdReason: "StateUnreadable", holdMessage: "i/o timeout"},
		{name: "spoke unreachable briefly: the last read stands", edit: func(in *ProfileInputs) { in.OnboardingErr = errors.New("timeout") },
			plane: "True", planeReason: "ArgoCDConnected", hold: "True", holdReason: "AllBoundariesHold", wantVersion: "v1.31.4"},
		{name: "Ready not True and nothing failed", edit: func(in *ProfileInputs) {
			in.Onboarding.Conditions["Ready"] = OnboardingCondition{Status: "Unknown", Message: "checking"}
		}, plane: "True", planeReason: "ArgoCDConnected", hold: "False", holdReason: "NotReady", wantVersion: "v1.31.4"},
		{name: "a huge message is cut", edit: func(in *ProfileInputs) {
			in.Onboarding = failingOnboarding(profileNow.Add(-time.Minute), "Storage", strings.Repeat("ü", 5000))
		}, plane: "True", planeReason: "ArgoCDConnected", hold: "False", holdReason: "Storage", wantVersion: "v1.31.4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := healthyInputs(c)
			tc.edit(&in)
			st := ComputeProfileStatus(in)
			p, h := cond(st, ConditionControlPlaneHealthy), cond(st, ConditionContractsHold)
			if p.Status != tc.plane || p.Reason != tc.planeReason {
				t.Errorf("ControlPlaneHealthy = %s/%s (%s), want %s/%s", p.Status, p.Reason, p.Message, tc.plane, tc.planeReason)
			}
			if h.Status != tc.hold || h.Reason != tc.holdReason {
				t.Errorf("ContractsHold = %s/%s (%s), want %s/%s", h.Status, h.Reason, h.Message, tc.hold, tc.holdReason)
			}
			if !strings.Contains(h.Message, tc.holdMessage) {
				t.Errorf("ContractsHold message %q lacks %q", h.Message, tc.holdMessage)
			}
			if st.Version.Kubernetes != tc.wantVersion {
				t.Errorf("version.kubernetes = %q, want %q", st.Version.Kubernetes, tc.wantVersion)
			}
			for _, c := range st.Conditions {
				if len([]rune(c.Message)) > MaxConditionMessage {
					t.Errorf("%s message has %d characters", c.Type, len([]rune(c.Message)))
				}
				if !conditionReason.MatchString(c.Reason) {
					t.Errorf("%s reason %q is not a valid condition reason", c.Type, c.Reason)
				}
				if c.LastTransitionTime.IsZero() {
					t.Errorf("%s has no lastTransitionTime", c.Type)
				}
			}
		})
	}
}

func TestProfileProperties(t *testing.T) {
	st := ComputeProfileStatus(healthyInputs(exampleCluster(t, "gpu-east-1")))
	got := map[string]string{}
	for _, p := range st.Properties {
		got[p.Name] = p.Value
	}
	want := map[string]string{
		"spokeforge.io/provider": "equinix", "spokeforge.io/region": "us-east-1", "spokeforge.io/zone": "dc-ash1",
		"spokeforge.io/environment": "prod", "spokeforge.io/gpu-count": "16",
		"gpu.spokeforge.io/NVIDIA-A100-SXM4-80GB": "16", "gpu-nodes.spokeforge.io/NVIDIA-A100-SXM4-80GB": "2",
		"spokeforge.io/node-count": "4",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("property %s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("properties %v, want exactly %v", got, want)
	}
	for i := 1; i < len(st.Properties); i++ {
		if st.Properties[i-1].Name >= st.Properties[i].Name {
			t.Fatalf("properties not sorted by name: %v", st.Properties)
		}
	}
	// A record without GPUs (the section is optional) has a count of 0.
	bare := *exampleCluster(t, "gpu-east-1")
	bare.Spec.GPU = nil
	for _, p := range ComputeProfileStatus(healthyInputs(&bare)).Properties {
		if p.Name == "spokeforge.io/gpu-count" && p.Value != "0" {
			t.Errorf("no GPU section: gpu-count %q", p.Value)
		}
	}
	// The node count is a fact of the agent's last check: gone once that is stale.
	in := healthyInputs(exampleCluster(t, "gpu-east-1"))
	in.Onboarding.ConnectedAt = profileNow.Add(-time.Hour)
	for _, p := range ComputeProfileStatus(in).Properties {
		if p.Name == "spokeforge.io/node-count" {
			t.Errorf("a stale node count is still a property")
		}
	}
}

// The status is a pure function: two replicas computing it agree to the
// byte, and an unchanged condition keeps its transition time.
func TestProfileStatusDeterministic(t *testing.T) {
	c := exampleCluster(t, "gpu-east-1")
	a, _ := json.Marshal(ComputeProfileStatus(healthyInputs(c)))
	b, _ := json.Marshal(ComputeProfileStatus(healthyInputs(c)))
	if string(a) != string(b) {
		t.Fatalf("two computations differ:\n%s\n%s", a, b)
	}
	in := healthyInputs(c)
	earlier := metav1.NewTime(profileNow.Add(-time.Hour))
	in.Previous = []metav1.Condition{
		{Type: ConditionControlPlaneHealthy, Status: "True", LastTransitionTime: earlier},
		{Type: ConditionContractsHold, Status: "False", LastTransitionTime: earlier},
	}
	st := ComputeProfileStatus(in)
	if got := cond(st, ConditionControlPlaneHealthy).LastTransitionTime; !got.Equal(&earlier) {
		t.Errorf("unchanged ControlPlaneHealthy moved its transition time to %s", got)
	}
	if got := cond(st, ConditionContractsHold).LastTransitionTime; got.Equal(&earlier) {
		t.Errorf("ContractsHold turned True but kept the old transition time")
	}
}
