package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/tokbench/tokbench/telemetry"

	"github.com/tokbench/tokbench/stats"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/exporter"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/load"
)

func loadCommand() *cli.Command {
	return &cli.Command{
		Name:  "load",
		Usage: "serve a stream of requests with continuous batching and measure what users see",
		UsageText: "tokbench load -m M --workload short --concurrency 8 --requests 64 [--rate 2] [--seed N] [--slo ttft_p99=2s,itl_p99=60ms] [--out load.jsonl] [-o table|json]\n" +
			"   tokbench load -m M --prompt uniform:512-2048 --output normal:128,32 --rate 2 --burstiness 4 --requests 100\n" +
			"   tokbench load -m M --workload short --concurrency 8 --abusive-fraction 0.25 --abusive-shape long-prompt [--max-prompt 512 --fair]\n" +
			"   tokbench load -m M --workload my-workload.yaml --metrics-addr :9464",
		Flags: append(append(serveFlags(),
			&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "closed loop: clients, each keeping one request in flight"},
			&cli.Float64Flag{Name: "rate", Usage: "open loop instead: conversations (requests) per second"},
			&cli.Float64Flag{Name: "burstiness", Value: 1, Usage: "open loop: squared CV of the gaps (1: Poisson, more: burstier)"},
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
		), telemetryFlags()...),
		Action: doLoad,
	}
}

func doLoad(c *cli.Context) error {
	w, slos, g, model, err := serveSetup(c)
	if err != nil {
		return err
	}
	n, conc, rate := c.Int("requests"), c.Int("concurrency"), c.Float64("rate")
	abuse := load.Abuse{Fraction: c.Float64("abusive-fraction"), Shape: c.String("abusive-shape"), Tokens: c.Int("abusive-tokens")}
	switch {
	case n < 1 || n > 1_000_000:
		return usagef("--requests %d: use 1 to 1000000", n)
	case rate < 0 || c.Float64("burstiness") <= 0:
		return usagef("--rate must be positive and --burstiness above 0")
	case rate == 0 && conc < 1:
		return usagef("--concurrency %d: need at least 1 client (or an open loop with --rate)", conc)
	case rate == 0 && abuse.Fraction > 0 && conc < 2:
		return usagef("--abusive-fraction needs --concurrency of at least 2: one legitimate client and one abusive")
	case c.Int("clients") < 0:
		return usagef("--clients %d: must be positive", c.Int("clients"))
	}
	if abuse.Fraction != 0 {
		if err := abuse.Check(); err != nil {
			return usageErr(err)
		}
	}
	opts := load.Options{Slots: c.Int("slots"), Concurrency: conc, Clients: c.Int("clients")}
	if rate > 0 {
		opts.Concurrency = 0
		if opts.Slots == 0 {
			opts.Slots = 16
		}
	} else if opts.Slots == 0 {
		opts.Slots = conc
	}
	if opts.Slots < 1 || opts.Slots > engine.MaxParallelSequences() {
		return usagef("--slots %d: use 1 to %d", opts.Slots, engine.MaxParallelSequences())
	}
	scenarios := load.Plan(w, n, c.Uint64("seed"), opts, load.Arrival{Rate: rate, Burstiness: c.Float64("burstiness")}, abuse, g)
	longest := 0
	for _, s := range scenarios {
		longest = max(longest, longestAdmitted(s.Requests, s.Options.Guards))
	}
	events, closeEvents, err := eventLog(c.String("events"))
	if err != nil {
		return err
	}
	defer closeEvents()
	var exp *exporter.Exporter
	if addr := c.String("metrics-addr"); addr != "" {
		exp = exporter.New()
		if err := exp.Serve(addr); err != nil {
			return usageErr(err)
		}
		defer exp.Close()
		fmt.Fprintf(os.Stderr, "metrics at http://%s/metrics\n", exp.Addr())
	}
	sampler, telemetryDone, err := startSampling(c)
	if err != nil {
		return err
	}
	defer func() {
		if err := telemetryDone(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if sampler != nil && exp != nil {
		exp.WatchSampler(sampler)
	}
	sv, err := server(c, model, longest)
	if err != nil {
		return err
	}
	defer sv.Close()
	var runs []load.Result
	anomalies := 0
	for _, sc := range scenarios {
		mon := &load.Monitor{Log: events, Scenario: sc.Name, Floor: c.Float64("expect-ts"), DropPct: c.Float64("drop-threshold"),
			DriftPct: c.Float64("drift-threshold"), Warmup: 3}
		obs := load.Observers{mon}
		if exp != nil {
			exp.Scenario(w.Name, sc.Name)
			obs = append(obs, exp)
		}
		sc.Options.Observer = obs
		run, runErr := serveScenario(c, sv.Server, sc, slos, sampler)
		mon.Finish()
		anomalies += mon.Events
		if run != nil {
			run.Rate = rate
			if out := c.String("out"); out != "" {
				if err := writeLoad(out, w, run); err != nil {
					return err
				}
			}
			runs = append(runs, *run)
		}
		if runErr != nil {
			_ = printRuns(c, w, runs) // the run's error says more
			return fmt.Errorf("load %s: %w (the requests served so far are above)", sc.Name, runErr)
		}
		if c.Context.Err() != nil {
			break
		}
	}
	if err := printRuns(c, w, runs); err != nil {
		return err
	}
	if anomalies > 0 {
		fmt.Fprintf(os.Stderr, "%d anomaly event(s): see %s\n", anomalies, cmpOr(c.String("events"), "the JSON lines above"))
	}
	if c.Context.Err() != nil {
		return fmt.Errorf("interrupted: the requests served so far are above")
	}
	return nil
}

// serveScenario runs one scenario on a fresh context.
func serveScenario(c *cli.Context, srv load.Server, sc load.Scenario, slos []load.SLO, sampler *telemetry.Sampler) (*load.Result, error) {
	eng, closeCtx, err := srv(sc.Options.Slots)
	if err != nil {
		return nil, err
	}
	defer closeCtx()
	start := time.Now()
	outs, timeline, overhead, runErr := load.Run(c.Context, eng, sc.Requests, sc.Options)
	secs := time.Since(start).Seconds()
	if sampler != nil {
		for i := range timeline {
			t := start.Add(time.Duration(i) * time.Second)
			win := sampler.Window(t, t.Add(time.Second))
			timeline[i].Telemetry = &win
		}
	}
	legit, abusive := load.Split(outs)
	run := &load.Result{Scenario: sc.Name, Loop: "closed", Slots: sc.Options.Slots, Clients: sc.Options.Concurrency, Guards: sc.Options.Guards,
		Summary: load.Summarize(legit, secs, overhead, slos), Timeline: timeline, Requests: outs}
	if sc.Options.Concurrency == 0 {
		run.Loop = "open"
	}
	if len(abusive) > 0 {
		a := load.Summarize(abusive, secs, overhead, nil)
		run.Abusive = &a
	}
	return run, runErr
}

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

func printRuns(c *cli.Context, w load.Workload, runs []load.Result) error {
	if c.String("output-format") == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"workload": w, "scenarios": runs})
	}
	for _, r := range runs {
		printLoad(os.Stdout, w, r)
	}
	if len(runs) > 1 {
		printAbuse(os.Stdout, runs)
	}
	return nil
}

