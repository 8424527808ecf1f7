package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tokbench/tokbench/baseline"
	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
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

// baselineInputs are the results files' records and quality blocks, and
// the baseline (nil if none) of their hardware class.
type baselineInputs struct {
	recs   []record.Record
	blocks []record.Quality
	class  string
	file   *baseline.File
}

// inputsUsage is what baseline's commands say of their arguments.
const inputsUsage = "give one results file (JSONL from run -o jsonl, sweep --out or quality --out, or llama-bench's JSON); create takes several"

func readBaselineInputs(c *cli.Context) (*baselineInputs, error) {
	if c.NArg() != 1 { // compare takes one
		return nil, usagef(inputsUsage)
	}
	in := &baselineInputs{}
	for _, path := range c.Args().Slice() {
		rs, _, _, err := record.Read(path)
		if err != nil {
			return nil, err
		}
		qs, err := record.ReadQuality(path)
		if err != nil {
			return nil, err
		}
		if rs = record.Final(rs); in.recs == nil {
			in.recs = rs // one file's records are not copied
		} else {
			in.recs = append(in.recs, rs...)
		}
		in.blocks = append(in.blocks, qs...)
	}
	return in, nil
}

// load finds the inputs' one hardware class and its baseline (nil if none).
func (in *baselineInputs) load(dir string) error {
	var err error
	if in.class, err = baseline.ClassOfAll(in.recs, in.blocks); err != nil {
		return usageErr(err)
	}
	in.file, err = baseline.Load(dir, in.class)
	return err
}

func doBaselineCreate(c *cli.Context) error {
	if c.NArg() < 1 {
		return usagef(inputsUsage)
	}
	// One record at a time, into the baseline of its class (a fleet's
	// merged file makes one per class, in the order first seen), each
	// class built after every file is read and saved before the next: a
	// million records, or every class's history, are never held at once.
	dir, effect := c.String("dir"), c.Float64("min-effect")
	// One writer a folder: two creates would each merge into the files
	// as they found them, and the last to save would lose the other's.
	release, err := safefile.LockDir(dir)
	if err != nil {
		return err
	}
	defer release()
	restoreGC := streamingGC()
	b := baseline.NewBuilder(dir)
	defer b.Close()
	byClass := map[string][]record.Quality{}
	for _, path := range c.Args().Slice() {
		if _, _, err := record.EachFinal(path, func(r *record.Record) error { return b.Add(r) }); err != nil {
			return err
		}
		qs, err := record.ReadQuality(path)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if err := b.Include(q.Class()); err != nil {
				return err
			}
			byClass[q.Class()] = append(byClass[q.Class()], q)
		}
	}
	if len(b.Classes()) == 0 {
		return usagef("no measured (ok) records or quality blocks in %s", strings.Join(c.Args().Slice(), ", "))
	}
	// A class's history and its file's text are what building holds:
	// tens of MB at a time, collected at the default.
	restoreGC()
	for _, name := range b.Classes() {
		f, err := b.Build(name, effect)
		if err != nil {
			return err
		}
		f.MergeQuality(byClass[name])
		p, err := f.Save(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: %d points and %d quality figures for class %s\n", p, len(f.Points), len(f.Quality), name)
	}
	return nil
}

func doBaselineCompare(c *cli.Context) error {
	in, err := readBaselineInputs(c)
	if err != nil {
		return err
	}
	if err := in.load(c.String("dir")); err != nil {
		return err
	}
	recs, class, f := in.recs, in.class, in.file
	if f == nil {
		return usagef("no baseline for class %s in %s (it has: %s): make one with tokbench baseline create on this hardware",
			class, c.String("dir"), strings.Join(orNone(baseline.Classes(c.String("dir"))), ", "))
	}
	var rows []baseline.Row
	if len(recs) > 0 {
		if rows, err = baseline.Compare(f, recs, c.Float64("alpha"), c.Float64("min-effect")); err != nil {
			return usageErr(err)
		}
		if err := report.Comparison(os.Stdout, class, rows); err != nil {
			return err
		}
	}
	qrows := baseline.CompareQuality(f, in.blocks)
	if err := report.QualityComparison(os.Stdout, qrows); err != nil {
		return err
	}
	if change := baseline.BuildChanged(f, recs); change != "" && len(rows) > 0 {
		// Another build is not a regression of this one, whatever moved.
		return cli.Exit(fmt.Sprintf("tokbench: the build changed since the baseline (%s): the differences above are the build's, not regressions; "+
			"make a baseline of this build (tokbench baseline create --dir NEW ...), or compare the builds with tokbench compare", change), exitNothingCompared)
	}
	var bad []string
	if b := baseline.Regressions(rows); len(b) > 0 {
		bad = append(bad, fmt.Sprintf("significant regression (p < %g, at least %.0f%% slower): %s", c.Float64("alpha"), 100*c.Float64("min-effect"), strings.Join(b, "; ")))
	}
	if b := baseline.QualityRegressions(qrows); len(b) > 0 {
		bad = append(bad, "quality regression (mean KLD up beyond its 95% uncertainty): "+strings.Join(b, "; "))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "\n"))
	}
	matched := baseline.Matched(rows) + baseline.QualityMatched(qrows)
	total := len(rows) + len(qrows)
	if matched == 0 {
		return cli.Exit("tokbench: no point of the results is in the baseline, so nothing was compared: measure the baseline's points (same model file, same settings), or create a baseline of these", exitNothingCompared)
	}
	if c.Bool("require-all") && matched < total {
		return fmt.Errorf("%d of %d points have no baseline (--require-all): add them with tokbench baseline create", total-matched, total)
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
