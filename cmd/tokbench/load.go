package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/exporter"
	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

func loadCommand() *cli.Command {
	return &cli.Command{
		Name:  "load",
		Usage: "serve a stream of requests with continuous batching and measure what users see",
		UsageText: "tokbench load -m M --workload short --concurrency 8 --requests 64 [--rate 2] [--seed N] [--slo ttft_p99=2s,itl_p99=60ms] [--out load.jsonl] [-o table|json]\n" +
			"   tokbench load -m M --prompt-len uniform:512-2048 --output-len normal:128,32 --rate 2 --burstiness 0.25 --requests 100\n" +
			"   tokbench load -m M --workload short --concurrency 8 --abusive-fraction 0.25 --abusive-shape long-prompt [--max-prompt 512 --fair]\n" +
			"   tokbench load -m M --workload my-workload.yaml --metrics-addr :9464\n" +
			"   tokbench load -m M --trace azure_conv.csv --speedup 4 --slots 16",
		Flags: append(append(serveFlags(),
			&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "closed loop: clients, each keeping one request in flight"},
			&cli.Float64Flag{Name: "rate", Usage: "open loop instead: conversations (requests) per second"},
			&cli.Float64Flag{Name: "burstiness", Value: 1, Usage: "open loop: gamma shape of the gaps, as vLLM's (1: Poisson, below 1: burstier, CV² = 1/burstiness)"},
			&cli.IntFlag{Name: "clients", Usage: "open loop: clients the requests come from (default: the slots)"},
			&cli.IntFlag{Name: "requests", Value: 64, Usage: "legitimate requests in the run"},
			&cli.IntFlag{Name: "slots", Usage: "sequences served at once (default: the concurrency, 16 for an open loop)"},
			&cli.Float64Flag{Name: "abusive-fraction", Usage: "share of abusive clients (closed loop) or requests (open loop); runs without abuse, with it, and with guards"},
			&cli.StringFlag{Name: "abusive-shape", Value: "long-output", Usage: "what abusive clients send: long-prompt or long-output"},
			&cli.IntFlag{Name: "abusive-tokens", Value: 2048, Usage: "the abusive requests' prompt or output length"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "serve live figures in Prometheus format at this address (e.g. :9464), path /metrics"},
			&cli.StringFlag{Name: "events", Usage: "write anomaly events (slog JSON lines) to this file instead of stderr"},
			&cli.Float64Flag{Name: "expect-ts", Usage: "anomaly: a busy second below this many output t/s"},
			&cli.Float64Flag{Name: "drop-threshold", Value: 50, Usage: "anomaly: a busy second this many % below the run's steady output t/s (0: off)"},
			&cli.Float64Flag{Name: "drift-threshold", Value: 20, Usage: "anomaly: steady output t/s drifting down this many % over the run (0: off)"},
			&cli.StringFlag{Name: "out", Usage: "append one JSON line per request and one per run to this file (tokbench report reads it)"},
			&cli.StringFlag{Name: "trace", Usage: "replay this request log (CSV or JSON lines: arrival time, input and output tokens; Azure, BurstGPT, Mooncake layouts) open loop at its recorded times"},
			&cli.Float64Flag{Name: "speedup", Value: 1, Usage: "--trace: replay this many times faster"},
			&cli.DurationFlag{Name: "progress-every", Value: 5 * time.Second, Usage: "how often a progress line goes to stderr"},
		), telemetryFlags()...),
		Action: doLoad,
	}
}

func doLoad(c *cli.Context) error {
	in, err := serveSetup(c)
	if err != nil {
		return err
	}
	spec := load.Spec{Workload: in.workload, Requests: c.Int("requests"), Concurrency: c.Int("concurrency"), Rate: c.Float64("rate"),
		Burstiness: c.Float64("burstiness"), Clients: c.Int("clients"), Slots: c.Int("slots"), Guards: in.guards, Seed: c.Uint64("seed"),
		Abuse: load.Abuse{Fraction: c.Float64("abusive-fraction"), Shape: c.String("abusive-shape"), Tokens: c.Int("abusive-tokens")}}
	if path := c.String("trace"); path != "" {
		if spec.Trace, err = load.ReadTrace(path, c.Float64("speedup")); err != nil {
			return usageErr(err)
		}
		if c.IsSet("rate") || c.IsSet("concurrency") {
			return usagef("--trace sets the arrivals: leave out --rate and --concurrency")
		}
		if !c.IsSet("requests") {
			spec.Requests = len(spec.Trace.Requests)
		}
		spec.Concurrency = 0
		in.workload, spec.Rate = spec.Trace.Workload(), spec.Trace.Rate()
		fmt.Fprintf(os.Stderr, "trace %s (%s): %d requests over %s at --speedup %g (%.3g/s), %d without output left out\n", path, spec.Trace.Layout,
			len(spec.Trace.Requests), load.RoundDuration(time.Duration(spec.Trace.Requests[len(spec.Trace.Requests)-1].At*float64(time.Second))),
			c.Float64("speedup"), spec.Rate, spec.Trace.Skipped)
	}
	scenarios, err := spec.Scenarios()
	if err != nil {
		return err
	}
	for _, sc := range scenarios {
		if err := measure.CheckSlots(in.base, sc.Options.Slots); err != nil {
			return err
		}
	}
	// What can be refused (the sampling rate, a taken metrics port) is,
	// before --out is made.
	sampler, stopSampling, err := startSampling(c)
	if err != nil {
		return err
	}
	defer warn(stopSampling)
	exp, err := serveMetrics(c.String("metrics-addr"), sampler)
	if err != nil {
		return err
	}
	if exp != nil {
		defer exp.Close()
	}
	s, closeEvents, err := loadSession(c, in, spec.Rate)
	if err != nil {
		return err
	}
	defer closeEvents()
	if sampler != nil {
		s.Windows = sampler
	}
	if exp != nil {
		s.Live = exp
	}
	sv, err := measure.Serve(c.Context, in.base, load.Longest(scenarios...), c.Duration("timeout"))
	if err != nil {
		return err
	}
	defer sv.Close()
	s.Server = sv.Slots
	// --timeout bounds the whole run, the waits between an open loop's
	// arrivals too (a trace's long gap, a low --rate).
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	runs, runErr := s.Run(ctx, scenarios)
	if ctx.Err() != nil && c.Context.Err() == nil && runErr == nil {
		runErr = fmt.Errorf("--timeout %s reached", c.Duration("timeout"))
	}
	if err := report.WriteLoadRuns(os.Stdout, c.String("output"), in.workload, runs); err != nil && runErr == nil {
		runErr = err
	}
	return loadEnd(c, s.Events, runErr)
}

