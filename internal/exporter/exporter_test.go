package exporter

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/internal/telemetry"
)

func TestServesLiveFigures(t *testing.T) {
	e := New()
	if err := e.Serve("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.Scenario("short", "abuse")
	e.Step(load.StepStats{Queue: 3, Active: 5, KVUsed: 700, Tokens: 60, Produced: 5, Step: 10 * time.Millisecond, Decode: 9 * time.Millisecond})
	e.Done(&load.Served{Status: "ok", TTFTMs: 120, E2EMs: 900, ITLMs: []float64{20, 30}})
	e.Done(&load.Served{Request: load.Request{Abusive: true}, Status: "rejected"})
	e.Second(load.Second{OutputTps: 250})
	body := get(t, e)
	for _, want := range []string{
		"tokbench_queue_depth 3", "tokbench_active_sequences 5", "tokbench_kv_cells_used 700",
		"tokbench_output_tokens_total 5", "tokbench_batch_tokens_total 60", "tokbench_steps_total 1",
		`tokbench_requests_total{client="abusive",status="rejected"} 1`, `tokbench_requests_total{client="legitimate",status="ok"} 1`,
		`tokbench_itl_seconds_count{client="legitimate"} 2`, `tokbench_ttft_seconds_sum{client="legitimate"} 0.12`,
		"tokbench_output_tokens_per_second 250", `tokbench_run_info{scenario="abuse",workload="short"} 1`,
		"tokbench_scheduler_seconds_total 0.001",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
	// The host's telemetry, from a sampler without NVML.
	smp, err := telemetry.NewSampler(nil, nil, 50, 1024)
	if err != nil {
		t.Fatal(err)
	}
	// Two readings, taken here rather than by the sampler's goroutine: the
	// CPU share is the change between them.
	smp.SampleNow()
	smp.SampleNow()
	e.WatchSampler(smp)
	if body := get(t, e); !strings.Contains(body, `tokbench_rss{device="host"}`) || !strings.Contains(body, `tokbench_cpu_pct{device="host"}`) {
		t.Errorf("no host telemetry in\n%s", body)
	}
	if err := New().Serve("bad:address:1"); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("bad address: %v", err)
	}
}

func get(t *testing.T, e *Exporter) string {
	t.Helper()
	resp, err := http.Get("http://" + e.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
