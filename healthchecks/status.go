package healthchecks

import (
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"time"
)

// Condition maps a result onto an Onboarding condition (Cluster API style:
// positive polarity, severity only when False; Warning means pending).
func (res Result) Condition(generation int64) v1alpha1.Condition {
	c := v1alpha1.Condition{Type: res.Boundary, Reason: res.Reason, Message: res.Message, ObservedGeneration: generation}
	switch res.State {
	case Passed:
		c.Status = "True"
	case Failed:
		c.Status, c.Severity = "False", "Error"
	case Pending:
		c.Status, c.Severity = "False", "Warning"
	default:
		c.Status = "Unknown"
	}
	if c.Reason == "" {
		c.Reason = string(res.State)
	}
	return c
}

// Status builds the Onboarding status of a report. A condition keeps its
// previous lastTransitionTime unless its status changed.
func Status(rep Report, prev []v1alpha1.Condition, generation int64) v1alpha1.OnboardingStatus {
	before := map[string]v1alpha1.Condition{}
	for _, c := range prev {
		before[c.Type] = c
	}
	now := rep.CheckedAt.UTC().Format(time.RFC3339)
	stamp := func(c v1alpha1.Condition) v1alpha1.Condition {
		if p, ok := before[c.Type]; ok && p.Status == c.Status && p.LastTransitionTime != "" {
			c.LastTransitionTime = p.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		return c
	}
	st := v1alpha1.OnboardingStatus{ObservedGeneration: generation, FirstFailedBoundary: rep.FirstFailed, CheckedAt: now, Connected: rep.Connected}
	ready := v1alpha1.Condition{Type: v1alpha1.ConditionReady, Status: "True", Reason: "AllBoundariesHold", Message: rep.Message, ObservedGeneration: generation}
	for _, res := range rep.Results {
		c := res.Condition(generation)
		st.Conditions = append(st.Conditions, stamp(c))
		if res.Boundary == rep.FirstFailed {
			// Ready is False whenever a boundary does not hold; its reason
			// and severity are the first failed boundary's.
			ready.Status, ready.Reason, ready.Severity = "False", c.Reason, c.Severity
			if ready.Severity == "" {
				ready.Severity = "Warning"
			}
		}
	}
	st.Conditions = append(st.Conditions, stamp(ready))
	return st
}
