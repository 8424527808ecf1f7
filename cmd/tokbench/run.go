package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/roofline"

	"github.com/tokbench/tokbench/measure"
	"github.com/tokbench/tokbench/record"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/preset"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/report"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "measure one point: prompt processing (pp) and generation (tg), llama-bench's method",
		UsageText: "tokbench run -m MODEL.gguf [-p 512] [-n 128] [-d 0] [--parallel 1] [-r 5] [-o table|json|jsonl|csv|md]\n   tokbench run --synth llama-1b --synth-type q4_0 ...",
		Flags: append(append(pointFlags(), telemetryFlags()...),
			&cli.BoolFlag{Name: "no-probe", Usage: "do not probe this hardware class's ceilings when none are known yet (the roofline then says no ceiling)"}),
		Action: doRun,
	}
}

// pointFlags are the settings of one point (run, profile).
func pointFlags() []cli.Flag {
	d := point.Defaults(gpu.ReadHost().Cores)
	return []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "GGUF model file"},
		&cli.StringFlag{Name: "synth", Usage: "benchmark a synthetic model of this preset (" + strings.Join(preset.Names(), ", ") + "), made once in the cache"},
		&cli.StringFlag{Name: "synth-type", Value: "q8_0", Usage: "quantization of the --synth model"},
		&cli.IntFlag{Name: "n-prompt", Aliases: []string{"p"}, Value: d.NPrompt, Usage: "prompt tokens per sequence (pp test; 0 skips it)"},
		&cli.IntFlag{Name: "n-gen", Aliases: []string{"n"}, Value: d.NGen, Usage: "generated tokens per sequence (tg test; 0 skips it)"},
		&cli.IntFlag{Name: "n-depth", Aliases: []string{"d"}, Value: 0, Usage: "tokens already in the KV cache before each test"},
		&cli.IntFlag{Name: "batch-size", Aliases: []string{"b"}, Value: d.NBatch, Usage: "logical batch (prompt chunk)"},
		&cli.IntFlag{Name: "ubatch-size", Aliases: []string{"ub"}, Value: d.NUBatch, Usage: "physical batch"},
		&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: d.Threads, Usage: "CPU threads (default: physical cores)"},
		&cli.IntFlag{Name: "n-gpu-layers", Aliases: []string{"ngl"}, Value: -1, Usage: "layers to offload to the GPU (-1: all)"},
		&cli.StringFlag{Name: "split-mode", Aliases: []string{"sm"}, Value: "layer", Usage: "multi-GPU split: none, layer, row"},
		&cli.IntFlag{Name: "main-gpu", Aliases: []string{"mg"}, Usage: "GPU for split-mode none"},
		&cli.BoolFlag{Name: "no-mmap", Usage: "read the model into memory instead of mapping it"},
		&cli.StringFlag{Name: "flash-attn", Aliases: []string{"fa"}, Value: "auto", Usage: "flash attention: on, off, auto"},
		&cli.StringFlag{Name: "cache-type-k", Aliases: []string{"ctk"}, Value: d.TypeK, Usage: "K cache type: f16, bf16, f32, q8_0, q5_1, q5_0, q4_1, q4_0, iq4_nl"},
		&cli.StringFlag{Name: "cache-type-v", Aliases: []string{"ctv"}, Value: d.TypeV, Usage: "V cache type (quantized needs -fa on)"},
		&cli.IntFlag{Name: "parallel", Aliases: []string{"np"}, Value: d.Parallel, Usage: "sequences decoding together in one context"},
		&cli.StringFlag{Name: "repetitions", Aliases: []string{"r"}, Value: point.RepsName(d.Reps), Usage: "timed repetitions of each test, or auto: until the mean is within --target-ci"},
		&cli.Float64Flag{Name: "target-ci", Value: 100 * point.DefaultTargetCI, Usage: "-r auto: the 95% CI half-width of the mean t/s to reach, percent of the mean"},
		&cli.IntFlag{Name: "max-reps", Value: point.DefaultMaxReps, Usage: "-r auto: at most this many repetitions"},
		&cli.BoolFlag{Name: "drop-outliers", Usage: "leave repetitions beyond 3 robust sigmas of the median out of the figures (they are reported either way)"},
		&cli.BoolFlag{Name: "no-warmup", Usage: "skip the uncounted warm-up run"},
		&cli.BoolFlag{Name: "no-kernels", Usage: "do not time the step's ops alone (no hardware/kernel/software split in the roofline)"},
		&cli.DurationFlag{Name: "test-step-delay", Hidden: true, Usage: "tests: make each decode step this much slower"},
		&cli.StringFlag{Name: "sampling", Value: "off", Usage: "also run tg through a sampler chain: off, greedy, typical (top-k 40, top-p 0.95, min-p 0.05, temp 0.8, penalty 1.1)"},
		&cli.Uint64Flag{Name: "seed", Value: d.Seed, Usage: "seed of the random tokens (and of --synth weights)"},
		&cli.DurationFlag{Name: "timeout", Value: d.Timeout, Usage: "time limit for the whole point"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output format: " + strings.Join(report.Formats, ", ")},
		&cli.StringFlag{Name: "override-tensor", Aliases: []string{"ot", "override-tensors"}, Usage: "put tensors matching a regex in a buffer type: PATTERN=BUFFER_TYPE;... (e.g. exps=CPU)"},
		&cli.StringFlag{Name: "tensor-split", Aliases: []string{"ts"}, Usage: "each device's share of the layers, e.g. 3/1"},
		&cli.StringFlag{Name: "device", Aliases: []string{"dev"}, Usage: "devices to use, e.g. CUDA0/CUDA1, or none for the CPU alone (tokbench devices lists them)"},
		&cli.IntFlag{Name: "n-cpu-moe", Aliases: []string{"ncmoe"}, Usage: "keep the MoE expert tensors of the first N layers on the CPU"},
		&cli.BoolFlag{Name: "no-kv-offload", Aliases: []string{"nkvo"}, Usage: "keep the KV cache and attention on the CPU"},
		&cli.StringFlag{Name: "poll", Usage: "thread pool's busy-wait (0-100) before sleeping (default 50, llama-bench's); none: no pool"},
		&cli.StringFlag{Name: "cpu-mask", Aliases: []string{"C"}, Usage: "hex mask of the CPUs the threads may use, e.g. 0xF"},
		&cli.BoolFlag{Name: "cpu-strict", Usage: "pin each thread to one CPU of --cpu-mask"},
		&cli.IntFlag{Name: "prio", Usage: "thread priority: -1 low, 0 normal, 1 medium, 2 high, 3 realtime"},
		&cli.StringFlag{Name: "delay", Usage: "pause before each test to let the hardware cool: seconds, or a duration (5, 30s)"},
		&cli.StringFlag{Name: "pg", Usage: "also a pp+tg test: the prompt, then the generation, timed together, e.g. 512,128"},
	}
}

