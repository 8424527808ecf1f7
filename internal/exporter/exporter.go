// Package exporter serves a load test's live figures in Prometheus's
// format while it runs: queue depth, active sequences, KV cells, tokens,
// steps, and the latencies of finished requests.
package exporter

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tokbench/tokbench/internal/load"
)

// Exporter is a load.Observer whose figures an HTTP server exposes.
type Exporter struct {
	reg                         *prometheus.Registry
	queue, active, kvUsed, perS prometheus.Gauge
	info                        *prometheus.GaugeVec
	outTokens, batchTokens      prometheus.Counter
	steps, decodeSec, overSec   prometheus.Counter
	requests                    *prometheus.CounterVec
	stepSec                     prometheus.Histogram
	ttft, itl, e2e              *prometheus.HistogramVec
	srv                         *http.Server
	addr                        string
}

// latency buckets: 1 ms to about 65 s.
var buckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// New makes the metrics (names tokbench_...).
func New() *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { e.reg.MustRegister(c) }
	g := func(name, help string) prometheus.Gauge {
		x := prometheus.NewGauge(prometheus.GaugeOpts{Name: "tokbench_" + name, Help: help})
		f(x)
		return x
	}
	c := func(name, help string) prometheus.Counter {
		x := prometheus.NewCounter(prometheus.CounterOpts{Name: "tokbench_" + name, Help: help})
		f(x)
		return x
	}
	h := func(name, help string) *prometheus.HistogramVec {
		x := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tokbench_" + name, Help: help, Buckets: buckets}, []string{"client"})
		f(x)
		return x
	}
	e.queue = g("queue_depth", "Requests waiting for a slot.")
	e.active = g("active_sequences", "Requests being served (sequences in the context).")
	e.kvUsed = g("kv_cells_used", "KV cache cells held by active sequences and kept conversations.")
	e.perS = g("output_tokens_per_second", "Output tokens generated in the last complete second.")
	e.info = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tokbench_run_info", Help: "The workload and scenario being run (1)."}, []string{"workload", "scenario"})
	f(e.info)
	e.outTokens = c("output_tokens_total", "Output tokens generated.")
	e.batchTokens = c("batch_tokens_total", "Tokens decoded (prefill and generation).")
	e.steps = c("steps_total", "Decode steps (llama_decode calls).")
	e.decodeSec = c("decode_seconds_total", "Time inside llama_decode.")
	e.overSec = c("scheduler_seconds_total", "Time of the steps outside llama_decode (the scheduler's own).")
	e.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tokbench_requests_total", Help: "Requests ended, by status (ok, rejected) and client (legitimate, abusive)."}, []string{"status", "client"})
	f(e.requests)
	e.stepSec = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tokbench_step_seconds", Help: "Wall time of one scheduler step.", Buckets: buckets})
	f(e.stepSec)
	e.ttft = h("ttft_seconds", "Time to first token of finished requests.")
	e.itl = h("itl_seconds", "Inter-token latencies of finished requests.")
	e.e2e = h("e2e_seconds", "End-to-end time of finished requests.")
	return e
}

// Serve starts the HTTP server on addr (":9464"; port 0 picks one) with
// the metrics at /metrics.
func (e *Exporter) Serve(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{}))
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	e.addr = ln.Addr().String()
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "metrics server: %v\n", err)
		}
	}()
	return nil
}

// Addr is where the server listens.
func (e *Exporter) Addr() string { return e.addr }

// Close stops the server.
func (e *Exporter) Close() error {
	if e.srv == nil {
		return nil
	}
	return e.srv.Close()
}

// Scenario says which run the figures are of.
func (e *Exporter) Scenario(workload, scenario string) {
	e.info.Reset()
	e.info.WithLabelValues(workload, scenario).Set(1)
}

// Step implements load.Observer.
func (e *Exporter) Step(s load.StepStats) {
	e.queue.Set(float64(s.Queue))
	e.active.Set(float64(s.Active))
	e.kvUsed.Set(float64(s.KVUsed))
	e.outTokens.Add(float64(s.Produced))
	e.batchTokens.Add(float64(s.Tokens))
	e.steps.Inc()
	e.decodeSec.Add(s.Decode.Seconds())
	e.overSec.Add((s.Step - s.Decode).Seconds())
	e.stepSec.Observe(s.Step.Seconds())
}

// Done implements load.Observer.
func (e *Exporter) Done(o *load.Served) {
	client := "legitimate"
	if o.Abusive {
		client = "abusive"
	}
	e.requests.WithLabelValues(string(o.Status), client).Inc()
	if o.Status != load.StatusOK {
		return
	}
	e.ttft.WithLabelValues(client).Observe(o.TTFTMs / 1000)
	e.e2e.WithLabelValues(client).Observe(o.E2EMs / 1000)
	itl := e.itl.WithLabelValues(client)
	for _, v := range o.ITLMs {
		itl.Observe(v / 1000)
	}
}

// Second implements load.Observer.
func (e *Exporter) Second(s load.Second) { e.perS.Set(s.OutputTps) }
