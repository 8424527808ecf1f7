package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"

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

// intRange is an integer flag's range: intRanges', else the settings
// table's (point.Settings) for a flag of a setting another command takes
// as one number (quality's and serve's -ngl), so the two cannot differ.
func intRange(name string) ([2]int64, bool) {
	if r, ok := intRanges[name]; ok {
		return r, true
	}
	for _, st := range point.Settings {
		if st.Ints && st.Flag == name {
			return [2]int64{int64(st.Min), int64(st.Max)}, true
		}
	}
	return [2]int64{}, false
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
			if r, ok := intRange(fl.Name); ok && c.IsSet(fl.Name) {
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

// llamaBenchOnly are llama-bench's flags that tokbench has no equivalent
// of, with what to do instead.
var llamaBenchOnly = map[string]string{
	"numa":        "tokbench leaves NUMA placement to the system: pin the threads with -C (--cpu-mask) and --cpu-strict",
	"fitt":        "tokbench measures the settings given: llama.cpp's fitting to free memory stays off (fit_target 0 in its files)",
	"fit-target":  "tokbench measures the settings given: llama.cpp's fitting to free memory stays off (fit_target 0 in its files)",
	"fitc":        "tokbench measures the settings given: llama.cpp's fitting to free memory stays off (fit_min_ctx 0 in its files)",
	"fit-ctx":     "tokbench measures the settings given: llama.cpp's fitting to free memory stays off (fit_min_ctx 0 in its files)",
	"dio":         "tokbench loads with mmap or, with -mmp 0, without it; direct I/O is not offered",
	"direct-io":   "tokbench loads with mmap or, with -mmp 0, without it; direct I/O is not offered",
	"lm":          "tokbench's load modes are -mmp 1 (mmap, the default) and -mmp 0",
	"load-mode":   "tokbench's load modes are -mmp 1 (mmap, the default) and -mmp 0",
	"rpc":         "tokbench has no RPC backend: run it on each machine and merge the results (tokbench merge)",
	"n-depth-gen": "give the depth with -d",
}

// unknownFlag rewrites the flag parser's "flag provided but not defined:
// -x" to name the flag as it was typed, with tokbench's equivalent where
// there is one, or the closest of the command's flags.
func unknownFlag(cmd *cli.Command, args []string, err error) error {
	const prefix = "flag provided but not defined: -"
	name, ok := strings.CutPrefix(err.Error(), prefix)
	if !ok {
		return err
	}
	typed := "-" + name
	for _, a := range args {
		if n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); n == name && strings.HasPrefix(a, "-") {
			typed, _, _ = strings.Cut(a, "=")
			break
		}
	}
	where := "tokbench"
	if cmd != nil && cmd.Name != "" {
		where = cmd.Name
	}
	// Quoted when it holds what a terminal would act on (escapes,
	// carriage returns): the flag is shown, never played.
	if strings.IndexFunc(typed, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		typed = strconv.Quote(typed)
	}
	msg := fmt.Sprintf("%s has no flag %s", where, typed)
	switch hint, best := llamaBenchOnly[name], closestFlag(cmd, name); {
	case hint != "":
		msg += " (llama-bench's): " + hint
	case best != "":
		msg += fmt.Sprintf(": did you mean %s?", best)
	default:
		msg += ": --help lists them"
	}
	return errors.New(msg)
}

// closestFlag is the command's flag nearest to name (a third of its
// letters wrong at most, or name a prefix of it), as typed on the command
// line; "" if none.
func closestFlag(cmd *cli.Command, name string) string {
	if cmd == nil {
		return ""
	}
	best, dist := "", max(1, len(name)/3)+1
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			d := editDistance(name, n)
			if len(name) >= 3 && strings.HasPrefix(n, name) {
				d = 1
			}
			if d < dist {
				best, dist = n, d
			}
		}
	}
	if best == "" {
		return ""
	}
	if len(best) == 1 {
		return "-" + best
	}
	return "--" + best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
