package main

import (
	"io"
	"os"

	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:  "profile",
		Usage: "time every graph node of a point's real steps (llama.cpp's eval callback), grouped by op and type",
		UsageText: "tokbench profile -m MODEL.gguf [-p 512] [-n 32] [-d 0] [--parallel 1] [-o table|json|md|html] [--out FILE]\n" +
			"   the settings are run's; -r, --sampling and telemetry do not apply",
		Flags:  append(runFlags(report.ProfileFormats), &cli.StringFlag{Name: "out", Usage: "write to this file instead of standard output"}),
		Action: doProfile,
	}
}

func doProfile(c *cli.Context) error {
	tests, format, err := testsCommand(c, report.ProfileFormats)
	if err != nil {
		return err
	}
	p, err := onePoint(tests)
	if err != nil {
		return err
	}
	if out := c.String("out"); out != "" {
		if err := report.CheckOut(out); err != nil {
			return usageErr(err)
		}
	}
	ps, err := measure.Profile(c.Context, p, measure.DescribeEnv(version))
	if err != nil {
		return err
	}
	return report.ToOut(os.Stdout, c.String("out"), nil, func(w io.Writer) error { return report.WriteOpProfiles(w, format, ps) })
}

// onePoint folds the tests run lays out back into the one point they
// are the pp and tg of: profile takes one value per flag.
func onePoint(tests []point.Point) (point.Point, error) {
	p := tests[0]
	p.NPrompt, p.NGen, p.PG, p.Combined = 0, 0, [2]int{}, false
	pps, tgs := 0, 0
	for _, t := range tests {
		switch {
		case sansTokens(t) != sansTokens(tests[0]):
			return p, usagef("profile measures one point: give one value per flag (run takes lists)")
		case t.Combined || t.Sampled():
		case t.NGen == 0:
			p.NPrompt, pps = t.NPrompt, pps+1
		default:
			p.NGen, tgs = t.NGen, tgs+1
		}
	}
	if pps > 1 || tgs > 1 {
		return p, usagef("profile measures one point: give one -p and one -n (run takes lists)")
	}
	return p, nil
}

// sansTokens is a test's key but for its token counts and sampling.
func sansTokens(t point.Point) string {
	k := t.Key()
	k.NPrompt, k.NGen, k.Sampling = 0, 0, ""
	return k.String()
}
