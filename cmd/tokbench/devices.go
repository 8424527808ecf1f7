package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
)

func devicesCommand() *cli.Command {
	return &cli.Command{
		Name:  "devices",
		Usage: "list backends, devices, memory and CPU features",
		Flags: []cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"}},
		Action: func(c *cli.Context) error {
			host := gpu.ReadHost()
			devs := engine.Devices()
			switch c.String("output") {
			case "json":
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"host": host, "devices": devs, "cpu_features": engine.CPUFeatures(), "system_info": engine.SystemInfo(),
					"llama_commit": engine.LlamaCommit, "ollama_version": engine.OllamaVersion,
					"backend_dirs": engine.BackendDirsLoaded(), "gpu_offload": engine.SupportsGPUOffload(),
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
			if len(engine.GPUs()) == 0 {
				fmt.Println("\nno GPU backend loaded: build one (third_party/README.md) and pass --backend-dir, or benchmark on the CPU")
			}
			return nil
		},
	}
}
