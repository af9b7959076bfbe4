// Package agent keeps one Onboarding's status true on the spoke: it runs
// the healthchecks on an interval and whenever a watched object changes,
// and writes the result by server-side apply on the status subresource.
//
// It is built to outlive its dependencies: an API server that goes away
// only delays the next write (informers re-list, writes are retried), and a
// boundary whose dependency times out keeps its last known result for
// StaleAfter instead of flapping to Pending.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/spokeforge/spokeforge/healthchecks"
	"github.com/spokeforge/spokeforge/internal/onboarding"
)

// FieldManager owns the status fields the agent applies.
const FieldManager = "spokeforge-agent"

// Options configure the agent.
type Options struct {
	// Name of the Onboarding (cluster-scoped).
	Name string
	// Interval between full re-checks; Debounce groups bursts of changes.
	Interval, Debounce time.Duration
	// StaleAfter bounds how long a last known result outlives an unreachable dependency.
	StaleAfter time.Duration
	// Check carries clients and knobs; its Spec is read from the Onboarding.
	Check   healthchecks.Config
	Log     *slog.Logger
	Metrics *Metrics
}

type known struct {
	res healthchecks.Result
	at  time.Time
}

// Agent is one running agent.
type Agent struct {
	o       Options
	trigger chan string
	last    map[string]known
}

// New prepares an agent.
func New(o Options) *Agent {
	if o.Debounce == 0 {
		o.Debounce = 2 * time.Second
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = 10 * time.Minute
	}
	return &Agent{o: o, trigger: make(chan string, 1), last: map[string]known{}}
}

// Run checks and writes until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	a.watch(ctx)
	retry := 5 * time.Second
	for {
		wait := a.o.Interval
		if err := a.Once(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			a.o.Log.Error("check cycle did not complete; retrying", "error", err, "retryIn", retry)
			wait = min(retry, a.o.Interval)
			retry = min(retry*2, a.o.Interval)
		} else {
			retry = 5 * time.Second
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case why := <-a.trigger:
			timer.Stop()
			a.o.Log.Info("change observed; re-checking", "object", why)
			// Let a burst of changes settle into one check.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(a.o.Debounce):
			}
			drain(a.trigger)
		case <-timer.C:
		}
	}
}

func drain(c chan string) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// Once reads the Onboarding, checks every boundary and applies the status.
func (a *Agent) Once(ctx context.Context) error {
	res := a.o.Check.Dynamic.Resource(healthchecks.OnboardingGVR)
	cur, err := res.Get(ctx, a.o.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("Onboarding %s does not exist on this cluster (the spoke Application delivers it)", a.o.Name)
		}
		return fmt.Errorf("reading Onboarding %s: %w", a.o.Name, err)
	}
	spec, err := DecodeSpec(cur.Object["spec"])
	if err != nil {
		return fmt.Errorf("Onboarding %s: %w", a.o.Name, err)
	}
	cfg := a.o.Check
	cfg.Spec = spec
	rep := healthchecks.Run(ctx, cfg)
	a.carryOver(&rep)
	a.o.Metrics.observe(rep)
	prev, _ := decodeConditions(cur.Object["status"])
	st := healthchecks.Status(rep, prev, cur.GetGeneration())
	if err := a.apply(ctx, st); err != nil {
		a.o.Metrics.writes.WithLabelValues("error").Inc()
		return err
	}
	a.o.Metrics.writes.WithLabelValues("ok").Inc()
	a.o.Log.Info("status written", "firstFailedBoundary", rep.FirstFailed, "message", rep.Message, "took", rep.Duration.Round(time.Millisecond))
	return nil
}

// carryOver keeps the last known result of a boundary whose dependency did
// not answer this time, for up to StaleAfter.
func (a *Agent) carryOver(rep *healthchecks.Report) {
	now := rep.CheckedAt
	for i, r := range rep.Results {
		k, ok := a.last[r.Boundary]
		switch {
		case !r.Unreachable:
			a.last[r.Boundary] = known{res: r, at: now}
		case ok && now.Sub(k.at) < a.o.StaleAfter:
			kept := k.res
			kept.Evidence = append(append([]healthchecks.Evidence(nil), kept.Evidence...), healthchecks.Evidence{
				Check: "last known result", State: healthchecks.Pending,
				Detail: fmt.Sprintf("this check could not complete (%s); keeping the result from %s", r.Message, k.at.Format(time.RFC3339)),
			})
			rep.Results[i] = kept
			a.o.Metrics.carried.WithLabelValues(r.Boundary).Inc()
		}
	}
	rep.FirstFailed, rep.Message = healthchecks.Summarise(rep.Results)
}

