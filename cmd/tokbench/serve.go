package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/load"
	"github.com/tokbench/tokbench/sweep"
)

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
