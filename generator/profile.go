package generator

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
)

// The ClusterProfile conditions spokeforge writes (docs/inventory.md).
const (
	// ConditionControlPlaneHealthy is the API's own condition: Argo CD reaches the cluster.
	ConditionControlPlaneHealthy = "ControlPlaneHealthy"
	// ConditionContractsHold is True only while every onboarding boundary holds.
	ConditionContractsHold = "spokeforge.io/ContractsHold"
)

// ProfileInputs is everything one profile's status is computed from: the
// record, and what the hub knew of the cluster and when it last read it.
type ProfileInputs struct {
	Now       time.Time
	Staleness time.Duration
	Cluster   *v1alpha1.Cluster

	// Connection is Argo CD's view of the cluster, nil when Argo CD does
	// not list it; ConnectionsReadAt is when the list was last read
	// (zero: never), ConnectionsErr why the last read failed.
	Connection        *ClusterConnection
	ConnectionsReadAt time.Time
	ConnectionsErr    error

	// Onboarding as last read through Argo CD (nil: never read, or not
	// found at the last read); OnboardingReadAt when a read last succeeded
	// (a not-found answer is a successful read), OnboardingErr the last
	// read's failure.
	Onboarding       *OnboardingView
	OnboardingReadAt time.Time
	OnboardingErr    error

	// Previous are the profile's conditions now, for lastTransitionTime.
	Previous []metav1.Condition
}

// ProfileStatus is the status of a ClusterProfile (multicluster.x-k8s.io/v1alpha1)
// as spokeforge writes it.
type ProfileStatus struct {
	Conditions []metav1.Condition `json:"conditions"`
	Version    ProfileVersion     `json:"version,omitzero"`
	Properties []ProfileProperty  `json:"properties,omitempty"`
}

// ProfileVersion is the cluster's version.
type ProfileVersion struct {
	Kubernetes string `json:"kubernetes,omitempty"`
}

// ProfileProperty is one name/value property of a cluster.
type ProfileProperty struct {
	Name             string       `json:"name"`
	Value            string       `json:"value"`
	LastObservedTime *metav1.Time `json:"lastObservedTime,omitempty"`
}

// MaxConditionMessage bounds a condition message spokeforge writes (the API allows 32768).
const MaxConditionMessage = 1024

