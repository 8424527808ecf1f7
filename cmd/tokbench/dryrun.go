package main

import (
	"fmt"
	"os"

	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/report"
	"github.com/tokbench/tokbench/sweep"
	"github.com/urfave/cli/v2"
)

// dryRun prints what run would measure, estimated: each test's memory,
// the bytes and FLOPs of a step and the ceiling on this hardware class,
// without making a synthetic model (a preset is estimated from its shape
// at its type's usual bits per weight) or loading one into llama.cpp.
func dryRun(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q: flags come before arguments, and run takes none", c.Args().First())
	}
	format := c.String("output")
	if format != "table" && format != "json" {
		return usagef("--dry-run writes a table, or -o json: not -o %s", format)
	}
	s, dir, err := runSpec(c)
	if err != nil {
		return err
	}
	refs, err := sweep.Refs(s, dir, true)
	if err != nil {
		return err
	}
	tests, _, err := s.Tests(refs)
	if err != nil {
		return err
	}
	env := measure.DescribeEnv(version)
	rows, err := sweep.Estimates(tests, refs, env)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "estimates: %s; a mixture's experts at an even router's expectation (run measures how its router spreads them)\n", env.Device(tests[0]).Class)
	return report.WriteEstimates(os.Stdout, format, rows)
}
