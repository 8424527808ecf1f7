package main

import (
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

// serveFlags are shared by load and capacity.
func serveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "GGUF model file"},
		&cli.StringFlag{Name: "synth", Usage: "a synthetic preset instead of -m (made once in the cache)"},
		&cli.StringFlag{Name: "synth-type", Value: "q8_0", Usage: "quantization of the --synth model"},
		&cli.StringFlag{Name: "workload", Value: "short", Usage: "preset (" + strings.Join(load.PresetNames(), ", ") + ") or a YAML file"},
		&cli.StringFlag{Name: "prompt-len", Aliases: []string{"prompt"}, Usage: "prompt lengths instead of the workload's: N, uniform:A-B, normal:MEAN,SD, list:N,N,..."},
		&cli.StringFlag{Name: "output-len", Usage: "output lengths instead of the workload's (same forms)"},
		&cli.StringFlag{Name: "turns", Usage: "turns per conversation (same forms): later turns resend the history"},
		&cli.IntFlag{Name: "max-prompt", Usage: "guard: reject requests with longer prompts (0: none)"},
		&cli.IntFlag{Name: "max-output", Usage: "guard: reject requests asking for more output (0: none)"},
		&cli.IntFlag{Name: "client-budget", Usage: "guard: tokens (prompt + output) per client per minute; beyond it requests are rejected"},
		&cli.BoolFlag{Name: "fair", Usage: "guard: admit the least-served client first and share each step's prefill among sequences"},
		&cli.StringFlag{Name: "slo", Usage: "objectives, e.g. ttft_p99=2s,itl_p99=60ms: goodput counts requests meeting all"},
		&cli.Uint64Flag{Name: "seed", Value: 42, Usage: "seed of the request sequence, arrivals and tokens"},
		&cli.IntFlag{Name: "batch-size", Aliases: []string{"b"}, Value: 512, Usage: "tokens per decode step (prefill chunks fill what decode leaves)"},
		&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: host.Read().Cores, Usage: "CPU threads"},
		&cli.IntFlag{Name: "n-gpu-layers", Aliases: []string{"ngl"}, Value: -1, Usage: "layers on the GPU (-1: all)"},
		&cli.StringFlag{Name: "flash-attn", Aliases: []string{"fa"}, Value: "auto", Usage: "on, off, auto"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Minute, Usage: "time limit of the run"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o", "output-format"}, Value: "table", Usage: "output format: table or json"},
	}
}

// served is what load and capacity share: the workload, the SLOs, the
// guards and the settings of the model's contexts.
type served struct {
	workload load.Workload
	slos     []load.SLO
	guards   load.Guards
	base     point.Point
}

// serveSetup reads what load and capacity share from the flags.
func serveSetup(c *cli.Context) (*served, error) {
	if err := checkFormat(c.String("output"), report.LoadFormats); err != nil {
		return nil, err
	}
	w, err := load.LookupWorkload(c.String("workload"), c.String("prompt-len"), c.String("output-len"), c.String("turns"))
	if err != nil {
		return nil, err
	}
	in := &served{workload: w, guards: load.Guards{MaxPrompt: c.Int("max-prompt"), MaxOutput: c.Int("max-output"),
		ClientBudget: c.Int("client-budget"), Fair: c.Bool("fair")}}
	if s := c.String("slo"); s != "" {
		if in.slos, err = load.ParseSLOs(s); err != nil {
			return nil, usageErr(err)
		}
	}
	fa, err := point.ParseFlashAttn(c.String("flash-attn"))
	if err != nil {
		return nil, usageErr(err)
	}
	model, err := modelFromFlags(c)
	if err != nil {
		return nil, err
	}
	if err := checkModel(c, model); err != nil {
		return nil, err
	}
	in.base = point.Defaults(c.Int("threads"))
	in.base.Model, in.base.NGPULayers, in.base.FlashAttn, in.base.Seed = model, c.Int("n-gpu-layers"), fa, c.Uint64("seed")
	in.base.Shape = in.base.Whole(c.Int("batch-size")) // a step's tokens, computed at once
	return in, nil
}

// modelFromFlags is the model -m names, or the --synth preset's file
// (made once in the cache).
func modelFromFlags(c *cli.Context) (string, error) {
	model := c.String("model")
	if c.String("synth") == "" {
		if model == "" {
			return "", usagef("no model: give -m FILE.gguf, or --synth PRESET")
		}
		return model, nil
	}
	if model != "" {
		return "", usagef("give -m or --synth, not both")
	}
	dir, err := plan.CacheDir()
	if err != nil {
		return "", err
	}
	return measure.SynthModel(dir, c.String("synth"), c.String("synth-type"), c.Uint64("seed"), os.Stderr)
}

// checkFormat refuses an output format not among formats.
func checkFormat(format string, formats []string) error {
	if !slices.Contains(formats, format) {
		return usagef("output format %q: use one of %s", format, strings.Join(formats, ", "))
	}
	return nil
}
