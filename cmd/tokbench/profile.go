package main

import (
	"io"
	"os"
	"strings"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/measure"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/preset"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:  "profile",
		Usage: "time every graph node of a point's real steps (llama.cpp's eval callback), grouped by op and type",
		UsageText: "tokbench profile -m MODEL.gguf [-p 512] [-n 32] [-d 0] [--parallel 1] [-o table|json|md|html] [--out FILE]\n" +
			"   the settings are run's; -r, --sampling and telemetry do not apply",
		Flags:  append(pointFlags(), &cli.StringFlag{Name: "out", Usage: "write to this file instead of standard output"}),
		Action: doProfile,
	}
}

func doProfile(c *cli.Context) error {
	p, format, err := pointCommand(c, report.ProfileFormats)
	if err != nil {
		return err
	}
	ps, err := measure.Profile(c.Context, p, measure.DescribeEnv(version))
	if err != nil {
		return err
	}
	return report.ToOut(os.Stdout, c.String("out"), func(w io.Writer) error { return report.WriteOpProfiles(w, format, ps) })
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