func (a *Agent) apply(ctx context.Context, st v1alpha1.OnboardingStatus) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var status map[string]any
	if err := json.Unmarshal(raw, &status); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": onboarding.APIVersion, "kind": onboarding.Kind,
		"metadata": map[string]any{"name": a.o.Name}, "status": status,
	}}
	_, err = a.o.Check.Dynamic.Resource(healthchecks.OnboardingGVR).ApplyStatus(ctx, a.o.Name, u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("applying Onboarding %s status: %w", a.o.Name, err)
	}
	return nil
}

// DecodeSpec reads an Onboarding spec from its unstructured form, refusing
// one the checks cannot work from.
func DecodeSpec(v any) (v1alpha1.OnboardingSpec, error) {
	var sp v1alpha1.OnboardingSpec
	m, ok := v.(map[string]any)
	if !ok {
		return sp, errors.New("spec is missing or not an object")
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return sp, fmt.Errorf("spec: %w", err)
	}
	if err := json.Unmarshal(raw, &sp); err != nil {
		return sp, fmt.Errorf("spec: %w", err)
	}
	for field, val := range map[string]string{"cluster": sp.Cluster, "region": sp.Region, "iamRoleArn": sp.IAMRoleArn,
		"trustAnchorArn": sp.TrustAnchorArn, "profileArn": sp.ProfileArn} {
		if val == "" {
			return sp, fmt.Errorf("spec.%s is empty: re-render the Onboarding with this spokeforge version", field)
		}
	}
	return sp, nil
}

func decodeConditions(v any) ([]v1alpha1.Condition, error) {
	var st v1alpha1.OnboardingStatus
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	return st.Conditions, nil
}

// watch starts informers on what the checks read, so a change re-checks at
// once. Kinds the API server does not serve are left to the interval.
func (a *Agent) watch(ctx context.Context) {
	notify := func(kind string) cache.ResourceEventHandler {
		send := func(obj any) {
			name := kind
			if m, err := metaName(obj); err == nil {
				name = kind + " " + m
			}
			select {
			case a.trigger <- name:
			default:
			}
		}
		return cache.ResourceEventHandlerDetailedFuncs{
			// The initial list is not a change; the first check runs anyway.
			AddFunc: func(obj any, initial bool) {
				if !initial {
					send(obj)
				}
			},
			UpdateFunc: func(_, obj any) { send(obj) },
			DeleteFunc: send,
		}
	}
	typed := informers.NewSharedInformerFactory(a.o.Check.Kube, 0)
	_, _ = typed.Core().V1().Nodes().Informer().AddEventHandler(notify("Node"))
	_, _ = typed.Core().V1().PersistentVolumes().Informer().AddEventHandler(notify("PersistentVolume"))
	_, _ = typed.Storage().V1().StorageClasses().Informer().AddEventHandler(notify("StorageClass"))
	typed.Start(ctx.Done())

	dyn := dynamicinformer.NewDynamicSharedInformerFactory(a.o.Check.Dynamic, 0)
	for _, gvr := range []schema.GroupVersionResource{healthchecks.CertificateGVR, healthchecks.CertificateRequestGVR,
		healthchecks.ExternalSecretGVR, healthchecks.ClusterSecretStoreGVR} {
		if served(a.o, gvr) {
			_, _ = dyn.ForResource(gvr).Informer().AddEventHandler(notify(gvr.Resource))
		}
	}
	// The Onboarding itself: only a spec change (new generation) matters;
	// its status changes are the agent's own writes.
	_, _ = dyn.ForResource(healthchecks.OnboardingGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*unstructured.Unstructured)
			n, ok2 := obj.(*unstructured.Unstructured)
			if ok1 && ok2 && o.GetGeneration() != n.GetGeneration() {
				select {
				case a.trigger <- "Onboarding spec":
				default:
				}
			}
		},
	})
	dyn.Start(ctx.Done())
}

func served(o Options, gvr schema.GroupVersionResource) bool {
	list, err := o.Check.Kube.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true
		}
	}
	return false
}

func metaName(obj any) (string, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	return cache.MetaNamespaceKeyFunc(obj)
}
