package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/load"
	"github.com/tokbench/tokbench/sweep"
)

func loadCommand() *cli.Command {
	return &cli.Command{
		Name:  "load",
		Usage: "serve a stream of requests with continuous batching and measure what users see",
		UsageText: "tokbench load -m M --workload short --concurrency 8 --requests 64 [--slo ttft_p99=2s,itl_p99=60ms] [--out load.jsonl] [-o table|json]\n" +
			"   tokbench load -m M --prompt uniform:512-2048 --output normal:128,32 --rate 2 --burstiness 4 --requests 100",
		Flags: append(serveFlags(),
			&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "closed loop: clients, each keeping one request in flight"},
			&cli.Float64Flag{Name: "rate", Usage: "open loop instead: requests per second"},
			&cli.Float64Flag{Name: "burstiness", Value: 1, Usage: "open loop: squared CV of the gaps (1: Poisson, more: burstier)"},
			&cli.IntFlag{Name: "requests", Value: 64, Usage: "requests in the run"},
			&cli.IntFlag{Name: "slots", Usage: "sequences served at once (default: the concurrency, 16 for an open loop)"},
			&cli.StringFlag{Name: "out", Usage: "append one JSON line per request and one summary line to this file"},
		),
		Action: doLoad,
	}
}

// serveFlags are shared by load and capacity.
func serveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "GGUF model file"},
		&cli.StringFlag{Name: "synth", Usage: "a synthetic preset instead of -m (made once in the cache)"},
		&cli.StringFlag{Name: "synth-type", Value: "q8_0", Usage: "quantization of the --synth model"},
		&cli.StringFlag{Name: "workload", Value: "short", Usage: "preset: " + strings.Join(load.PresetNames(), ", ")},
		&cli.StringFlag{Name: "prompt", Usage: "prompt lengths instead of the preset's: N, uniform:A-B, normal:MEAN,SD, list:N,N,..."},
		&cli.StringFlag{Name: "output", Usage: "output lengths instead of the preset's (same forms)"},
		&cli.IntFlag{Name: "max-prompt", Usage: "guard: reject requests with longer prompts (0: none)"},
		&cli.IntFlag{Name: "max-output", Usage: "guard: reject requests asking for more output (0: none)"},
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

// serveSetup reads what load and capacity share: the workload, the SLOs
// and the model.
func serveSetup(c *cli.Context) (load.Workload, []load.SLO, string, error) {
	w, ok := load.Presets[c.String("workload")]
	if !ok {
		return w, nil, "", usagef("--workload %q: use one of %s, or give --prompt and --output", c.String("workload"), strings.Join(load.PresetNames(), ", "))
	}
	for name, dst := range map[string]*load.Dist{"prompt": &w.Prompt, "output": &w.Output} {
		if s := c.String(name); s != "" {
			d, err := load.ParseDist(s)
			if err != nil {
				return w, nil, "", usagef("--%s %v", name, err)
			}
			*dst, w.Name = d, "custom"
		}
	}
	if format := c.String("output-format"); format != "table" && format != "json" {
		return w, nil, "", usagef("-o %q: use table or json", format)
	}
	var slos []load.SLO
	if s := c.String("slo"); s != "" {
		var err error
		if slos, err = load.ParseSLOs(s); err != nil {
			return w, nil, "", usageErr(err)
		}
	}
	model := c.String("model")
	if c.String("synth") != "" {
		dir, err := sweep.CacheDir()
		if err != nil {
			return w, nil, "", err
		}
		if model, err = sweep.SynthModel(dir, c.String("synth"), c.String("synth-type"), c.Uint64("seed"), os.Stderr); err != nil {
			return w, nil, "", err
		}
	}
	return w, slos, model, nil
}