// ComputeProfileStatus is the status a profile must have: a pure function of
// its inputs, so two generator replicas write the same.
func ComputeProfileStatus(in ProfileInputs) ProfileStatus {
	st := ProfileStatus{Conditions: []metav1.Condition{
		in.controlPlane(),
		in.contracts(),
	}}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Message = cutRunes(c.Message, MaxConditionMessage)
		c.LastTransitionTime = metav1.NewTime(in.Now.UTC().Truncate(time.Second))
		for _, p := range in.Previous {
			if p.Type == c.Type && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	st.Properties = recordProperties(in.Cluster)
	if ob := in.fresh(); ob != nil && ob.KubernetesVersion != "" && !in.stale(ob.ConnectedAt) {
		st.Version.Kubernetes = ob.KubernetesVersion
		at := metav1.NewTime(ob.ConnectedAt.UTC())
		st.Properties = append(st.Properties, ProfileProperty{Name: "spokeforge.io/node-count", Value: strconv.Itoa(ob.NodeCount), LastObservedTime: &at})
		sortProperties(st.Properties)
	}
	return st
}

func (in ProfileInputs) controlPlane() metav1.Condition {
	c := metav1.Condition{Type: ConditionControlPlaneHealthy}
	switch cc := in.Connection; {
	case in.stale(in.ConnectionsReadAt):
		c.Status, c.Reason = metav1.ConditionUnknown, "StateUnreadable"
		c.Message = "spokeforge has not read Argo CD's cluster list " + sinceText(in.ConnectionsReadAt, in.Staleness) + errText(in.ConnectionsErr)
	case cc == nil:
		c.Status, c.Reason = metav1.ConditionFalse, "ClusterNotRegistered"
		c.Message = "Argo CD has no cluster Secret for this cluster"
	case in.stale(cc.AttemptedAt):
		c.Status, c.Reason = metav1.ConditionUnknown, "ConnectionStateStale"
		c.Message = "Argo CD last determined the connection state " + lastText(cc.AttemptedAt, in.Staleness)
	case cc.Status == "Successful":
		c.Status, c.Reason = metav1.ConditionTrue, "ArgoCDConnected"
		c.Message = "Argo CD's cluster cache is synced with the API server " + cc.Server
	case cc.Status == "Failed":
		c.Status, c.Reason = metav1.ConditionFalse, "ArgoCDConnectionFailed"
		c.Message = "Argo CD cannot sync with the API server " + cc.Server + ": " + cc.Message
	default:
		c.Status, c.Reason = metav1.ConditionUnknown, "ArgoCDConnectionUnknown"
		c.Message = "Argo CD has not connected to the cluster yet"
		if cc.Message != "" {
			c.Message += ": " + cc.Message
		}
	}
	return c
}

// stale reports whether what was read or observed at t (zero: never) is
// older than the staleness.
func (in ProfileInputs) stale(t time.Time) bool {
	return t.IsZero() || in.Now.Sub(t) > in.Staleness
}

// fresh is the Onboarding last read, if that read is within the staleness.
func (in ProfileInputs) fresh() *OnboardingView {
	if in.stale(in.OnboardingReadAt) {
		return nil
	}
	return in.Onboarding
}

func (in ProfileInputs) contracts() metav1.Condition {
	c := metav1.Condition{Type: ConditionContractsHold}
	ob := in.fresh()
	switch {
	case in.stale(in.OnboardingReadAt):
		c.Status, c.Reason = metav1.ConditionUnknown, "StateUnreadable"
		c.Message = "spokeforge has not read the Onboarding through Argo CD " + sinceText(in.OnboardingReadAt, in.Staleness) + errText(in.OnboardingErr)
	case ob == nil:
		c.Status, c.Reason = metav1.ConditionFalse, "NotOnboarded"
		c.Message = "the spoke Application has not synced the Onboarding yet"
	case ob.CheckedAt.IsZero():
		c.Status, c.Reason = metav1.ConditionFalse, "NotChecked"
		c.Message = "no agent has checked the contracts yet"
	case in.stale(ob.CheckedAt):
		c.Status, c.Reason = metav1.ConditionUnknown, "AgentSilent"
		c.Message = "the agent last checked the contracts " + lastText(ob.CheckedAt, in.Staleness)
	case ob.ObservedGeneration < ob.Generation:
		c.Status, c.Reason = metav1.ConditionUnknown, "SpecNotChecked"
		c.Message = fmt.Sprintf("the agent has not checked the Onboarding's generation %d yet (last checked %d)", ob.Generation, ob.ObservedGeneration)
	case ob.FirstFailedBoundary != "":
		c.Status, c.Reason = metav1.ConditionFalse, boundaryReason(ob.FirstFailedBoundary)
		c.Message = ob.FirstFailedBoundary + ": " + ob.Conditions[ob.FirstFailedBoundary].Message
	case ob.Conditions["Ready"].Status == "True":
		c.Status, c.Reason = metav1.ConditionTrue, "AllBoundariesHold"
		c.Message = "every onboarding boundary holds"
		if m := ob.Conditions["Ready"].Message; m != "" {
			c.Message = m
		}
	default:
		c.Status, c.Reason = metav1.ConditionFalse, "NotReady"
		c.Message = "the Onboarding is not Ready: " + ob.Conditions["Ready"].Message
	}
	return c
}

// boundaries are the Onboarding's boundaries, in order; a reason must be one
// word, so a name the agent did not write maps to BoundaryFailed.
var boundaries = map[string]bool{"Identity": true, "Secrets": true, "Certificates": true, "Registry": true, "Queues": true, "Storage": true, "Workload": true}

func boundaryReason(b string) string {
	if boundaries[b] {
		return b
	}
	return "BoundaryFailed"
}

func sinceText(t time.Time, staleness time.Duration) string {
	if t.IsZero() {
		return "yet"
	}
	return fmt.Sprintf("since %s (more than %s ago)", t.UTC().Format(time.RFC3339), staleness)
}

func lastText(t time.Time, staleness time.Duration) string {
	return fmt.Sprintf("at %s, more than %s ago", t.UTC().Format(time.RFC3339), staleness)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// recordProperties are what a scheduler reads from the record: where the
// cluster is and its GPUs per model (a node pool is the nodes of one model).
func recordProperties(c *v1alpha1.Cluster) []ProfileProperty {
	s := c.Spec
	ps := []ProfileProperty{
		{Name: "spokeforge.io/provider", Value: s.Provider},
		{Name: "spokeforge.io/region", Value: s.Region},
		{Name: "spokeforge.io/zone", Value: s.Zone},
		{Name: "spokeforge.io/environment", Value: s.Environment},
	}
	gpus, nodes, total := map[string]int{}, map[string]int{}, 0
	if s.GPU != nil {
		for _, n := range s.GPU.Nodes {
			gpus[n.Product] += n.Count
			nodes[n.Product]++
			total += n.Count
		}
	}
	ps = append(ps, ProfileProperty{Name: "spokeforge.io/gpu-count", Value: strconv.Itoa(total)})
	for p, n := range gpus {
		ps = append(ps,
			ProfileProperty{Name: "gpu.spokeforge.io/" + p, Value: strconv.Itoa(n)},
			ProfileProperty{Name: "gpu-nodes.spokeforge.io/" + p, Value: strconv.Itoa(nodes[p])})
	}
	out := ps[:0]
	for _, p := range ps {
		// The API requires a value and bounds both.
		if p.Value != "" && len(p.Name) <= 253 && len(p.Value) <= 1024 {
			out = append(out, p)
		}
	}
	sortProperties(out)
	return out
}

func sortProperties(ps []ProfileProperty) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
}
