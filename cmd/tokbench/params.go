package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/sweep"
	"github.com/urfave/cli/v2"
)

// listFlags are the test parameters as llama-bench takes them, in run and
// sweep alike: each a comma list, a range (1-8, 64-512*2, 128-1024+128)
// or the flag repeated (-n 16 -n 32); every combination is measured.
var listFlags = map[string]bool{}

func listFlag(name string, aliases []string, usage string) cli.Flag {
	listFlags[name] = true
	return &cli.StringSliceFlag{Name: name, Aliases: aliases, Usage: usage}
}

// list is a list flag's values as one comma list: "-n 16 -n 32" and
// "-n 16,32" both give "16,32".
func list(c *cli.Context, name string) string { return strings.Join(c.StringSlice(name), ",") }

// flagText is a flag's value as the sweep's hash records it.
func flagText(c *cli.Context, name string) string {
	if listFlags[name] {
		return list(c, name)
	}
	return fmt.Sprint(c.Value(name))
}

// testFlags are the flags of run and sweep that lay out the tests: the
// lists, then the settings every test shares.
func testFlags() []cli.Flag {
	d := point.Defaults(1)
	return []cli.Flag{
		listFlag("model", []string{"m"}, "model files (a name with a comma: the whole file, or \\,)"),
		listFlag("n-prompt", []string{"p"}, fmt.Sprintf("prompt tokens of the pp tests; 0: none (default %d)", d.NPrompt)),
		listFlag("n-gen", []string{"n"}, fmt.Sprintf("generated tokens of the tg tests; 0: none (default %d)", d.NGen)),
		listFlag("n-depth", []string{"d"}, "tokens already in the KV cache (default 0)"),
		listFlag("parallel", []string{"np"}, "sequences decoding together (default 1)"),
		listFlag("batch-size", []string{"b"}, fmt.Sprintf("logical batch (default %d)", d.NBatch)),
		listFlag("ubatch-size", []string{"ub"}, fmt.Sprintf("physical batch (default %d)", d.NUBatch)),
		listFlag("threads", []string{"t"}, "CPU threads (default: the physical cores)"),
		listFlag("n-gpu-layers", []string{"ngl"}, "layers on the GPU; -1: all (default -1)"),
		listFlag("flash-attn", []string{"fa"}, "flash attention: on, off, auto (default auto)"),
		listFlag("cache-type-k", []string{"ctk"}, "K cache type: f16, bf16, f32, q8_0, q5_1, q5_0, q4_1, q4_0, iq4_nl (default f16)"),
		listFlag("cache-type-v", []string{"ctv"}, "V cache type; quantized needs -fa on (default f16)"),
		listFlag("n-cpu-moe", []string{"ncmoe"}, "keep the MoE experts of the first N layers on the CPU (default 0)"),
		listFlag("poll", nil, "thread pool busy-wait 0-100; -1 or none: no pool (default 50)"),
		listFlag("sampling", nil, "tg through a sampler chain too: off, greedy, typical (default off)"),
		&cli.StringFlag{Name: "split-mode", Aliases: []string{"sm"}, Usage: "multi-GPU split: none, layer, row (default layer)"},
		&cli.IntFlag{Name: "main-gpu", Aliases: []string{"mg"}, Usage: "GPU for split-mode none"},
		&cli.BoolFlag{Name: "no-mmap", Usage: "read the model into memory instead of mapping it"},
		&cli.BoolFlag{Name: "mmap", Aliases: []string{"mmp"}, Value: true, Usage: "llama-bench's -mmp 0|1", Hidden: true},
		&cli.StringFlag{Name: "repetitions", Aliases: []string{"r"}, Usage: "timed repetitions of each test, or auto: until the mean is within --target-ci"},
		&cli.Float64Flag{Name: "target-ci", Value: 100 * point.DefaultTargetCI, Usage: "-r auto: the 95% CI half-width to reach, % of the mean"},
		&cli.IntFlag{Name: "max-reps", Value: point.DefaultMaxReps, Usage: "-r auto: at most this many repetitions"},
		&cli.BoolFlag{Name: "drop-outliers", Usage: "leave repetitions beyond 3 robust sigmas out of the figures"},
		&cli.BoolFlag{Name: "no-warmup", Usage: "skip the uncounted warm-up run"},
		&cli.BoolFlag{Name: "no-kernels", Usage: "do not time each step's ops alone (no hardware/kernel/software split)"},
		&cli.DurationFlag{Name: "timeout", Usage: "time limit per test (default 10m)"},
		&cli.Uint64Flag{Name: "seed", Usage: "seed of the random tokens and synthetic weights (default 42)"},
		&cli.StringFlag{Name: "override-tensor", Aliases: []string{"ot", "override-tensors"}, Usage: "tensors matching a regex in a buffer type: PATTERN=BUFFER_TYPE;..."},
		&cli.StringFlag{Name: "tensor-split", Aliases: []string{"ts"}, Usage: "each device's share of the layers, e.g. 3/1"},
		&cli.StringFlag{Name: "device", Aliases: []string{"dev"}, Usage: "devices, e.g. CUDA0/CUDA1, or none for the CPU alone"},
		&cli.BoolFlag{Name: "no-kv-offload", Aliases: []string{"nkvo"}, Usage: "keep the KV cache and attention on the CPU"},
		&cli.StringFlag{Name: "cpu-mask", Aliases: []string{"C"}, Usage: "hex mask of the CPUs the threads may use, e.g. 0xF"},
		&cli.BoolFlag{Name: "cpu-strict", Usage: "pin each thread to one CPU of --cpu-mask"},
		&cli.IntFlag{Name: "prio", Usage: "thread priority: -1 low, 0 normal, 1 medium, 2 high, 3 realtime"},
		&cli.StringFlag{Name: "delay", Usage: "pause before each test: seconds, or a duration (5, 30s)"},
		&cli.StringFlag{Name: "pg", Usage: "also a pp+tg test, e.g. 512,128"},
		&cli.BoolFlag{Name: "embeddings", Aliases: []string{"embd"}, Hidden: true, Usage: "llama-bench's -embd: only 0"},
		&cli.BoolFlag{Name: "no-op-offload", Aliases: []string{"nopo"}, Hidden: true, Usage: "llama-bench's -nopo: only 0"},
	}
}

