package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, in a registry of the
// server's own (never the global one), served at /metrics.
type metrics struct {
	reg      *prometheus.Registry
	runs     *prometheus.CounterVec   // engine, outcome
	duration *prometheus.HistogramVec // engine
	queue    prometheus.Gauge
	inFlight *prometheus.GaugeVec   // engine
	rejected *prometheus.CounterVec // reason
	requests *prometheus.CounterVec // route, code
	damaged  prometheus.CounterFunc
}

// The reasons of sandbank_rejected_requests_total.
const (
	rejectUnauthorized = "unauthorized"
	rejectRateLimit    = "rateLimit"
	rejectTenantCap    = "tenantConcurrency"
	rejectQueueFull    = "queueFull"
	rejectQueueTimeout = "queueTimeout"
	rejectShutdown     = "shuttingDown"
	rejectBodyTooLarge = "bodyTooLarge"
)

// newMetrics returns the metrics; damaged counts the damage found in the
// stores (storage.Data.Damaged).
func newMetrics(damaged func() float64) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandbank_runs_total",
			Help: "Runs that reached an engine, by engine and outcome (ok, a typed failure's code, infrastructure, canceled, invalidCall).",
		}, []string{"engine", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sandbank_run_duration_seconds",
			Help:    "Duration of runs, from admission to the record, by engine.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"engine"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandbank_queue_depth",
			Help: "Runs waiting for a slot of the global concurrency cap.",
		}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sandbank_runs_in_flight",
			Help: "Runs holding a slot of the global concurrency cap, by engine.",
		}, []string{"engine"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandbank_rejected_requests_total",
			Help: "Requests refused before their run, by reason.",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandbank_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		damaged: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sandbank_store_damaged_total",
			Help: "Stored scripts and receipt-log records found damaged (not matching their address or checksum), on start or on read; none is served.",
		}, damaged),
	}
	m.reg.MustRegister(m.runs, m.duration, m.queue, m.inFlight, m.rejected, m.requests, m.damaged,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