// loadSession is how the flags ask a load test's scenarios to be run,
// watched and written.
func loadSession(c *cli.Context, in *served, rate float64) (*load.Session, func(), error) {
	s := &load.Session{Workload: in.workload, SLOs: in.slos, Rate: rate,
		Watch:    load.Monitor{Floor: c.Float64("expect-ts"), DropPct: c.Float64("drop-threshold"), DriftPct: c.Float64("drift-threshold"), Warmup: 3},
		Progress: &load.Progress{W: os.Stderr, Every: c.Duration("progress-every")}}
	w, err := openOut(c.String("out"))
	if err != nil {
		return nil, nil, err
	}
	if w != nil {
		// A request's line is not synced: the kernel keeps what a killed
		// process wrote, and a sync per request would stall the serving
		// loop it is measuring; each run's line syncs the lot.
		s.Request = func(sc string, o *load.Served) error { return w.AppendNoSync(load.RequestLine(sc, o)) }
		s.Done = func(r *load.Result) error { return w.Append(r.Line(in.workload, provenance())) }
	}
	log, closeEvents, err := eventLog(c.String("events"))
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	s.Watch.Log = log
	return s, func() { closeEvents(); w.Close() }, nil
}

// openOut opens a load run's, capacity search's or quality run's --out
// before anything is measured ("": none): a file it cannot write, or that
// another tokbench is writing, is refused now, not after the run. The
// lock is held until the writer is closed.
func openOut(path string) (*record.Writer, error) {
	if path == "" {
		return nil, nil
	}
	w, err := record.CreateLocked(path, nil)
	if err != nil {
		return nil, usagef("--out: %v", err)
	}
	return w, nil
}

// serveMetrics serves the live Prometheus figures at addr (none if
// empty), the sampler's latest readings among them.
func serveMetrics(addr string, sampler *telemetry.Sampler) (*exporter.Exporter, error) {
	if addr == "" {
		return nil, nil
	}
	exp := exporter.New()
	if err := exp.Serve(addr); err != nil {
		return nil, usageErr(err)
	}
	if sampler != nil {
		exp.WatchSampler(sampler)
	}
	fmt.Fprintf(os.Stderr, "metrics at http://%s/metrics\n", exp.Addr())
	return exp, nil
}

// loadEnd says how a load run ended: its error (the requests served so
// far are printed above it), the anomalies it logged, an interruption.
func loadEnd(c *cli.Context, anomalies int, err error) error {
	if err != nil {
		return fmt.Errorf("%w (the requests served so far are above)", err)
	}
	if anomalies > 0 {
		fmt.Fprintf(os.Stderr, "%d anomaly event(s): see %s\n", anomalies, cmp.Or(c.String("events"), "the JSON lines above"))
	}
	if c.Context.Err() != nil {
		return fmt.Errorf("interrupted: the requests served so far are above")
	}
	return nil
}

// eventLog is where anomaly events go: slog JSON lines on stderr, or
// appended to the file path.
func eventLog(path string) (*slog.Logger, func(), error) {
	if path == "" {
		return slog.New(slog.NewJSONHandler(os.Stderr, nil)), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("events: %w", err)
	}
	return slog.New(slog.NewJSONHandler(f, nil)), func() { f.Close() }, nil
}

// provenance is what every load and capacity results line says measured it.
func provenance() load.Provenance {
	return load.Provenance{Host: host.Read().CPUModel, Tool: "tokbench " + version, BuildCommit: engine.LlamaCommit, OllamaVersion: engine.OllamaVersion}
}
