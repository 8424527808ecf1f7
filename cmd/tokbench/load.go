package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/exporter"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/load"
	"github.com/tokbench/tokbench/sweep"
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

// serveFlags are shared by load and capacity.
func serveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "GGUF model file"},
		&cli.StringFlag{Name: "synth", Usage: "a synthetic preset instead of -m (made once in the cache)"},
		&cli.StringFlag{Name: "synth-type", Value: "q8_0", Usage: "quantization of the --synth model"},
		&cli.StringFlag{Name: "workload", Value: "short", Usage: "preset (" + strings.Join(load.PresetNames(), ", ") + ") or a YAML file"},
		&cli.StringFlag{Name: "prompt", Usage: "prompt lengths instead of the workload's: N, uniform:A-B, normal:MEAN,SD, list:N,N,..."},
		&cli.StringFlag{Name: "output", Usage: "output lengths instead of the workload's (same forms)"},
		&cli.StringFlag{Name: "turns", Usage: "turns per conversation (same forms): later turns resend the history"},
		&cli.IntFlag{Name: "max-prompt", Usage: "guard: reject requests with longer prompts (0: none)"},
		&cli.IntFlag{Name: "max-output", Usage: "guard: reject requests asking for more output (0: none)"},
		&cli.IntFlag{Name: "client-budget", Usage: "guard: tokens (prompt + output) per client per minute; beyond it requests are rejected"},
		&cli.BoolFlag{Name: "fair", Usage: "guard: admit the least-served client first and share each step's prefill among sequences"},
		&cli.StringFlag{Name: "slo", Usage: "objectives, e.g. ttft_p99=2s,itl_p99=60ms: goodput counts requests meeting all"},
		&cli.Uint64Flag{Name: "seed", Value: 42, Usage: "seed of the request sequence, arrivals and tokens"},
		&cli.IntFlag{Name: "batch-size", Aliases: []string{"b"}, Value: 512, Usage: "tokens per decode step (prefill chunks fill what decode leaves)"},
		&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: gpu.ReadHost().Cores, Usage: "CPU threads"},
		&cli.IntFlag{Name: "n-gpu-layers", Aliases: []string{"ngl"}, Value: -1, Usage: "layers on the GPU (-1: all)"},
		&cli.StringFlag{Name: "flash-attn", Aliases: []string{"fa"}, Value: "auto", Usage: "on, off, auto"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Minute, Usage: "time limit of the run"},
		&cli.StringFlag{Name: "output-format", Aliases: []string{"o"}, Value: "table", Usage: "table or json"},
	}
}

// serveSetup reads what load and capacity share: the workload, the SLOs,
// the guards and the model.
func serveSetup(c *cli.Context) (load.Workload, []load.SLO, load.Guards, string, error) {
	g := load.Guards{MaxPrompt: c.Int("max-prompt"), MaxOutput: c.Int("max-output"), ClientBudget: c.Int("client-budget"), Fair: c.Bool("fair")}
	name := c.String("workload")
	w, ok := load.Presets[name]
	if !ok {
		if _, err := os.Stat(name); err != nil {
			return w, nil, g, "", usagef("--workload %q: use one of %s, or a YAML file (name, prompt, output, turns, tests)", name, strings.Join(load.PresetNames(), ", "))
		}
		var err error
		if w, err = load.ReadWorkload(name); err != nil {
			return w, nil, g, "", usageErr(err)
		}
	}
	for flag, dst := range map[string]*load.Dist{"prompt": &w.Prompt, "output": &w.Output, "turns": &w.Turns} {
		if s := c.String(flag); s != "" {
			d, err := load.ParseDist(s)
			if err != nil {
				return w, nil, g, "", usagef("--%s %v", flag, err)
			}
			*dst, w.Name = d, w.Name+"+"+flag
			if flag != "turns" {
				w.Tests = nil
			}
		}
	}
	if err := w.Check(); err != nil {
		return w, nil, g, "", usageErr(err)
	}
	if g.MaxPrompt < 0 || g.MaxOutput < 0 || g.ClientBudget < 0 {
		return w, nil, g, "", usagef("--max-prompt, --max-output and --client-budget must be 0 (off) or positive")
	}
	if format := c.String("output-format"); format != "table" && format != "json" {
		return w, nil, g, "", usagef("-o %q: use table or json", format)
	}
	var slos []load.SLO
	if s := c.String("slo"); s != "" {
		var err error
		if slos, err = load.ParseSLOs(s); err != nil {
			return w, nil, g, "", usageErr(err)
		}
	}
	model := c.String("model")
	if c.String("synth") != "" {
		dir, err := sweep.CacheDir()
		if err != nil {
			return w, nil, g, "", err
		}
		if model, err = sweep.SynthModel(dir, c.String("synth"), c.String("synth-type"), c.Uint64("seed"), os.Stderr); err != nil {
			return w, nil, g, "", err
		}
	}
	if model == "" {
		return w, nil, g, "", usagef("give a model: -m FILE.gguf or --synth PRESET")
	}
	return w, slos, g, model, nil
}

