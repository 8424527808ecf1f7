package main

import (
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/measure"
	"github.com/tokbench/tokbench/report"
)

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:  "profile",
		Usage: "time every graph node of a point's real steps (llama.cpp's eval callback), grouped by op and type",
		UsageText: "tokbench profile -m MODEL.gguf [-p 512] [-n 32] [-d 0] [--parallel 1] [-o table|json|md|html] [--out FILE]\n" +
			"   the settings are run's; -r, --sampling and telemetry do not apply",
		Flags:  append(pointFlags(), &cli.StringFlag{Name: "out", Usage: "write to this file instead of standard output"}),
		Action: doProfile,
	}
}

func doProfile(c *cli.Context) error {
	p, format, err := pointCommand(c, report.ProfileFormats)
	if err != nil {
		return err
	}
	ps, err := measure.Profile(c.Context, p, measure.DescribeEnv(version))
	if err != nil {
		return err
	}
	return report.ToOut(os.Stdout, c.String("out"), func(w io.Writer) error { return report.WriteOpProfiles(w, format, ps) })
}
