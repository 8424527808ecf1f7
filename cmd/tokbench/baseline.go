package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/baseline"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/report"
)

func baselineCommand() *cli.Command {
	dir := &cli.StringFlag{Name: "dir", Value: "baselines", Usage: "folder of baseline files, one per hardware class"}
	effect := &cli.Float64Flag{Name: "min-effect", Value: 0.05, Usage: "smallest change that counts, as a fraction of the median"}
	return &cli.Command{
		Name:  "baseline",
		Usage: "keep per-hardware-class baselines and compare results with them (a CI gate)",
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "write or merge the baseline of the results' hardware class",
				UsageText: "tokbench baseline create results.jsonl [more.jsonl ...] [--dir baselines]   (runs of several machines or days are pooled)",
				Flags:     []cli.Flag{dir, effect},
				Action:    doBaselineCreate,
			},
			{
				Name:      "compare",
				Usage:     "compare results with their class's baseline; exit 1 on a significant regression",
				UsageText: "tokbench baseline compare results.jsonl [--dir baselines] [--alpha 0.05] [--min-effect 0.05] [--require-all]",
				Flags: []cli.Flag{dir, effect, &cli.Float64Flag{Name: "alpha", Value: 0.05, Usage: "significance level of the Mann-Whitney U test"},
					&cli.BoolFlag{Name: "require-all", Usage: "fail (exit 1) when any point of the results has no baseline"}},
				Action: doBaselineCompare,
			},
			{
				Name:      "show",
				Usage:     "print a baseline",
				UsageText: "tokbench baseline show [--dir baselines] [--class CLASS]",
				Flags:     []cli.Flag{dir, &cli.StringFlag{Name: "class", Usage: "hardware class (default: every class in --dir)"}},
				Action:    doBaselineShow,
			},
		},
	}
}

// baselineInputs reads the results file and the baseline (nil if none)
// of their hardware class.
func baselineInputs(c *cli.Context) ([]record.Record, string, *baseline.File, error) {
	if c.NArg() < 1 || (c.NArg() > 1 && c.Command.Name != "create") {
		return nil, "", nil, usagef("give one results file (JSONL from run -o jsonl or sweep --out, or llama-bench's JSON); create takes several")
	}
	var recs []record.Record
	for _, path := range c.Args().Slice() {
		rs, _, _, err := record.Read(path)
		if err != nil {
			return nil, "", nil, err
		}
		recs = append(recs, record.Final(rs)...)
	}
	class, err := baseline.ClassOf(recs)
	if err != nil {
		return nil, "", nil, usageErr(err)
	}
	f, err := baseline.Load(c.String("dir"), class)
	return recs, class, f, err
}

func doBaselineCreate(c *cli.Context) error {
	recs, class, old, err := baselineInputs(c)
	if err != nil {
		return err
	}
	f, err := baseline.Merge(old, recs, c.Float64("min-effect"))
	if err != nil {
		return usageErr(err)
	}
	p, err := f.Save(c.String("dir"))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: %d points for class %s\n", p, len(f.Points), class)
	return nil
}

func doBaselineCompare(c *cli.Context) error {
	recs, class, f, err := baselineInputs(c)
	if err != nil {
		return err
	}
	if f == nil {
		return usagef("no baseline for class %s in %s (it has: %s): make one with tokbench baseline create on this hardware",
			class, c.String("dir"), strings.Join(orNone(baseline.Classes(c.String("dir"))), ", "))
	}
	rows, err := baseline.Compare(f, recs, c.Float64("alpha"), c.Float64("min-effect"))
	if err != nil {
		return usageErr(err)
	}
	if err := report.Comparison(os.Stdout, class, rows); err != nil {
		return err
	}
	if bad := baseline.Regressions(rows); len(bad) > 0 {
		return fmt.Errorf("significant regression (p < %g, at least %.0f%% slower): %s", c.Float64("alpha"), 100*c.Float64("min-effect"), strings.Join(bad, "; "))
	}
	matched := baseline.Matched(rows)
	if matched == 0 {
		return cli.Exit("tokbench: no point of the results is in the baseline, so nothing was compared: measure the baseline's points (same model file, same settings), or create a baseline of these", exitNothingCompared)
	}
	if c.Bool("require-all") && matched < len(rows) {
		return fmt.Errorf("%d of %d points have no baseline (--require-all): add them with tokbench baseline create", len(rows)-matched, len(rows))
	}
	return nil
}

func doBaselineShow(c *cli.Context) error {
	classes := baseline.Classes(c.String("dir"))
	if cl := c.String("class"); cl != "" {
		classes = []string{cl}
	}
	if len(classes) == 0 {
		return usagef("no baselines in %s", c.String("dir"))
	}
	for _, cl := range classes {
		f, err := baseline.Load(c.String("dir"), cl)
		if err != nil {
			return err
		}
		if f == nil {
			return usagef("no baseline for class %s in %s", cl, c.String("dir"))
		}
		if err := report.Baseline(os.Stdout, f); err != nil {
			return err
		}
	}
	return nil
}

func orNone(xs []string) []string {
	if len(xs) == 0 {
		return []string{"none"}
	}
	return xs
}
