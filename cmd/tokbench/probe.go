package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/sweep"
)

func probeCommand() *cli.Command {
	return &cli.Command{
		Name:  "probe",
		Usage: "measure the device's ceilings with ggml (memory bandwidth, matrix products) for the roofline",
		UsageText: "tokbench probe [--device N] [-t threads] [--types f16,q8_0,q4_0] [-r 3] [-o table|json]\n" +
			"   stored per hardware class in the cache; run, sweep and report use it for ceilings",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "device", Value: -1, Usage: "device index from 'tokbench devices' (default: the first GPU, else the CPU)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: gpu.ReadHost().Cores, Usage: "CPU threads"},
			&cli.StringFlag{Name: "types", Value: "f16,q8_0,q4_0", Usage: "weight types of the matrix products"},
			&cli.IntFlag{Name: "repetitions", Aliases: []string{"r"}, Value: 3, Usage: "repetitions of each measurement (the median is kept)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"},
		},
		Action: func(c *cli.Context) error {
			devs := engine.Devices()
			idx := c.Int("device")
			if idx < 0 {
				idx = 0
				if g := engine.GPUs(); len(g) > 0 {
					idx = g[0].Index
				}
			}
			if idx >= len(devs) {
				return usagef("--device %d: there are %d devices (tokbench devices lists them)", idx, len(devs))
			}
			if c.Int("repetitions") < 1 || c.Int("threads") < 1 {
				return usagef("-r and -t must be at least 1")
			}
			types := splitList(strings.ToLower(c.String("types")))
			for _, t := range types {
				if _, err := engine.ParseKVType(t); err != nil && t != "q4_k" && t != "q6_k" && t != "q5_k" {
					return usagef("--types: %q: use f16, bf16, f32, q8_0, q5_0, q5_1, q4_0, q4_1, iq4_nl, q4_k, q5_k, q6_k", t)
				}
			}
			if c.String("output") != "table" && c.String("output") != "json" {
				return usagef("output format %q: use table or json", c.String("output"))
			}
			d := devs[idx]
			threads := c.Int("threads")
			// The class a record of this device gets (see sweep.Record.Class).
			rec := sweep.Record{Backend: "CPU", CPUInfo: gpu.ReadHost().CPUModel, NThreads: threads}
			if d.Type != "cpu" {
				rec.Backend, rec.GPUInfo = d.Backend, d.Description
				rec.GPUProfile = sweep.DescribeEnv(version).GPUs
			}
			fmt.Fprintf(os.Stderr, "probing %s (%s), class %s\n", d.Description, d.Backend, rec.Class())
			p, err := roofline.RunProbe(d, rec.Class(), threads, types, c.Int("repetitions"), func(s string) { fmt.Fprintln(os.Stderr, "  "+s) })
			if err != nil {
				return err
			}
			dir, err := sweep.CacheDir()
			if err != nil {
				return err
			}
			path, err := p.Save(dir)
			if err != nil {
				return err
			}
			if c.String("output") == "json" {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(p); err != nil {
					return err
				}
			} else {
				pk := p.Peaks()
				fmt.Printf("class %s: memory %.1f GB/s, best GEMM %.2f TFLOP/s\n", p.Class, pk.BWGBs, pk.TFLOPS)
				for _, t := range types {
					fmt.Printf("  %-6s GEMM %8.1f GFLOP/s   GEMV %8.1f GFLOP/s\n", t, p.MatMul[t].GEMM, p.MatMul[t].GEMV)
				}
			}
			fmt.Fprintf(os.Stderr, "saved %s\n", path)
			return nil
		},
	}
}