// models are the -m values: each a comma list, unless it names a file
// whole.
func models(c *cli.Context) []string {
	var out []string
	for _, v := range c.StringSlice("model") {
		out = append(out, modelList(v)...)
	}
	return out
}

// unsupported refuses llama-bench flags tokbench takes only off.
func unsupported(c *cli.Context) error {
	for name, why := range map[string]string{
		"embeddings":    "tokbench measures generation, not embeddings: leave out -embd 1",
		"no-op-offload": "tokbench keeps llama.cpp's op offload: leave out -nopo 1",
	} {
		if c.Bool(name) {
			return usagef("--%s: %s", name, why)
		}
	}
	if c.IsSet("mmap") && c.IsSet("no-mmap") {
		return usagef("give -mmp or --no-mmap, not both")
	}
	return nil
}

// specWith applies the test flags given to s (run and sweep); an error
// names the flag, not the spec's key, when a flag gave the value.
func specWith(c *cli.Context, s *sweep.Spec) (*sweep.Spec, error) {
	if err := unsupported(c); err != nil {
		return nil, err
	}
	s, err := specFlags(c, s)
	if err != nil {
		msg := err.Error()
		for key, flag := range specKeyFlags {
			if strings.HasPrefix(msg, key+": ") && c.IsSet(flag) {
				return nil, usagef("--%s%s", flag, strings.TrimPrefix(msg, key))
			}
		}
	}
	return s, err
}

// specKeyFlags are the flags of the spec's keys.
var specKeyFlags = map[string]string{
	"n_prompt": "n-prompt", "n_gen": "n-gen", "n_depth": "n-depth", "parallel": "parallel", "n_batch": "batch-size",
	"n_ubatch": "ubatch-size", "threads": "threads", "n_gpu_layers": "n-gpu-layers", "flash_attn": "flash-attn",
	"cache_type_k": "cache-type-k", "cache_type_v": "cache-type-v", "sampling": "sampling", "n_cpu_moe": "n-cpu-moe",
	"poll": "poll", "repetitions": "repetitions", "max_reps": "max-reps", "target_ci": "target-ci", "synth": "synth",
	"types": "types",
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

// The output's options of run, sweep and report.
var (
	wideFlag        = &cli.BoolFlag{Name: "wide", Usage: "the table with every column (CI, latencies, the step's split, GPU figures) and a line per test"}
	tagParallelFlag = &cli.BoolFlag{Name: "tag-parallel", Usage: "json, jsonl, csv, sql: name tests of several sequences in model_type (\"np 4\"), which compare-llama-bench.py keys on"}
)