func pointFromFlags(c *cli.Context, model string) (point.Point, error) {
	p := point.Defaults(c.Int("threads"))
	fa, err := point.ParseFlashAttn(c.String("flash-attn"))
	if err != nil {
		return p, usageErr(err)
	}
	sm, err := point.ParseSplitMode(c.String("split-mode"))
	if err != nil {
		return p, usageErr(err)
	}
	p.Model = model
	p.NPrompt, p.NGen, p.NDepth = c.Int("n-prompt"), c.Int("n-gen"), c.Int("n-depth")
	p.NBatch, p.NUBatch = c.Int("batch-size"), c.Int("ubatch-size")
	p.NGPULayers, p.MainGPU, p.Split, p.NoMmap = c.Int("n-gpu-layers"), c.Int("main-gpu"), sm, c.Bool("no-mmap")
	p.FlashAttn = fa
	p.TypeK, p.TypeV = strings.ToLower(c.String("cache-type-k")), strings.ToLower(c.String("cache-type-v"))
	reps, err := point.ParseReps(c.String("repetitions"))
	if err != nil {
		return p, usageErr(err)
	}
	p.Parallel, p.Reps, p.NoWarmup = c.Int("parallel"), reps, c.Bool("no-warmup")
	p.TargetCI, p.MaxReps, p.DropOutliers = c.Float64("target-ci")/100, c.Int("max-reps"), c.Bool("drop-outliers")
	smp, err := point.ParseSampling(c.String("sampling"))
	if err != nil {
		return p, usagef("--%v", err)
	}
	p.Sampling = smp
	p.Seed, p.Timeout = c.Uint64("seed"), c.Duration("timeout")
	p.Kernels, p.StepDelay = !c.Bool("no-kernels"), c.Duration("test-step-delay")
	p.Placement = point.Placement{Devices: c.String("device"), TensorSplit: c.String("tensor-split"), Overrides: c.String("override-tensor"), NCPUMoE: c.Int("n-cpu-moe")}
	p.Threading = point.Threading{Poll: point.PollOf(c.String("poll")), CPUMask: c.String("cpu-mask"), CPUStrict: c.Bool("cpu-strict"), Prio: c.Int("prio")}
	p.NoKVOffload = c.Bool("no-kv-offload")
	if p.Delay, err = parseDelay(c.String("delay")); err != nil {
		return p, usageErr(err)
	}
	if p.PG, err = point.ParsePG(c.String("pg")); err != nil {
		return p, usageErr(err)
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	if err := engine.CheckPlacement(p.Placement); err != nil {
		return p, usageErr(err)
	}
	return p, nil
}

// parseDelay reads --delay as llama-bench writes it (seconds) or as a
// duration.
func parseDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--delay %q: give seconds (5) or a duration (30s)", s)
	}
	return d, nil
}

