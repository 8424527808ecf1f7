package main

import (
	"os"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func devicesCommand() *cli.Command {
	return &cli.Command{
		Name:  "devices",
		Usage: "list backends, devices, memory and CPU features",
		Flags: []cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"}},
		Action: func(c *cli.Context) error {
			if err := checkFormat(c.String("output"), report.LoadFormats); err != nil {
				return err
			}
			profiles, nvmlErr := telemetry.ReadGPUs()
			d := report.Devices{Host: host.Read(), Devices: engine.Devices(), CPUFeatures: engine.CPUFeatures(), SystemInfo: engine.SystemInfo(),
				LlamaCommit: engine.LlamaCommit, OllamaVersion: engine.OllamaVersion, Tool: version, BackendDirs: engine.BackendDirsLoaded(),
				GPUOffload: engine.SupportsGPUOffload(), GPUs: profiles, NVML: errText(nvmlErr)}
			return report.WriteDevices(os.Stdout, c.String("output"), d)
		},
	}
}