// server loads the model once and makes contexts of any number of slots,
// each sized for slots x longest tokens and checked against memory first.
func server(c *cli.Context, model string, longest int) (load.Server, func(), error) {
	fa, err := engine.ParseFlashAttn(c.String("flash-attn"))
	if err != nil {
		return nil, nil, usageErr(err)
	}
	base := sweep.Defaults(c.Int("threads"))
	base.Model, base.NPrompt, base.NGen, base.NBatch, base.NUBatch, base.NGPULayers, base.FlashAttn = model, max(longest, 1), 0, c.Int("batch-size"), c.Int("batch-size"), c.Int("n-gpu-layers"), fa
	if err := base.Validate(); err != nil {
		return nil, nil, err
	}
	if err := sweep.Check(base); err != nil {
		return nil, nil, err
	}
	m, err := engine.LoadModel(model, engine.ModelOptions{NGPULayers: base.NGPULayers, Split: engine.SplitLayer})
	if err != nil {
		return nil, nil, err
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
			Threads: p.Threads, FlashAttn: fa, TypeK: "f16", TypeV: "f16", Seed: c.Uint64("seed")})
		if err != nil {
			return nil, nil, err
		}
		ctxt.SetDeadline(time.Now().Add(c.Duration("timeout")))
		stop := context.AfterFunc(c.Context, ctxt.Cancel)
		return ctxt, func() { stop(); ctxt.Close() }, nil
	}
	return srv, m.Close, nil
}

// longestAdmitted is the longest request (prompt + output) the guards let in.
func longestAdmitted(reqs []load.Request, maxPrompt, maxOutput int) int {
	longest := 0
	for _, r := range reqs {
		if (maxPrompt == 0 || r.Prompt <= maxPrompt) && (maxOutput == 0 || r.Output <= maxOutput) {
			longest = max(longest, r.Prompt+r.Output)
		}
	}
	return longest
}

func doLoad(c *cli.Context) error {
	w, slos, model, err := serveSetup(c)
	if err != nil {
		return err
	}
	n, conc, rate := c.Int("requests"), c.Int("concurrency"), c.Float64("rate")
	switch {
	case n < 1 || n > 1_000_000:
		return usagef("--requests %d: use 1 to 1000000", n)
	case rate < 0 || c.Float64("burstiness") <= 0:
		return usagef("--rate must be positive and --burstiness above 0")
	case rate == 0 && conc < 1:
		return usagef("--concurrency %d: need at least 1 client (or an open loop with --rate)", conc)
	}
	reqs := w.Generate(n, c.Uint64("seed"))
	opts := load.Options{Slots: c.Int("slots"), Concurrency: conc, MaxPrompt: c.Int("max-prompt"), MaxOutput: c.Int("max-output")}
	if rate > 0 {
		load.Arrivals(reqs, rate, c.Float64("burstiness"), c.Uint64("seed"))
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
	srv, closeModel, err := server(c, model, longestAdmitted(reqs, opts.MaxPrompt, opts.MaxOutput))
	if err != nil {
		return err
	}
	defer closeModel()
	eng, closeCtx, err := srv(opts.Slots)
	if err != nil {
		return err
	}
	defer closeCtx()
	start := time.Now()
	outs, timeline, overhead, runErr := load.Run(c.Context, eng, reqs, opts)
	sum := load.Summarize(outs, time.Since(start).Seconds(), overhead, slos)
	if out := c.String("out"); out != "" {
		if err := writeLoad(out, w, outs, timeline, sum); err != nil {
			return err
		}
	}
	if c.String("output-format") == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"workload": w, "summary": sum, "timeline": timeline, "requests": outs})
	} else {
		printLoad(os.Stdout, w, opts, sum)
	}
	if runErr != nil {
		return fmt.Errorf("load: %w (the requests served so far are above)", runErr)
	}
	return nil
}

