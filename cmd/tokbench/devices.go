package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/tokbench/tokbench/telemetry"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
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
			host := gpu.ReadHost()
			devs := engine.Devices()
			profiles, nvmlErr := telemetry.ReadProfiles()
			switch c.String("output") {
			case "json":
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"host": host, "devices": devs, "cpu_features": engine.CPUFeatures(), "system_info": engine.SystemInfo(),
					"llama_commit": engine.LlamaCommit, "ollama_version": engine.OllamaVersion,
					"backend_dirs": engine.BackendDirsLoaded(), "gpu_offload": engine.SupportsGPUOffload(),
					"gpus": profiles, "nvml": errText(nvmlErr),
				})
			case "table":
			default:
				return usagef("output format %q: use table or json", c.String("output"))
			}
			fmt.Printf("llama.cpp %s (ollama %s), tokbench %s\n", engine.LlamaCommit, engine.OllamaVersion, version)
			fmt.Printf("host: %s\n", host)
			fmt.Printf("cpu features: %s\n", engine.CPUFeatures())
			if dirs := engine.BackendDirsLoaded(); len(dirs) > 0 {
				fmt.Printf("backend folders: %s\n", strings.Join(dirs, ", "))
			}
			fmt.Printf("\n%-3s %-8s %-6s %-12s %12s %12s  %s\n", "#", "backend", "type", "name", "free MiB", "total MiB", "description")
			for _, d := range devs {
				fmt.Printf("%-3d %-8s %-6s %-12s %12.0f %12.0f  %s\n", d.Index, d.Backend, d.Type, d.Name,
					float64(d.MemoryFree)/(1<<20), float64(d.MemoryTotal)/(1<<20), d.Description)
			}
			if nvmlErr != nil {
				fmt.Printf("\n%s\n", nvmlErr)
			}
			for _, g := range profiles {
				fmt.Printf("\nGPU %d: %s  %s\n", g.Index, g.Name, g.UUID)
				fmt.Printf("  driver %s, CUDA %s, compute %s, %d SMs, %.1f GiB, %d-bit bus, max clocks %d MHz (SM) / %d MHz (memory)\n",
					g.Driver, g.CUDADriver, g.Compute, g.SMs, float64(g.MemoryTotal)/(1<<30), g.BusWidthBits, g.MaxSMClockMHz, g.MaxMemClockMHz)
				fmt.Printf("  peak bandwidth %.0f GB/s (%s), power limit %.0f W, PCIe gen %d x%d\n", g.PeakBWGBs, g.BWSource, g.PowerLimitW, g.PCIeGen, g.PCIeWidth)
				if p := g.Part; p != nil {
					fmt.Printf("  datasheet (%s): %.0f GB/s, FP16 %.0f, BF16 %.0f TFLOP/s, INT8 %.0f TOP/s\n", p.Match, p.BWGBs, p.FP16, p.BF16, p.INT8)
				}
			}
			if len(engine.GPUs()) == 0 {
				fmt.Println("\nno GPU backend loaded: build one (third_party/README.md) and pass --backend-dir, or benchmark on the CPU")
			}
			return nil
		},
	}
}
