package healthchecks

import (
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"slices"
	"strings"
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
		st.Boundaries = append(st.Boundaries, res.BoundaryStatus())
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

// BoundaryStatus is a result's evidence and next retry as the status carries them: at most
// v1alpha1.MaxEvidenceItems observations, the worst ones when there are more (in the order they
// were made), each string cut to the CRD's bound so an apply is never refused for its size.
func (res Result) BoundaryStatus() v1alpha1.BoundaryStatus {
	bs := v1alpha1.BoundaryStatus{Name: res.Boundary}
	if !res.NextRetry.IsZero() {
		bs.NextRetryTime = res.NextRetry.UTC().Format(time.RFC3339)
	}
	keep := make([]int, len(res.Evidence))
	for i := range keep {
		keep[i] = i
	}
	if len(keep) > v1alpha1.MaxEvidenceItems {
		slices.SortStableFunc(keep, func(a, b int) int { return rank(res.Evidence[b].State) - rank(res.Evidence[a].State) })
		keep = keep[:v1alpha1.MaxEvidenceItems]
		slices.Sort(keep)
		bs.EvidenceOmitted = int32(len(res.Evidence) - v1alpha1.MaxEvidenceItems)
	}
	for _, i := range keep {
		e := res.Evidence[i]
		bs.Evidence = append(bs.Evidence, v1alpha1.EvidenceItem{
			Check: cut(e.Check, v1alpha1.MaxEvidenceCheck), Result: string(e.State), Detail: cut(e.Detail, v1alpha1.MaxEvidenceDetail)})
	}
	return bs
}

// cut bounds s to max bytes (so to at most max characters), ending "..." when cut, without
// splitting a UTF-8 sequence.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max-3], "") + "..."
}
