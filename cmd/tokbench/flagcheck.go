package main

import (
	"math"
	"os"

	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/point"
	"github.com/urfave/cli/v2"
)

// floatRanges bound the float flags, by name: a value outside its range,
// NaN or an infinity is bad input, said before anything is loaded (a NaN
// burstiness made the arrival generator spin forever; a NaN target
// reached llama.cpp's worker as a broken request).
var floatRanges = map[string][2]float64{
	"rate":             {0, 1e6},
	"max-rate":         {1e-6, 1e6},
	"burstiness":       {1e-3, 1e3},
	"abusive-fraction": {0, 1},
	"expect-ts":        {0, 1e12},
	"drop-threshold":   {0, 100},
	"drift-threshold":  {0, 100},
	"speedup":          {1e-6, 1e6},
	"target-ci":        {0.01, 100},
	"min-effect":       {0, 100},
	"alpha":            {1e-12, 0.5},
}

// intRanges bound the integer flags, by name, in every command that has
// one: beyond them a count makes no sense on any machine, and the fuzzing
// of every flag found each of these making an allocation fail, llama.cpp
// abort or a command run for ever.
var intRanges = map[string][2]int64{
	"threads":             {0, point.MaxThreads},
	"repetitions":         {1, point.MaxReps},
	"max-reps":            {0, point.MaxReps},
	"requests":            {1, 10_000_000},
	"requests-per-client": {1, 100_000},
	"max-concurrency":     {1, 65_536},
	"concurrency":         {0, 65_536},
	"clients":             {0, 65_536},
	"slots":               {0, point.MaxParallel},
	"abusive-tokens":      {1, point.MaxTokens},
	"max-prompt":          {0, point.MaxTokens},
	"max-output":          {0, point.MaxTokens},
	"n-vocab":             {1, 1 << 22},
	"n-embd":              {1, 1 << 16},
	"n-layer":             {1, 1024},
	"n-ff":                {1, 1 << 18},
	"n-head":              {1, 1024},
	"n-head-kv":           {1, 1024},
	"n-ctx-train":         {1, 1 << 24},
	"head-dim":            {2, 1 << 12},
	"n-expert":            {0, preset.MaxExperts},
	"n-expert-used":       {1, preset.MaxExperts},
	"n-ff-exp":            {32, 1 << 18},
	"max-points":          {1, 1 << 31},
	"rounds":              {1, 100},
	"shards":              {0, 4096},
	"cpus":                {1, 1 << 16},
	"gpus":                {0, 1024},
	"tokens":              {1, 1 << 24},
	"quality-tokens":      {1, 1 << 24},
	"ctx":                 {1, 1 << 20},
	"quality-ctx":         {1, 1 << 20},
	"top-k":               {1, 1 << 16},
	"quality-top-k":       {1, 1 << 16},
	"device":              {0, 1024},
	"main-gpu":            {0, 1024},
	"n-gpu-layers":        {-1, 1 << 20},
	"n-cpu-moe":           {0, 1 << 20},
	"prio":                {-1, 3},
}

// checkFlags refuses, for the command about to run and before anything
// is loaded or probed, a float flag outside its range (any float flag that
// is NaN or infinite), an integer flag outside its range, a negative duration and a --telemetry-out that
// cannot be written.
func checkFlags(c *cli.Context) error {
	if err := writable("telemetry-out", c.String("telemetry-out")); err != nil {
		return err
	}
	for _, f := range c.Command.Flags {
		switch fl := f.(type) {
		case *cli.Float64Flag:
			if !c.IsSet(fl.Name) {
				continue
			}
			v := c.Float64(fl.Name)
			r, bounded := floatRanges[fl.Name]
			if !bounded {
				r = [2]float64{-math.MaxFloat64, math.MaxFloat64}
			}
			if math.IsNaN(v) || v < r[0] || v > r[1] {
				if bounded {
					return usagef("--%s %v: give a number from %g to %g", fl.Name, v, r[0], r[1])
				}
				return usagef("--%s %v: give a finite number", fl.Name, v)
			}
		case *cli.IntFlag:
			if r, ok := intRanges[fl.Name]; ok && c.IsSet(fl.Name) {
				if v := int64(c.Int(fl.Name)); v < r[0] || v > r[1] {
					return usagef("--%s %d: give a number from %d to %d", fl.Name, v, r[0], r[1])
				}
			}
		case *cli.DurationFlag:
			if c.IsSet(fl.Name) && c.Duration(fl.Name) < 0 {
				return usagef("--%s %s: give a duration of 0 or more", fl.Name, c.Duration(fl.Name))
			}
		}
	}
	return nil
}

// withFlagChecks makes every command (and subcommand) check its flags
// (checkFlags) before its own Before and Action.
func withFlagChecks(cmds []*cli.Command) {
	for _, cmd := range cmds {
		before := cmd.Before
		cmd.Before = func(c *cli.Context) error {
			if err := checkFlags(c); err != nil {
				return err
			}
			if before != nil {
				return before(c)
			}
			return nil
		}
		withFlagChecks(cmd.Subcommands)
	}
}

// writable refuses, before anything is measured, a file flag's path that
// cannot be written ("": none). It creates the file if absent, empty, and
// changes nothing of one that exists.
func writable(flag, path string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return usagef("--%s: %v", flag, err)
	}
	return f.Close()
}