// served is a loaded model that makes contexts of any number of slots,
// each sized for slots x the longest request and checked against memory
// first.
type served struct {
	Server load.Server
	Base   sweep.Point // the settings of every context (Parallel: 1)
	Meta   engine.Meta
	Close  func()
}

func server(c *cli.Context, model string, longest int) (*served, error) {
	fa, err := engine.ParseFlashAttn(c.String("flash-attn"))
	if err != nil {
		return nil, usageErr(err)
	}
	_, h, err := engine.Inspect(model)
	if err != nil {
		return nil, err
	}
	if int64(longest) > h.NCtxTrain {
		return nil, usagef("the longest request holds %d tokens (prompt + output) but the model was trained for %d: shorten the workload or --abusive-tokens, or cap it with --max-prompt/--max-output", longest, h.NCtxTrain)
	}
	base := sweep.Defaults(c.Int("threads"))
	base.Model, base.NPrompt, base.NGen, base.NBatch, base.NUBatch, base.NGPULayers, base.FlashAttn = model, max(longest, 1), 0, c.Int("batch-size"), c.Int("batch-size"), c.Int("n-gpu-layers"), fa
	if err := base.Validate(); err != nil {
		return nil, err
	}
	if err := sweep.Check(base); err != nil {
		return nil, err
	}
	m, err := engine.LoadModel(model, engine.ModelOptions{NGPULayers: base.NGPULayers, Split: engine.SplitLayer})
	if err != nil {
		return nil, err
	}
	srv := func(slots int) (load.Engine, func(), error) {
		p := base
		p.Parallel = slots
		if err := p.Validate(); err != nil {
			return nil, nil, err
		}
		if err := sweep.Check(p); err != nil {
			return nil, nil, err
		}
		ctxt, err := m.NewContext(engine.ContextOptions{NCtx: p.NCtx(), NBatch: p.NBatch, NUBatch: p.NUBatch, NSeqMax: slots,
			Threads: p.Threads, FlashAttn: fa, TypeK: p.TypeK, TypeV: p.TypeV, Seed: c.Uint64("seed")})
		if err != nil {
			return nil, nil, err
		}
		ctxt.SetDeadline(time.Now().Add(c.Duration("timeout")))
		stop := context.AfterFunc(c.Context, ctxt.Cancel)
		return ctxt, func() { stop(); ctxt.Close() }, nil
	}
	return &served{Server: srv, Base: base, Meta: m.Meta, Close: m.Close}, nil
}

// longestAdmitted is the longest request (prompt + output) the guards let in.
func longestAdmitted(reqs []load.Request, g load.Guards) int {
	longest := 0
	for _, r := range reqs {
		if (g.MaxPrompt == 0 || r.Prompt <= g.MaxPrompt) && (g.MaxOutput == 0 || r.Output <= g.MaxOutput) {
			longest = max(longest, r.Prompt+r.Output)
		}
	}
	return longest
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
	sampler, err := startTelemetry(c)
	if err != nil {
		return err
	}
	if sampler != nil {
		defer sampler.Stop()
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
func serveScenario(c *cli.Context, srv load.Server, sc load.Scenario, slos []load.SLO, sampler *gpu.Sampler) (*load.Result, error) {
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

func writeLoad(path string, w load.Workload, run *load.Result) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("load results: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, o := range run.Requests {
		if err == nil {
			err = enc.Encode(load.Line{Kind: "request", Scenario: run.Scenario, Request: o})
		}
	}
	r := *run
	r.Requests = nil
	if err == nil {
		err = enc.Encode(load.Line{Kind: "load", Workload: &w, Run: &r, Host: gpu.ReadHost().CPUModel,
			Tool: "tokbench " + version, BuildCommit: engine.LlamaCommit, OllamaVersion: engine.OllamaVersion})
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("load results %s: %w", path, err)
	}
	return nil
}
