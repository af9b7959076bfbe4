package generator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the generator's Prometheus series, on their own registry.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	decisions *prometheus.GaugeVec
	sets      *prometheus.GaugeVec
}

func newMetrics(src Source, hub Hub) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "spokeforge_generator_requests_total",
		Help: "HTTP requests by route, parameter kind (getparams only) and status code.",
	}, []string{"route", "kind", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spokeforge_generator_request_duration_seconds",
		Help:    "HTTP request latency by route and parameter kind.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route", "kind"})
	m.decisions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "spokeforge_generator_zone_decisions",
		Help: "Zones by placement outcome (placed, waiting, rejected) at the last evaluation of every zone.",
	}, []string{"outcome"})
	m.sets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "spokeforge_generator_parameter_sets",
		Help: "Parameter sets in the last successful answer, by kind.",
	}, []string{"kind"})
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "spokeforge_generator_snapshot_age_seconds",
		Help: "Seconds since the served repo snapshot was last confirmed to be the repo head; grows while fetches fail or the head is invalid. -1 before the first snapshot.",
	}, func() float64 {
		st := src.Status()
		if st.ConfirmedAt.IsZero() {
			return -1
		}
		return time.Since(st.ConfirmedAt).Seconds()
	})
	valid := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "spokeforge_generator_repo_head_valid",
		Help: "1 when the repo head was loaded and validated, 0 when it is invalid or could not be fetched (the last good snapshot is served).",
	}, func() float64 {
		st := src.Status()
		if st.HeadError == "" && st.FetchError == "" && st.Commit != "" {
			return 1
		}
		return 0
	})
	hubReady := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "spokeforge_generator_hub_ready",
		Help: "1 when the hub informers are synced and its API server answers.",
	}, func() float64 {
		if hub != nil && hub.Ready() == nil {
			return 1
		}
		return 0
	})
	m.reg.MustRegister(m.requests, m.latency, m.decisions, m.sets, age, valid, hubReady,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if sm, ok := src.(interface{ collectors() []prometheus.Collector }); ok {
		m.reg.MustRegister(sm.collectors()...)
	}
	return m
}

func (m *metrics) observeDecisions(ds []Decision) {
	counts := map[Outcome]int{}
	for _, d := range ds {
		counts[d.Outcome]++
	}
	for _, o := range Outcomes {
		m.decisions.WithLabelValues(string(o)).Set(float64(counts[o]))
	}
}