func capacityCommand() *cli.Command {
	return &cli.Command{
		Name:      "capacity",
		Usage:     "find the largest concurrency that meets the SLOs",
		UsageText: "tokbench capacity -m M --workload short --slo ttft_p99=2s,itl_p99=60ms [--max-concurrency 256] [--requests-per-client 8]",
		Flags: append(serveFlags(),
			&cli.IntFlag{Name: "max-concurrency", Value: 256, Usage: "largest concurrency tried"},
			&cli.IntFlag{Name: "requests-per-client", Value: 8, Usage: "requests per client in each probe (the first wave is left out as warm-up)"},
		),
		Action: func(c *cli.Context) error {
			w, slos, model, err := serveSetup(c)
			if err != nil {
				return err
			}
			if len(slos) == 0 {
				return usagef("capacity needs --slo, e.g. --slo ttft_p99=2s,itl_p99=60ms")
			}
			mc := c.Int("max-concurrency")
			if mc < 1 || mc > engine.MaxParallelSequences() || c.Int("requests-per-client") < 2 {
				return usagef("--max-concurrency 1 to %d and --requests-per-client at least 2", engine.MaxParallelSequences())
			}
			o := load.CapacityOptions{MaxConcurrency: mc, RequestsPerClient: c.Int("requests-per-client"), Seed: c.Uint64("seed"),
				MaxPrompt: c.Int("max-prompt"), MaxOutput: c.Int("max-output")}
			reqs := w.Generate(mc*o.RequestsPerClient, o.Seed)
			srv, closeModel, err := server(c, model, longestAdmitted(reqs, o.MaxPrompt, o.MaxOutput))
			if err != nil {
				return err
			}
			defer closeModel()
			res, err := load.Capacity(c.Context, srv, w, slos, o)
			if err != nil {
				return err
			}
			if c.String("output-format") == "json" {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "concurrency	req/s	output t/s	ttft p99 ms	itl p99 ms	t/s per user	result	")
			for _, p := range res.Probes {
				s := p.Summary
				result := "pass"
				if !p.Pass {
					result = p.Why
				}
				fmt.Fprintf(tw, "%d	%.2f	%.1f	%.1f	%.1f	%.1f	%s	\n", p.Concurrency, s.RequestsPerS, s.OutputTps, s.TTFTMs.P99, s.ITLMs.P99, s.PerUserTs.P50, result)
			}
			tw.Flush()
			fmt.Printf("\nsustainable: %d concurrent generations, %.1f t/s per user (median), %.1f output t/s in all\nbound by: %s\n",
				res.Concurrency, res.PerUserTs, res.OutputTps, res.BoundBy)
			return nil
		},
	}
}

func writeLoad(path string, w load.Workload, outs []*load.Outcome, timeline []load.Second, sum load.Summary) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("load results: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, o := range outs {
		enc.Encode(map[string]any{"kind": "request", "workload": w.Name, "request": o})
	}
	enc.Encode(map[string]any{"kind": "summary", "workload": w, "summary": sum, "timeline": timeline,
		"tool": "tokbench " + version, "build_commit": engine.LlamaCommit, "ollama_version": engine.OllamaVersion})
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func printLoad(out io.Writer, w load.Workload, o load.Options, s load.Summary) {
	loop := fmt.Sprintf("closed loop, %d clients", o.Concurrency)
	if o.Concurrency == 0 {
		loop = "open loop"
	}
	fmt.Fprintf(out, "workload %s (%s, %d slots): %d requests, %d completed, %d rejected in %.1fs\n",
		w.Name, loop, o.Slots, s.Requests, s.Completed, s.Rejected, s.Seconds)
	fmt.Fprintf(out, "throughput %.2f req/s, %.1f output t/s; goodput %.2f req/s (%.0f%% of requests met every SLO)\n\n",
		s.RequestsPerS, s.OutputTps, s.Goodput, 100*s.GoodFraction)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tp50\tp90\tp95\tp99\tmax\t")
	for _, r := range []struct {
		name string
		p    load.Percentiles
	}{{"queue ms", s.QueueMs}, {"ttft ms", s.TTFTMs}, {"itl ms", s.ITLMs}, {"e2e ms", s.E2EMs}, {"t/s per user", s.PerUserTs}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", r.name, r.p.P50, r.p.P90, r.p.P95, r.p.P99, r.p.Max)
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
	fmt.Fprintf(out, "scheduler overhead: %.2f%% of the wall time outside llama_decode\n", s.SchedulerPct)
}
