package agent

import (
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spokeforge/spokeforge/healthchecks"
)

// Metrics are the agent's Prometheus series.
type Metrics struct {
	reg      *prometheus.Registry
	state    *prometheus.GaugeVec
	ready    prometheus.Gauge
	duration *prometheus.HistogramVec
	runs     *prometheus.CounterVec
	writes   *prometheus.CounterVec
	carried  *prometheus.CounterVec
	lastRun  prometheus.Gauge
}

var states = []healthchecks.State{healthchecks.Passed, healthchecks.Pending, healthchecks.Failed, healthchecks.NotChecked}

// NewMetrics registers the series on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spokeforge_onboarding_boundary_state",
			Help: "1 for the state each boundary is in (Passed, Pending, Failed, NotChecked), else 0."}, []string{"boundary", "state"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Name: "spokeforge_onboarding_ready",
			Help: "1 when every boundary passed at the last check."}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spokeforge_check_duration_seconds",
			Help: "Time one boundary's check took.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 9)}, []string{"boundary"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spokeforge_check_runs_total",
			Help: "Check runs by outcome (passed, pending, failed)."}, []string{"result"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spokeforge_status_writes_total",
			Help: "Onboarding status applies by result (ok, error)."}, []string{"result"}),
		carried: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spokeforge_last_known_results_kept_total",
			Help: "Times a boundary kept its last known result because a dependency did not answer."}, []string{"boundary"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "spokeforge_last_check_timestamp_seconds",
			Help: "Unix time of the last finished check."}),
	}
	m.reg.MustRegister(m.state, m.ready, m.duration, m.runs, m.writes, m.carried, m.lastRun)
	for _, b := range v1alpha1.Boundaries {
		for _, s := range states {
			m.state.WithLabelValues(b, string(s))
		}
	}
	return m
}

func (m *Metrics) observe(rep healthchecks.Report) {
	for _, r := range rep.Results {
		for _, s := range states {
			v := 0.0
			if r.State == s {
				v = 1
			}
			m.state.WithLabelValues(r.Boundary, string(s)).Set(v)
		}
		m.duration.WithLabelValues(r.Boundary).Observe(r.Duration.Seconds())
	}
	result := map[int]string{healthchecks.ExitPassed: "passed", healthchecks.ExitFailed: "failed", healthchecks.ExitPending: "pending"}[rep.ExitCode()]
	m.runs.WithLabelValues(result).Inc()
	if rep.FirstFailed == "" {
		m.ready.Set(1)
	} else {
		m.ready.Set(0)
	}
	m.lastRun.Set(float64(rep.CheckedAt.Unix()))
}

// Handler serves /metrics and /healthz.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}
