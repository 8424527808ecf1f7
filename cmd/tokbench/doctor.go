package main

import (
	"os"
	"time"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/doctor"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check, read-only, whether this machine is fit to benchmark on (CPU governor, load, swap, memory, GPUs ...)",
		UsageText: "tokbench doctor [-m MODEL.gguf] [-o table|json]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "also check that this model fits in memory (at -p 512 -n 128)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output format: table or json"},
		},
		Action: func(c *cli.Context) error {
			if err := checkFormat(c.String("output"), report.LoadFormats); err != nil {
				return err
			}
			var need uint64
			if m := c.String("model"); m != "" {
				p := point.Defaults(host.Read().Cores)
				p.Model = m
				f, err := plan.Read(m)
				if err != nil {
					return err
				}
				need = uint64(f.Need(p).Total())
			}
			findings := doctor.Host("/", need, doctor.Busy("/", 500*time.Millisecond))
			if lib, err := telemetry.OpenNVML(); err == nil {
				findings = append(findings, telemetry.Checks(lib)...)
				lib.Shutdown()
			} else {
				findings = append(findings, doctor.Finding{Check: "gpus", Level: doctor.Info, Says: err.Error()})
			}
			return report.Findings(os.Stdout, c.String("output"), findings)
		},
	}
}
