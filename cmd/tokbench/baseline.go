package main

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tokbench/tokbench/record"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/baseline"
)

func baselineCommand() *cli.Command {
	dir := &cli.StringFlag{Name: "dir", Value: "baselines", Usage: "folder of baseline files, one per hardware class"}
	effect := &cli.Float64Flag{Name: "min-effect", Value: 0.05, Usage: "smallest change that counts, as a fraction of the median"}
	// load reads the results file and the baseline (nil if none) of
	// their hardware class.
	load := func(c *cli.Context) ([]record.Record, string, *baseline.File, error) {
		if c.NArg() != 1 {
			return nil, "", nil, usagef("give one results file (JSONL from run -o jsonl or sweep --out, or llama-bench's JSON)")
		}
		recs, _, _, err := record.Read(c.Args().First())
		if err != nil {
			return nil, "", nil, err
		}
		class, err := baseline.ClassOf(recs)
		if err != nil {
			return nil, "", nil, usageErr(err)
		}
		f, err := baseline.Load(c.String("dir"), class)
		return recs, class, f, err
	}
	return &cli.Command{
		Name:  "baseline",
		Usage: "keep per-hardware-class baselines and compare results with them (a CI gate)",
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "write or merge the baseline of the results' hardware class",
				UsageText: "tokbench baseline create results.jsonl [--dir baselines]",
				Flags:     []cli.Flag{dir, effect},
				Action: func(c *cli.Context) error {
					recs, class, old, err := load(c)
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
				},
			},
			{
				Name:      "compare",
				Usage:     "compare results with their class's baseline; exit 1 on a significant regression",
				UsageText: "tokbench baseline compare results.jsonl [--dir baselines] [--alpha 0.05] [--min-effect 0.05]",
				Flags:     []cli.Flag{dir, effect, &cli.Float64Flag{Name: "alpha", Value: 0.05, Usage: "significance level of the Mann-Whitney U test"}},
				Action: func(c *cli.Context) error {
					recs, class, f, err := load(c)
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
					printRows(rows, class)
					var bad []string
					for _, r := range rows {
						if r.Regression {
							bad = append(bad, r.Model+" "+r.Test)
						}
					}
					if len(bad) > 0 {
						return fmt.Errorf("significant regression (p < %g, at least %.0f%% slower): %s", c.Float64("alpha"), 100*c.Float64("min-effect"), strings.Join(bad, "; "))
					}
					return nil
				},
			},
			{
				Name:      "show",
				Usage:     "print a baseline",
				UsageText: "tokbench baseline show [--dir baselines] [--class CLASS]",
				Flags:     []cli.Flag{dir, &cli.StringFlag{Name: "class", Usage: "hardware class (default: every class in --dir)"}},
				Action: func(c *cli.Context) error {
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
						fmt.Printf("class %s, updated %s, %v\n", f.Class, f.Updated.Format("2006-01-02 15:04"), f.Software)
						tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
						fmt.Fprintln(tw, "model\ttest\tsamples\tmedian t/s\texpected range")
						keys := make([]string, 0, len(f.Points))
						for k := range f.Points {
							keys = append(keys, k)
						}
						sort.Strings(keys)
						for _, k := range keys {
							p := f.Points[k]
							fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f - %.2f\n", p.Model, p.Test, len(p.SamplesTs), p.MedianTs, p.Low, p.High)
						}
						tw.Flush()
					}
					return nil
				},
			},
		},
	}
}

func orNone(xs []string) []string {
	if len(xs) == 0 {
		return []string{"none"}
	}
	return xs
}

// printRows writes a benchstat-like table: old, new, delta, p, verdict.
func printRows(rows []baseline.Row, class string) {
	fmt.Printf("class %s\n", class)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\ttest\told t/s\tnew t/s\tdelta\tp\tverdict")
	for _, r := range rows {
		if r.Verdict == "no baseline" {
			fmt.Fprintf(tw, "%s\t%s\t-\t%.2f\t-\t-\t%s\n", r.Model, r.Test, r.New, r.Verdict)
			continue
		}
		p := fmt.Sprintf("%.3f", r.P)
		if math.IsNaN(r.P) {
			p = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%+.1f%%\t%s\t%s\n", r.Model, r.Test, r.Old, r.New, 100*r.Delta, p, r.Verdict)
	}
	tw.Flush()
}
