package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/measure"
	"github.com/tokbench/tokbench/preset"
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
	metas := map[string]modelPlan{}
	for _, r := range refs {
		if metas[r.ID], err = planModel(r); err != nil {
			return err
		}
	}
	env := measure.DescribeEnv(version)
	gib, mib := func(b int64) float64 { return float64(b) / (1 << 30) }, func(b float64) float64 { return b / (1 << 20) }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\ttest\tngl\tncmoe\tmemory GiB (weights+KV+compute)\tfits\tMiB/step\tof it experts\tGFLOP/step\tceiling t/s\tbound\tpeaks")
	var refused []string
	for _, p := range tests {
		if p.Sampled() {
			continue
		}
		mp := metas[p.ModelID]
		est, err := measure.EstimateTest(p, mp.meta, mp.h, mp.f, env)
		if err != nil {
			return err
		}
		m, a := est.Memory, est.Roofline
		experts := "-"
		if x := est.Experts; x != nil {
			experts = fmt.Sprintf("%.1f (%.1f of %d per layer)", mib(a.ExpertBytesPerStep), x.Uniform, x.Count)
		}
		ceiling, bound, peaks := "-", "-", "none known: run tokbench probe"
		if a.CeilingTs > 0 {
			ceiling, bound = fmt.Sprintf("%.1f", a.CeilingTs), a.Bound
			peaks = fmt.Sprintf("%s %.0f GB/s, %.2f TFLOP/s", a.PeakSource, a.PeakBWGBs, a.PeakTFLOPS)
		}
		fits := "yes"
		if err := measure.Fits(mp.h, m, p); err != nil {
			fits = "no"
			refused = append(refused, fmt.Sprintf("%s %s: %v", mp.name, p.TestName(), err))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f (%.2f+%.2f+%.2f)\t%s\t%.1f\t%s\t%.1f\t%s\t%s\t%s\n", mp.name, p.TestName(), p.NGPULayers, p.NCPUMoE, gib(m.Total()), gib(m.Weights), gib(m.KV), gib(m.Compute),
			fits, mib(a.BytesPerStep), experts, a.FlopsPerStep/1e9, ceiling, bound, peaks)
	}
	tw.Flush()
	for _, r := range refused {
		fmt.Println("would be refused:", r)
	}
	fmt.Fprintf(os.Stderr, "estimates: %s; a mixture's experts at an even router's expectation (run measures how its router spreads them)\n", env.Device(tests[0]).Class)
	return nil
}

// modelPlan is a model as the estimates see it.
type modelPlan struct {
	name string
	meta engine.Meta
	h    gguf.Hparams
	f    *gguf.File // nil: not made yet
}

// planModel reads a model's file when it exists, else plans a synthetic
// one from its preset.
func planModel(r sweep.ModelRef) (modelPlan, error) {
	if _, err := os.Stat(r.Path); err == nil || r.Preset == "" {
		m, h, f, err := measure.FileMeta(r.Path)
		return modelPlan{r.Path, m, h, f}, err
	}
	s, err := preset.Lookup(r.Preset)
	if err != nil {
		return modelPlan{}, err
	}
	m, h := measure.PlannedMeta(s, r.Type)
	return modelPlan{fmt.Sprintf("%s %s (planned)", s.Name, r.Type), m, h, nil}, nil
}