// pointCommand reads a command of one point (run, profile): no
// arguments, an output format among formats, the model (checked in a
// child process) and the point's settings.
func pointCommand(c *cli.Context, formats []string) (point.Point, string, error) {
	if c.NArg() > 0 {
		return point.Point{}, "", usagef("unexpected argument %q: flags come before arguments, and %s takes none", c.Args().First(), c.Command.Name)
	}
	format := c.String("output")
	if err := checkFormat(format, formats); err != nil {
		return point.Point{}, "", err
	}
	model, err := modelFromFlags(c)
	if err != nil {
		return point.Point{}, "", err
	}
	if err := checkModel(c, model); err != nil {
		return point.Point{}, "", err
	}
	p, err := pointFromFlags(c, model)
	return p, format, err
}

func doRun(c *cli.Context) error {
	p, format, err := pointCommand(c, report.Formats)
	if err != nil {
		return err
	}
	env := measure.DescribeEnv(version)
	if !c.Bool("no-probe") {
		// A first run on new hardware shows its verdicts, not "no ceiling".
		if err := measure.EnsureProbe(env, p, env.CacheDir, func(s string) { fmt.Fprintln(os.Stderr, s) }); err != nil {
			fmt.Fprintln(os.Stderr, "tokbench: probe:", err)
		}
	}
	sampler, stopSampling, err := startSampling(c)
	if err != nil {
		return err
	}
	recs, err := measure.Measure(c.Context, p, env, sampler, func(r record.Record) {
		fmt.Fprintf(os.Stderr, "%s: %.2f t/s\n", r.Test, r.AvgTs)
	})
	if serr := stopSampling(); serr != nil && err == nil {
		err = serr
	}
	annotate(recs)
	// What was measured is printed even when a later test failed.
	if len(recs) > 0 {
		if werr := report.Write(os.Stdout, format, recs); werr != nil && err == nil {
			err = werr
		}
	}
	if errors.Is(err, engine.ErrCanceled) {
		return fmt.Errorf("interrupted: %d test(s) finished and printed", len(recs))
	}
	return err
}

// annotate sets the records' rooflines with the ceilings known now (a
// probe run after the measurement counts), and says what failed.
func annotate(recs []record.Record) {
	dir, err := measure.CacheDir()
	if err == nil {
		err = record.Annotate(recs, &roofline.Cache{Dir: dir})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "roofline:", err)
	}
}
