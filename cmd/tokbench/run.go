package main

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/report"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/sweep"
	"github.com/tokbench/tokbench/sweep/work"
	"github.com/urfave/cli/v2"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "measure tests as llama-bench does: pp and tg for every combination of the list flags",
		UsageText: "tokbench run -m MODEL.gguf [-m ...] [-p 512] [-n 128] [-d 0,512] [-t 1,2,4] [-b 128-1024*2] [-r 5] [-o table|md|json|jsonl|csv|sql]\n" +
			"   tokbench run --synth llama-1b --synth-type q4_0,q8_0 -n 0 -p 64 -t 1-8",
		Flags: append(append(runFlags(report.Formats),
			wideFlag, tagParallelFlag,
			&cli.BoolFlag{Name: "no-probe", Usage: "do not probe this hardware class's ceilings when none are known yet"},
			&cli.BoolFlag{Name: "probe", Usage: "probe this hardware class's ceilings when none are known yet, however short the tests (by default only when they take longer than the probe)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "estimate each test (memory, bytes and FLOPs per step, ceiling) without making or loading a model"},
			&cli.BoolFlag{Name: "progress", Usage: "say each test's warm-up and repetitions on stderr as they start (llama-bench's --progress)"},
			&cli.StringFlag{Name: "output-err", Aliases: []string{"oe"}, Usage: "also write the results in this format to stderr (llama-bench's -oe): " + strings.Join(report.Formats, ", ")},
			&cli.BoolFlag{Name: "list-devices", Usage: "list the devices llama.cpp sees and exit (llama-bench's --list-devices)"},
		), telemetryFlags()...),
		Action: doRun,
	}
}

// runFlags are the flags of the commands that lay out tests as run does
// (run, profile): the test flags, the models and the output format.
func runFlags(formats []string) []cli.Flag {
	return append(testFlags(),
		listFlag("synth", nil, "synthetic models of these presets ("+strings.Join(preset.Names(), ", ")+"), made once in the cache"),
		listFlag("types", []string{"synth-type"}, "quantizations of the --synth models (default q8_0)"),
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output format: " + strings.Join(formats, ", ")},
		&cli.DurationFlag{Name: "test-step-delay", Hidden: true, Usage: "tests: make each decode step this much slower"},
	)
}

