package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/tokbench/tokbench/measure"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
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
	metas := map[string]sweep.ModelPlan{}
	for _, r := range refs {
		if metas[r.ID], err = sweep.PlanModel(r); err != nil {
			return err
		}
	}
	env := measure.DescribeEnv(version)
	var rows []dryRow
	for _, p := range tests {
		if p.Sampled() {
			continue
		}
		mp := metas[p.ModelID]
		est, err := measure.EstimateTest(p, mp.Meta, mp.H, mp.File, env)
		if err != nil {
			return err
		}
		row := dryRow{Model: mp.Name, Test: p.TestName(), NGPULayers: p.NGPULayers, NCPUMoE: p.NCPUMoE, Memory: est.Memory, Fits: true,
			Experts: est.Experts, Roofline: est.Roofline}
		if err := measure.Fits(mp.H, est.Memory, p); err != nil {
			row.Fits, row.Refused = false, err.Error()
		}
		rows = append(rows, row)
	}
	fmt.Fprintf(os.Stderr, "estimates: %s; a mixture's experts at an even router's expectation (run measures how its router spreads them)\n", env.Device(tests[0]).Class)
	if format == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return dryTable(rows)
}

// dryRow is one test's estimate, as --dry-run -o json writes it.
type dryRow struct {
	Model      string            `json:"model"`
	Test       string            `json:"test"`
	NGPULayers int               `json:"n_gpu_layers"`
	NCPUMoE    int               `json:"n_cpu_moe"`
	Memory     measure.Memory    `json:"memory"`
	Fits       bool              `json:"fits"`
	Refused    string            `json:"refused,omitempty"` // why it would be, if it would
	Experts    *record.Experts   `json:"experts,omitempty"`
	Roofline   roofline.Analysis `json:"roofline"`
}

// dryTable writes the estimates as a table, then why each point that
// would be refused would be.
func dryTable(rows []dryRow) error {
	gib, mib := func(b int64) float64 { return float64(b) / (1 << 30) }, func(b float64) float64 { return b / (1 << 20) }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\ttest\tngl\tncmoe\tmemory GiB (weights+KV+compute)\tfits\tMiB/step\tof it experts\tGFLOP/step\tceiling t/s\tbound\tpeaks")
	for _, r := range rows {
		m, a := r.Memory, r.Roofline
		experts := "-"
		if x := r.Experts; x != nil {
			experts = fmt.Sprintf("%.1f (%.1f of %d per layer)", mib(a.ExpertBytesPerStep), x.Uniform, x.Count)
		}
		ceiling, bound, peaks := "-", "-", "none known: run tokbench probe"
		if a.CeilingTs > 0 {
			ceiling, bound = fmt.Sprintf("%.1f", a.CeilingTs), a.Bound
			peaks = fmt.Sprintf("%s %.0f GB/s, %.2f TFLOP/s", a.PeakSource, a.PeakBWGBs, a.PeakTFLOPS)
			if a.HostBWGBs > 0 {
				peaks += fmt.Sprintf("; %.1f MiB from host memory at %.0f GB/s", mib(a.HostBytesPerStep), a.HostBWGBs)
			}
		}
		fits := "yes"
		if !r.Fits {
			fits = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f (%.2f+%.2f+%.2f)\t%s\t%.1f\t%s\t%.1f\t%s\t%s\t%s\n", r.Model, r.Test, r.NGPULayers, r.NCPUMoE,
			gib(m.Total()), gib(m.Weights), gib(m.KV), gib(m.Compute), fits, mib(a.BytesPerStep), experts, a.FlopsPerStep/1e9, ceiling, bound, peaks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if !r.Fits {
			fmt.Printf("would be refused: %s %s: %s\n", r.Model, r.Test, r.Refused)
		}
	}
	return nil
}
