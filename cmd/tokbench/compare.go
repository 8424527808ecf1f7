package main

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tokbench/tokbench/baseline"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:  "compare",
		Usage: "compare two sets of results test by test (two builds, files or machines; tokbench's or llama-bench's, any format): the change, its interval, and a gate whose false alarms are bounded over the whole comparison; exit 0 no regression, 1 a significant regression, 2 an error, 3 nothing to compare",
		UsageText: "tokbench compare A B [-b BUILD] [-c BUILD] [-o table|md|csv|json] [--alpha 0.05] [--min-effect 0.02]\n" +
			"   tokbench compare ALL.sqlite -b BUILD -c BUILD   (both builds in one file or database)\n" +
			"   e.g. tokbench compare llama-bench.json tokbench.jsonl, or old1.jsonl,old2.jsonl,old3.jsonl new1.jsonl,new2.jsonl,new3.jsonl\n" +
			"   (a side's files are its runs: several runs show how much runs of one build differ, and smaller changes)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "format: " + strings.Join(report.DiffFormats, ", ")},
			&cli.Float64Flag{Name: "alpha", Value: 0.05, Usage: "the gate's false-alarm rate over the whole comparison (half to the geometric mean, half shared among the tests)"},
			&cli.Float64Flag{Name: "min-effect", Value: 0.02, Usage: "smallest change that counts, as a fraction of A's mean"},
			&cli.StringFlag{Name: "names", Usage: "the two sides' names in the table, A,B (default: the files' names)"},
			&cli.StringFlag{Name: "baseline", Aliases: []string{"b"}, Usage: "side A's build: the records whose build_commit begins with it (as compare-llama-bench.py's -b)"},
			&cli.StringFlag{Name: "compare", Aliases: []string{"c"}, Usage: "side B's build (as the script's -c); with -b, one file may hold both"},
		},
		Action: doCompare,
	}
}

func doCompare(c *cli.Context) error {
	args := c.Args().Slice()
	switch {
	case len(args) == 1 && c.IsSet("baseline") && c.IsSet("compare"):
		args = append(args, args[0]) // both builds in one file or database
	case len(args) != 2:
		return usagef("give two results files, or two comma lists of runs (tokbench compare A.jsonl B.jsonl), or one file with -b BUILD -c BUILD")
	}
	builds := [2]string{c.String("baseline"), c.String("compare")}
	if err := checkFormat(c.String("output"), report.DiffFormats); err != nil {
		return err
	}
	alpha, effect := c.Float64("alpha"), c.Float64("min-effect")
	if !(alpha > 0 && alpha < 1) || !(effect >= 0 && effect < 10) {
		return usagef("--alpha %g, --min-effect %g: give 0 < alpha < 1 and 0 <= min-effect < 10", alpha, effect)
	}
	var sides [2]baseline.Side
	var names [2]string
	for i, arg := range args {
		files := point.SplitList(arg) // a\,b.jsonl is one file
		if len(files) == 0 {
			return usagef("compare: side %c (%q) names no file: give a results file, or a comma list of runs", 'A'+i, arg)
		}
		if err := distinctRuns(string(rune('A'+i)), files); err != nil {
			return err
		}
		held := holds{builds: map[string]int{}, classes: map[string]int{}}
		for ri, p := range files {
			if err := readRun(p, builds[i], func(r *record.Record) {
				held.add(r)
				sides[i].Add(ri, r)
			}); err != nil {
				return usageErr(err) // exit 2: a file, not a regression
			}
		}
		if err := held.oneBuild(string(rune('A'+i)), [2]string{"-b", "-c"}[i]); err != nil {
			return err
		}
		names[i] = filepath.Base(files[0])
		if len(files) > 1 {
			names[i] += fmt.Sprintf(" +%d", len(files)-1)
		}
	}
	if n := c.String("names"); n != "" {
		a, b, ok := strings.Cut(n, ",")
		if !ok {
			return usagef("--names %q: give two names, A,B", n)
		}
		names = [2]string{a, b}
	}
	diffs, gate, unmatched := baseline.DiffSides(&sides[0], &sides[1], alpha, effect)
	if len(diffs) == 0 {
		return cli.Exit(fmt.Sprintf("tokbench: no test of %s is in %s with the same model and settings, so nothing was compared: measure the same tests on both sides", names[0], names[1]), exitNothingCompared)
	}
	if err := report.Diffs(os.Stdout, c.String("output"), names[0], names[1], diffs, gate, alpha); err != nil {
		return err
	}
	if gate.Tests == 0 {
		// A gate that tested nothing says nothing: not "no regression".
		return cli.Exit(fmt.Sprintf("tokbench: none of the %d tests could be tested (one sample on a side: llama-bench's CSV and SQL keep only the mean), "+
			"so nothing was judged: compare files with their samples (JSON or JSONL), or several runs a side", len(diffs)), exitNothingCompared)
	}
	if unmatched > 0 {
		fmt.Fprintf(os.Stderr, "%d tests were in one file only, and are left out\n", unmatched)
	}
	if gate.Regression {
		what := strings.Join(gate.SlowerTests, "; ")
		if what == "" {
			what = fmt.Sprintf("the geometric mean of the tests, %.3f", gate.GeoMean.Est)
		}
		return cli.Exit(fmt.Sprintf("tokbench: significantly slower in %s (family-wise error %g, at least %.0f%%): %s", names[1], alpha, 100*effect, what), exitFail)
	}
	return nil
}

// distinctRuns refuses a side that names one file twice (through any
// name or link): a side's files are its runs, and one file counted as
// two would be runs that agree to the last digit.
func distinctRuns(side string, files []string) error {
	for i, p := range files {
		si, err := os.Stat(p)
		if err != nil {
			continue // said when it is read
		}
		for _, q := range files[:i] {
			if sq, err := os.Stat(q); err == nil && os.SameFile(si, sq) {
				return usagef("side %s names one file twice (%s and %s): a side's files are its runs, each a file of its own; give it once", side, q, p)
			}
		}
	}
	return nil
}

// readRun gives each final record of one results file (record.Final:
// an interleaved sweep's merged record, not its rounds) of build (a
// prefix of its build_commit; "" any) to add, one at a time.
func readRun(path, build string, add func(*record.Record)) error {
	_, _, err := record.EachFinal(path, func(r *record.Record) error {
		if strings.HasPrefix(r.BuildCommit, build) {
			add(r)
		}
		return nil
	})
	return err
}

// holds counts the builds and machines of a side's records.
type holds struct{ builds, classes map[string]int }

func (h holds) add(r *record.Record) {
	h.builds[cmp.Or(r.BuildID(), "unknown")]++
	h.classes[strings.TrimSuffix(r.CPUInfo+", "+r.GPUInfo, ", ")]++
}

// oneBuild refuses a side that pools builds or machines: their mean
// would be neither's (89.8 and 80.8 t/s are not 85.3).
func (h holds) oneBuild(side, flag string) error {
	builds, classes := h.builds, h.classes
	list := func(m map[string]int) string {
		var out []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, fmt.Sprintf("%s (%d tests)", k, m[k]))
		}
		return strings.Join(out, ", ")
	}
	switch {
	case len(builds) == 0:
		return usagef("side %s holds no measured test (%s picks none?)", side, flag)
	case len(builds) > 1:
		return usagef("side %s holds %d builds, %s: pick one with %s BUILD (a prefix of its build_commit)", side, len(builds), list(builds), flag)
	case len(classes) > 1:
		return usagef("side %s holds the results of %d machines, %s: give each machine's file on a side of its own", side, len(classes), list(classes))
	}
	return nil
}
