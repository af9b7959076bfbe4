package healthchecks

import (
	"context"
	"fmt"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// State of one boundary.
type State string

// States, from best to worst for reporting; NotChecked means a boundary
// could not be checked because an earlier one failed (no AWS credentials).
const (
	Passed     State = "Passed"
	Pending    State = "Pending"
	Failed     State = "Failed"
	NotChecked State = "NotChecked"
)

// Evidence is one observation behind a result: what was called or read and
// what came back. It never holds a credential.
type Evidence struct {
	Check  string `json:"check"`
	State  State  `json:"state"`
	Detail string `json:"detail"`
}

// Result is one boundary's outcome.
type Result struct {
	Boundary string `json:"boundary"`
	State    State  `json:"state"`
	// Reason is a CamelCase machine-readable cause; Pending ones start with "Pending".
	Reason string `json:"reason"`
	// Message is the detailed cause, for the boundary's condition.
	Message string `json:"message"`
	// Summary is the short clause used in the first-failed sentence.
	Summary  string     `json:"summary"`
	Evidence []Evidence `json:"evidence"`
	// Unreachable: the result is Pending only because a dependency did not
	// answer (timeout, throttling, 5xx), not because of what it said.
	Unreachable bool `json:"unreachable,omitempty"`
	// NextRetry is when a dependency of the boundary retries by itself after backing off
	// (cert-manager's issuance backoff), the earliest of several; zero when none is scheduled.
	NextRetry time.Time     `json:"nextRetryTime,omitzero"`
	Duration  time.Duration `json:"-"`
}

// Report is one run over every boundary.
type Report struct {
	Cluster     string              `json:"cluster"`
	CheckedAt   time.Time           `json:"checkedAt"`
	Results     []Result            `json:"results"`
	FirstFailed string              `json:"firstFailedBoundary"`
	Message     string              `json:"message"`
	Connected   *v1alpha1.Connected `json:"connected,omitempty"`
	Duration    time.Duration       `json:"-"`
}

// Exit codes of `spokeforge check`, as troubleshoot's preflight uses them.
const (
	ExitPassed  = 0
	ExitFailed  = 3
	ExitPending = 4
)

// ExitCode is 0 when every boundary passed, 3 on any failure, 4 when the
// rest is only pending (or not checked).
func (r Report) ExitCode() int {
	code := ExitPassed
	for _, res := range r.Results {
		switch res.State {
		case Failed:
			return ExitFailed
		case Pending, NotChecked:
			code = ExitPending
		}
	}
	return code
}

// Backoff bounds the retries of one call.
type Backoff struct {
	Initial, Max time.Duration
	Attempts     int
}

// Identity locates the workload certificate and the Roles Anywhere endpoint.
type Identity struct {
	Certificate, PrivateKey string
	// Endpoint overrides the Roles Anywhere endpoint ("" = the regional one).
	Endpoint        string
	SessionDuration time.Duration
}

// Config is everything one check run needs.
type Config struct {
	Spec     v1alpha1.OnboardingSpec
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Identity Identity
	// AWS is the base SDK config (region, endpoint overrides from
	// AWS_ENDPOINT_URL[_<SERVICE>]); credentials come from Roles Anywhere.
	AWS aws.Config
	// S3PathStyle addresses buckets by path, as local S3 endpoints need.
	S3PathStyle bool
	Retry       Backoff
	// CallTimeout bounds each attempt of each call.
	CallTimeout time.Duration
	// CertRenewalWindow: a Ready certificate expiring sooner than this fails
	// (cert-manager should have renewed it).
	CertRenewalWindow time.Duration
	// ProbePVC creates a claim on the StorageClass and waits ProbeTimeout
	// for it to bind; it needs create/get/delete on PVCs in the system
	// namespace, which the rendered agent RBAC does not grant.
	ProbePVC     bool
	ProbeTimeout time.Duration
	Now          func() time.Time
}

// defaults fills unset knobs.
func (c *Config) defaults() {
	if c.Retry.Attempts == 0 {
		c.Retry = Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second, Attempts: 4}
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.CertRenewalWindow == 0 {
		c.CertRenewalWindow = 7 * 24 * time.Hour
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = 30 * time.Second
	}
	if c.Identity.SessionDuration == 0 {
		c.Identity.SessionDuration = 15 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// run carries one check run's state between boundaries.
type run struct {
	cfg Config
	aws *aws.Config // nil when identity produced no credentials
}

// Run checks every boundary in order and summarises. It never returns an
// error: an unreachable dependency is a result like any other.
func Run(ctx context.Context, cfg Config) Report {
	cfg.defaults()
	start := cfg.Now()
	r := &run{cfg: cfg}
	checks := []func(context.Context) Result{
		r.identity, r.secrets, r.certificates, r.registry, r.queues, r.storage, r.workload,
	}
	rep := Report{Cluster: cfg.Spec.Cluster, CheckedAt: start.UTC().Truncate(time.Second)}
	for i, check := range checks {
		t := time.Now()
		res := check(ctx)
		res.Boundary = v1alpha1.Boundaries[i]
		res.Duration = time.Since(t)
		rep.Results = append(rep.Results, res)
	}
	rep.Connected = r.connected(ctx)
	rep.FirstFailed, rep.Message = Summarise(rep.Results)
	rep.Duration = cfg.Now().Sub(start)
	return rep
}

// passPhrase is how a passed boundary reads in the summary sentence.
var passPhrase = map[string]string{
	"Identity":     "the workload identity is valid",
	"Secrets":      "secrets",
	"Certificates": "certificates",
	"Registry":     "the registry",
	"Queues":       "the queues",
	"Storage":      "storage",
	"Workload":     "the GPU workload nodes",
}

// Summarise names the first boundary, in order, that did not pass and says
// what held before it (docs/contracts.md).
func Summarise(results []Result) (first, sentence string) {
	var held []string
	identity := false
	for _, res := range results {
		if res.State == Passed {
			if res.Boundary == "Identity" {
				identity = true
			} else {
				held = append(held, passPhrase[res.Boundary])
			}
			continue
		}
		first = res.Boundary
		what := res.Summary
		if what == "" {
			what = strings.ToLower(res.Boundary) + " could not be checked"
		}
		prefix := ""
		switch {
		case identity && len(held) == 0:
			prefix = "the workload identity is valid"
		case identity:
			prefix = "the workload identity is valid and " + joinAnd(held) + " are ready"
		case len(held) > 0:
			prefix = joinAnd(held) + " are ready"
		}
		if prefix == "" {
			return first, what
		}
		return first, prefix + ", but " + what
	}
	return "", "all onboarding contracts hold: identity, secrets, certificates, registry, queues, storage and workload"
}

func joinAnd(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// builder accumulates evidence and keeps the worst finding.
type builder struct {
	res   Result
	worst State
}

func (b *builder) pass(check, format string, args ...any) {
	b.res.Evidence = append(b.res.Evidence, Evidence{Check: check, State: Passed, Detail: fmt.Sprintf(format, args...)})
}

// finding records a non-passing observation; the first one of the worst
// state becomes the boundary's reason, message and summary.
func (b *builder) finding(state State, check, reason, summary, message string) {
	b.res.Evidence = append(b.res.Evidence, Evidence{Check: check, State: state, Detail: message})
	if rank(state) > rank(b.worst) {
		b.worst = state
		b.res.Reason, b.res.Summary, b.res.Message = reason, summary, message
	}
}

// retryAt records when a backed-off dependency retries by itself, keeping the earliest.
func (b *builder) retryAt(t time.Time) {
	if b.res.NextRetry.IsZero() || t.Before(b.res.NextRetry) {
		b.res.NextRetry = t
	}
}

// errFinding records a failed call: a transient error is Pending with the
// reason "Pending"+reason and marks the result Unreachable, so the agent
// may keep the last known result instead.
func (b *builder) errFinding(st State, check, reason, summary, message string) {
	before := b.worst
	if st == Pending {
		if p, ok := pendingReason[reason]; ok {
			reason = p
		} else {
			reason = "Pending" + reason
		}
	}
	b.finding(st, check, reason, summary, message)
	if st == Pending && rank(before) < rank(Pending) {
		b.res.Unreachable = true
	}
}

// pendingReason names the transient form of reasons whose failed form
// would read wrong with a "Pending" prefix.
var pendingReason = map[string]string{
	"RolesAnywhereDenied": "PendingRolesAnywhere", "CallerIdentityFailed": "PendingCallerIdentity",
	"RegistryTokenDenied": "PendingRegistryToken", "QueueAttributesDenied": "PendingQueueAttributes",
}

func rank(s State) int {
	switch s {
	case Failed:
		return 3
	case NotChecked:
		return 2
	case Pending:
		return 1
	}
	return 0
}

func (b *builder) done(passReason, passMessage string) Result {
	if b.worst == "" || b.worst == Passed {
		b.res.State, b.res.Reason, b.res.Message = Passed, passReason, passMessage
		return b.res
	}
	b.res.State = b.worst
	if n := b.count(b.worst) - 1; n > 0 {
		b.res.Message += fmt.Sprintf(" (and %d more)", n)
	}
	return b.res
}

func (b *builder) count(s State) int {
	n := 0
	for _, e := range b.res.Evidence {
		if e.State == s {
			n++
		}
	}
	return n
}

// counted is "1 queue" or "n queues".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// denied records a call IAM refused: the workload role's permission
// policy does not allow action on what. AWS's refusal names the resource.
func (b *builder) denied(check, action, what string, err error) {
	b.finding(Failed, check, "NotAuthorized", "the workload role's policy does not allow "+action+" on "+what,
		fmt.Sprintf("%s %s: refused by IAM (%s); the workload role's permission policy must allow it: spokeforge names -o json gives the policy (iam.permissionPolicy)",
			action, what, short(err)))
}

// noCredentials marks the AWS part of a boundary as not checked.
func (b *builder) noCredentials(check string) {
	b.finding(NotChecked, check, "NotChecked", "it could not be checked without AWS credentials",
		"not checked: the workload identity produced no AWS credentials")
}