// writeLoad appends a run to a results file: a line per request, then the
// run's own.
func writeLoad(path string, w load.Workload, run *load.Result) error {
	lines := make([]any, 0, len(run.Requests)+1)
	for _, o := range run.Requests {
		lines = append(lines, load.Line{Kind: "request", Scenario: run.Scenario, Request: o})
	}
	r := *run
	r.Requests = nil
	lines = append(lines, load.Line{Kind: "load", Workload: &w, Run: &r, Host: gpu.ReadHost().CPUModel,
		Tool: "tokbench " + version, BuildCommit: engine.LlamaCommit, OllamaVersion: engine.OllamaVersion})
	return appendJSON(path, lines...)
}

func printLoad(out io.Writer, w load.Workload, r load.Result) {
	loop := fmt.Sprintf("closed loop, %d clients", r.Clients)
	if r.Loop == "open" {
		loop = fmt.Sprintf("open loop, %g/s", r.Rate)
	}
	s := r.Summary
	fmt.Fprintf(out, "== %s: workload %s (%s, %d slots): %d requests, %d completed, %d rejected in %.1fs\n",
		r.Scenario, w.Name, loop, r.Slots, s.Requests, s.Completed, s.Rejected, s.Seconds)
	fmt.Fprintf(out, "throughput %.2f req/s, %.1f output t/s; goodput %.2f req/s (%.0f%% of requests met every SLO)\n",
		s.RequestsPerS, s.OutputTps, s.Goodput, 100*s.GoodFraction)
	if s.PrefixTokens > 0 {
		fmt.Fprintf(out, "conversation history: %.0f%% of prompt tokens; %.0f%% of it reused from the KV cache\n",
			100*s.PrefixShare, 100*s.PrefixReused)
	}
	if a := r.Abusive; a != nil {
		fmt.Fprintf(out, "abusive requests (not counted above): %d sent, %d completed, %d rejected, %.1f output t/s\n",
			a.Requests, a.Completed, a.Rejected, a.OutputTps)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tp50\tp90\tp95\tp99\tmax\t")
	for _, row := range []struct {
		name string
		p    stats.Percentiles
	}{{"queue ms", s.QueueMs}, {"ttft ms", s.TTFTMs}, {"itl ms", s.ITLMs}, {"e2e ms", s.E2EMs}, {"t/s per user", s.PerUserTs}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", row.name, row.p.P50, row.p.P90, row.p.P95, row.p.P99, row.p.Max)
	}
	tw.Flush()
	var names []string
	for k := range s.SLOsMet {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		verdict := "met"
		if !s.SLOsMet[k] {
			verdict = "MISSED"
		}
		fmt.Fprintf(out, "SLO %s: %s\n", k, verdict)
	}
	fmt.Fprintf(out, "scheduler overhead: %.2f%% of the wall time outside llama_decode\n\n", s.SchedulerPct)
}

// printAbuse sets the legitimate users' figures of the scenarios side by
// side: what the abuse cost them, and what the guards gave back.
func printAbuse(out io.Writer, runs []load.Result) {
	fmt.Fprintln(out, "legitimate users:")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tcompleted\tt/s per user p50\titl p50 ms\titl p99 ms\tttft p50 ms\tttft p99 ms\tgoodput/s\tabusive ok/rejected\t")
	for _, r := range runs {
		s, abused := r.Summary, "-"
		if a := r.Abusive; a != nil {
			abused = fmt.Sprintf("%d/%d", a.Completed, a.Rejected)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t\n", r.Scenario, s.Completed, s.PerUserTs.P50, s.ITLMs.P50, s.ITLMs.P99,
			s.TTFTMs.P50, s.TTFTMs.P99, s.Goodput, abused)
	}
	tw.Flush()
	if g := runs[len(runs)-1].Guards; g.Any() {
		fmt.Fprintf(out, "guards: max prompt %d, max output %d, client budget %d tokens/min, fair %v\n", g.MaxPrompt, g.MaxOutput, g.ClientBudget, g.Fair)
	}
}
