package main

import (
	"os"
	"strings"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/report"
	"github.com/tokbench/tokbench/roofline"
	"github.com/urfave/cli/v2"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "print a results file again",
		UsageText: "tokbench report results.jsonl [-o table|md|csv|json|jsonl|html] [--out FILE]\n" +
			"   tokbench report results.jsonl -o html --out report.html   (one self-contained page with SVG charts)\n" +
			"   tokbench report results.jsonl -o md --out report.md       (tables, and the charts as SVG files beside it)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "format: " + strings.Join(report.Formats, ", ")},
			&cli.StringFlag{Name: "out", Usage: "write to this file instead of standard output"},
			&cli.StringFlag{Name: "sqlite", Usage: "append the records to this SQLite database (llama-bench's llama_bench table, of any version: made if absent, the columns it lacks added), instead of printing them"},
			&cli.StringFlag{Name: "telemetry", Usage: "raw samples (--telemetry-out of run or sweep) to chart as timelines in html and md"},
			wideFlag, tagParallelFlag,
			&cli.StringFlag{Name: "reference", Usage: "a fleet's records of several hardware classes: the class the others' t/s are divided by (default: the first)"},
		},
		Action: doReport,
	}
}

func doReport(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("give one results file: tokbench report results.jsonl [-o table|md|csv|json|jsonl]")
	}
	if err := checkFormat(c.String("output"), report.Formats); err != nil {
		return err
	}
	if db := c.String("sqlite"); db != "" {
		if c.IsSet("output") || c.IsSet("out") {
			return usagef("--sqlite appends to the database and prints nothing: drop -o and --out, or run tokbench report twice (once with --sqlite, once with -o/--out)")
		}
		streamingGC()
		return report.SQLiteFile(c.Context, os.Stderr, c.Args().First(), db)
	}
	if out := c.String("out"); out != "" {
		if err := report.CheckOut(out, c.Args().First(), c.String("telemetry")); err != nil {
			return usageErr(err)
		}
	}
	var tl report.Timeline
	if p := c.String("telemetry"); p != "" {
		var err error
		if tl, err = report.ReadTimeline(p); err != nil {
			return err
		}
	}
	dir, err := plan.CacheDir()
	if err != nil {
		return err
	}
	return report.File(os.Stdout, os.Stderr, c.Args().First(), report.FileOptions{
		Format: c.String("output"), Out: c.String("out"), Timeline: tl, Peaks: &roofline.Cache{Dir: dir}, Reference: c.String("reference"),
		Options: report.Options{Wide: c.Bool("wide"), TagParallel: c.Bool("tag-parallel")},
	})
}