func doRun(c *cli.Context) error {
	if c.Bool("list-devices") {
		return listDevices()
	}
	if c.Bool("dry-run") {
		return dryRun(c)
	}
	errOut := os.Stderr
	if oe := c.String("output-err"); oe != "" {
		if err := checkFormat(oe, report.Formats); err != nil {
			return err
		}
		// -oe's output is alone on stderr, as llama-bench's is: the
		// lines tokbench says as it goes are said only with --progress
		// (-v), and an error at the end is said after it.
		if !c.Bool("progress") && !c.Bool("verbose") {
			quiet, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer quiet.Close()
			os.Stderr = quiet
			defer func() { os.Stderr = errOut }()
		}
	}
	tests, format, err := testsCommand(c, report.Formats)
	if err != nil {
		return err
	}
	env := measure.DescribeEnv(version)
	warnThreads(tests)
	sampler, stopSampling, err := startSampling(c)
	if err != nil {
		return err
	}
	// Each test is named on stderr as the table will name it.
	labels := testLabels(tests)
	var progress func(point.Point, string)
	if c.Bool("progress") {
		progress = func(p point.Point, what string) {
			fmt.Fprintf(os.Stderr, "tokbench: benchmark %s: %s\n", labels[p.Key()], what)
		}
	}
	done := map[point.Key]int{}
	start := time.Now()
	recs, err := measure.Tests(c.Context, tests, env, sampler, func(r record.Record) {
		// A test given twice (-m a,a) is numbered by its own place.
		label := labels[r.Key]
		if n := done[r.Key]; n > 0 {
			label = repeatLabel(tests, r.Key, n, label)
		}
		done[r.Key]++
		fmt.Fprintf(os.Stderr, "%s: %.2f ± %.2f t/s\n", label, r.AvgTs, r.StddevTs)
	}, progress)
	if serr := stopSampling(); serr != nil && err == nil {
		err = serr
	}
	if !c.Bool("no-probe") && c.Context.Err() == nil && !errors.Is(err, engine.ErrCanceled) {
		within := time.Since(start)
		if c.Bool("probe") {
			within = math.MaxInt64
		}
		probeAfter(env, tests, within)
	}
	annotate(recs)
	// What was measured is printed even when a later test failed.
	if len(recs) > 0 {
		if werr := printRecords(c, format, recs); werr != nil && err == nil {
			err = werr
		}
		if oe := c.String("output-err"); oe != "" {
			if werr := report.WriteWith(errOut, oe, recs, report.Options{Wide: c.Bool("wide"), TagParallel: c.Bool("tag-parallel")}); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if errors.Is(err, engine.ErrCanceled) {
		return fmt.Errorf("interrupted: %d test(s) finished and printed", len(recs))
	}
	return err
}

// testsCommand reads a command that lays out tests as run does (run,
// profile): no arguments, an output format among formats, and the tests.
func testsCommand(c *cli.Context, formats []string) ([]point.Point, string, error) {
	if c.NArg() > 0 {
		return nil, "", usagef("unexpected argument %q: flags come before arguments, and %s takes none", c.Args().First(), c.Command.Name)
	}
	format := c.String("output")
	if err := checkFormat(format, formats); err != nil {
		return nil, "", err
	}
	tests, err := runTests(c)
	return tests, format, err
}

// runTests lays out run's tests as a sweep's planner does, in llama-bench's
// order: the models (-m, or --synth with each --synth-type) times every
// combination of the list flags.
func runTests(c *cli.Context) ([]point.Point, error) {
	s, dir, err := runSpec(c)
	if err != nil {
		return nil, err
	}
	// Each file is loaded once in a child first: a file llama.cpp
	// refuses (or aborts on) gives one clean error.
	for _, m := range s.Models.Values {
		if err := checkModel(c, m); err != nil {
			return nil, err
		}
	}
	_, tests, _, err := work.Grid(s, dir, os.Stderr, func(path string) error { return checkModel(c, path) }, sweep.Shard{})
	if err != nil {
		return nil, err
	}
	for i := range tests {
		tests[i].StepDelay = c.Duration("test-step-delay")
	}
	return tests, nil
}

// runSpec is run's flags as a sweep's spec, and the cache folder its
// synthetic models live in.
func runSpec(c *cli.Context) (*sweep.Spec, string, error) {
	s := sweep.DefaultSpec(host.Read().Cores)
	s.Repeats = true
	s.Values["repetitions"] = []string{point.RepsName(point.Defaults(1).Reps)} // llama-bench's 5, not a sweep's auto
	switch {
	case c.IsSet("synth") && c.IsSet("model"):
		return nil, "", usagef("give -m or --synth, not both")
	case !c.IsSet("synth") && !c.IsSet("model"):
		return nil, "", usagef("no model: give -m FILE.gguf, or --synth PRESET")
	}
	s, err := specWith(c, s)
	if err != nil {
		return nil, "", err
	}
	// A sampled tg test is set against the raw one: run measures both.
	if smp := s.Get("sampling"); !slices.Contains(smp, "off") {
		s.Values["sampling"] = append([]string{"off"}, smp...)
	}
	dir, err := plan.CacheDir()
	return s, dir, err
}

// printRecords prints run's records: the compact table (--wide: every
// column), or a file format; a file in llama-bench's formats that mixes
// sequence counts says that compare-llama-bench.py would average them.
func printRecords(c *cli.Context, format string, recs []record.Record) error {
	o := report.Options{Wide: c.Bool("wide"), TagParallel: c.Bool("tag-parallel")}
	if format == "md" {
		o.Notes = os.Stderr // stdout is llama-bench's Markdown alone
	}
	if note := report.ParallelNote(format, recs, o); note != "" {
		fmt.Fprintln(os.Stderr, note)
	}
	return report.WriteWith(os.Stdout, format, recs, o)
}

// warnThreads says once, before anything runs, when tests ask for more
// threads than the machine has cores.
func warnThreads(tests []point.Point) {
	most := 0
	for _, p := range tests {
		most = max(most, p.Threads)
	}
	if cores := runtime.NumCPU(); most > cores {
		fmt.Fprintf(os.Stderr, "tokbench: note: -t %d is more threads than this machine's %d cores: the threads past them wait for a core "+
			"at each step (ggml's own pool spins on them, for seconds a token; an OpenMP build's yield), so those tests measure the oversubscription, not the machine; "+
			"their ceilings are the %d-thread ones\n", most, cores, cores)
	}
}

// repeatLabel is the label of the n-th repeat (from 0) of a test given
// more than once: its own number in place of the first's.
func repeatLabel(tests []point.Point, k point.Key, n int, label string) string {
	for i, p := range tests {
		if p.Key() == k {
			if n--; n < 0 {
				_, rest, _ := strings.Cut(label, " ")
				return fmt.Sprintf("%d/%d %s", i+1, len(tests), rest)
			}
		}
	}
	return label
}

// probeAfter probes the ceilings the tests' verdicts need where this
// hardware class has none yet, once (cached), after the tests: they
// start at once, as llama-bench's do. A probe that would take longer
// than within (the tests' own time) is left to tokbench probe, and said:
// a short first run is not made many times longer by its ceilings.
func probeAfter(env measure.Env, tests []point.Point, within time.Duration) {
	probed := map[int]bool{}
	types := probeTypes(tests)
	var left []string
	for _, p := range tests {
		if probed[p.Threads] {
			continue
		}
		probed[p.Threads] = true
		ok, err := measure.EnsureProbe(env, p, types, env.CacheDir, within, func(s string) { fmt.Fprintln(os.Stderr, s) })
		if err != nil {
			fmt.Fprintln(os.Stderr, "tokbench: probe:", err)
		}
		if !ok {
			left = append(left, fmt.Sprint(p.Threads))
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "tokbench: no ceilings known for %s at -t %s yet, so no verdicts (eff, limit): a quick probe (a few seconds) "+
			"would take longer than these tests; tokbench probe -t %s measures them once (or run --probe)\n",
			env.Device(tests[0]).Class, strings.Join(left, ","), left[0])
	}
}

// probeTypes are the weight types the tests' models need ceilings of
// (measure.ProbeTypes).
func probeTypes(tests []point.Point) []string {
	var files []plan.File
	seen := map[string]bool{}
	for _, p := range tests {
		if !seen[p.Model] {
			seen[p.Model] = true
			if f, err := plan.Read(p.Model); err == nil {
				files = append(files, f)
			}
		}
	}
	return measure.ProbeTypes(files)
}

// forgetShare is the kernels' share of a step past which their cached
// timings are proven wrong (a quiet machine's kernels alone take about
// the step, or up to 115% of it).
const forgetShare = 2.0

// annotate sets the records' rooflines with the ceilings known now (a
// probe run after the measurement counts), and says what failed.
func annotate(recs []record.Record) {
	dir, err := plan.CacheDir()
	if err == nil {
		err = record.Annotate(recs, &roofline.Cache{Dir: dir})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "roofline:", err)
		return
	}
	// Kernels that alone took over twice the whole step were timed on a
	// busy machine: their class's timings are forgotten, and timed again.
	// (A probe taken on a busy machine says so, and is taken again by the
	// next run on a quiet one: measure.EnsureProbe.)
	forgotten := map[string]bool{}
	for i := range recs {
		if a := recs[i].Roofline; a != nil && a.Decomp != nil && a.Decomp.KernelShare > forgetShare && !forgotten[recs[i].Class()] {
			forgotten[recs[i].Class()] = true
			if err := measure.ForgetKernels(dir, recs[i].Class()); err == nil {
				fmt.Fprintf(os.Stderr, "%s: its kernels timed alone took %.0f%% of the step: the kernel timings cached for %s are forgotten, and the next run times them again\n",
					recs[i].Test, 100*a.Decomp.KernelShare, recs[i].Class())
			}
		}
	}
}

// testLabels names each test for the lines on stderr: its number, the
// model, the settings that differ among the tests (as the table's
// columns do), and the test.
func testLabels(tests []point.Point) map[point.Key]string {
	models := slices.ContainsFunc(tests, func(p point.Point) bool { return p.Model != tests[0].Model })
	varying := point.Varying(tests)
	out := map[point.Key]string{}
	for i, p := range tests {
		label := fmt.Sprintf("%d/%d", i+1, len(tests))
		if models {
			label += " " + cmp.Or(p.ModelID, filepath.Base(p.Model))
		}
		if varying[i] != "" {
			label += " " + varying[i]
		}
		if _, ok := out[p.Key()]; !ok { // a repeat is numbered as it runs
			out[p.Key()] = label + " " + p.TestName()
		}
	}
	return out
}

// listDevices lists the devices as llama-bench's --list-devices does.
func listDevices() error {
	fmt.Println("Available devices:")
	n := 0
	for _, d := range engine.Devices() {
		if d.Type == "cpu" {
			continue
		}
		n++
		fmt.Printf("  %s: %s (%d MiB, %d MiB free)\n", d.Name, d.Description, d.MemoryTotal>>20, d.MemoryFree>>20)
	}
	if n == 0 {
		fmt.Println("  (none: this build runs on the CPU; tokbench devices says why)")
	}
	return nil
}
