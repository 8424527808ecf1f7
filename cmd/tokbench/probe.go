package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

func probeCommand() *cli.Command {
	return &cli.Command{
		Name:  "probe",
		Usage: "measure the device's ceilings with ggml (memory bandwidth, matrix products) for the roofline",
		UsageText: "tokbench probe [--device N] [-t threads] [--types f16,q8_0,q4_0] [-r 3] [-o table|json]\n" +
			"   stored per hardware class in the cache; run, sweep and report use it for ceilings",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "device", Value: -1, Usage: "device index from 'tokbench devices' (default: the first GPU, else the CPU)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: host.Read().Cores, Usage: "CPU threads"},
			&cli.StringFlag{Name: "types", Value: "f16,q8_0,q4_0", Usage: "weight types of the matrix products"},
			&cli.IntFlag{Name: "repetitions", Aliases: []string{"r"}, Value: 3, Usage: "repetitions of each measurement (the median is kept)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"},
		},
		Action: doProbe,
	}
}

func doProbe(c *cli.Context) error {
	format := c.String("output")
	if format != "table" && format != "json" {
		return usagef("output format %q: use table or json", format)
	}
	dir, err := plan.CacheDir()
	if err != nil {
		return err
	}
	types := point.SplitList(strings.ToLower(c.String("types")))
	p, path, err := measure.ProbeDevice(measure.DescribeEnv(version), c.Int("device"), c.Int("threads"), types, c.Int("repetitions"), dir,
		func(s string) { fmt.Fprintln(os.Stderr, s) })
	if err != nil {
		return err
	}
	if err := report.WriteProbe(os.Stdout, format, p, types); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "saved %s\n", path)
	return nil
}
