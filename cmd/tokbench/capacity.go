package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/tokbench/tokbench/telemetry"

	"github.com/urfave/cli/v2"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/load"
	"github.com/tokbench/tokbench/sweep"
)

func capacityCommand() *cli.Command {
	return &cli.Command{
		Name:  "capacity",
		Usage: "find the largest concurrency (or arrival rate) that meets the SLOs",
		UsageText: "tokbench capacity -m M --workload short --slo ttft_p99=2s,itl_p99=60ms [--max-concurrency 256] [--requests-per-client 8]\n" +
			"   tokbench capacity -m M --workload short --slo ttft_p99=2s --open-loop --slots 16 --max-rate 64 [--requests 128]",
		Flags: append(append(serveFlags(),
			&cli.IntFlag{Name: "max-concurrency", Value: 256, Usage: "closed loop: largest concurrency tried"},
			&cli.IntFlag{Name: "requests-per-client", Value: 8, Usage: "closed loop: requests per client in each probe (the first wave is left out as warm-up)"},
			&cli.BoolFlag{Name: "open-loop", Usage: "search the arrival rate (Poisson) for a server of --slots instead"},
			&cli.IntFlag{Name: "slots", Value: 16, Usage: "open loop: sequences served at once"},
			&cli.Float64Flag{Name: "max-rate", Value: 64, Usage: "open loop: largest rate tried, requests per second"},
			&cli.IntFlag{Name: "requests", Value: 128, Usage: "open loop: requests per probe"},
			&cli.Float64Flag{Name: "burstiness", Value: 1, Usage: "open loop: squared CV of the gaps"},
			&cli.StringFlag{Name: "out", Usage: "append the search (every probe) as one JSON line to this file (tokbench report reads it)"},
		), telemetryFlags()...),
		Action: doCapacity,
	}
}

func doCapacity(c *cli.Context) error {
	w, slos, g, model, err := serveSetup(c)
	if err != nil {
		return err
	}
	if len(slos) == 0 {
		return usagef("capacity needs --slo, e.g. --slo ttft_p99=2s,itl_p99=60ms")
	}
	o := load.CapacityOptions{MaxConcurrency: c.Int("max-concurrency"), RequestsPerClient: c.Int("requests-per-client"), Seed: c.Uint64("seed"), Guards: g}
	maxSlots := o.MaxConcurrency
	if c.Bool("open-loop") {
		o.Slots, o.MaxRate, o.Requests, o.Burstiness = c.Int("slots"), c.Float64("max-rate"), c.Int("requests"), c.Float64("burstiness")
		maxSlots = o.Slots
		if o.MaxRate <= 0 || o.Requests < 2*o.Slots || o.Burstiness <= 0 {
			return usagef("--max-rate must be positive, --requests at least twice --slots, --burstiness above 0")
		}
	} else if o.RequestsPerClient < 2 {
		return usagef("--requests-per-client %d: at least 2 (the first is warm-up)", o.RequestsPerClient)
	}
	if maxSlots < 1 || maxSlots > engine.MaxParallelSequences() {
		return usagef("--max-concurrency or --slots %d: use 1 to %d", maxSlots, engine.MaxParallelSequences())
	}
	reqs := w.Generate(max(maxSlots*o.RequestsPerClient, o.Requests), o.Seed)
	sampler, telemetryDone, err := startSampling(c)
	if err != nil {
		return err
	}
	defer func() {
		if err := telemetryDone(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	sv, err := server(c, model, longestAdmitted(reqs, g))
	if err != nil {
		return err
	}
	defer sv.Close()
	res, err := load.Capacity(c.Context, sv.Server, w, slos, o)
	if err != nil {
		return err
	}
	if err := decodeRoofline(&res, sv, reqs, o.Slots, sampler); err != nil {
		fmt.Fprintln(os.Stderr, "roofline:", err)
	}
	if out := c.String("out"); out != "" {
		if err := appendJSON(out, load.Line{Kind: "capacity", Workload: &w, Capacity: &res, Host: gpu.ReadHost().CPUModel,
			Tool: "tokbench " + version, BuildCommit: engine.LlamaCommit, OllamaVersion: engine.OllamaVersion}); err != nil {
			return err
		}
	}
	if c.String("output-format") == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\treq/s\toutput t/s\tttft p99 ms\titl p99 ms\tt/s per user\tresult\t")
	for _, p := range res.Probes {
		s := p.Summary
		result := "pass"
		if !p.Pass {
			result = p.Why
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t\n", probeLoad(p), s.RequestsPerS, s.OutputTps, s.TTFTMs.P99, s.ITLMs.P99, s.PerUserTs.P50, result)
	}
	tw.Flush()
	sustained := fmt.Sprintf("%d concurrent generations", res.Concurrency)
	if c.Bool("open-loop") {
		sustained = fmt.Sprintf("%.3g requests/s on %d slots", res.Rate, o.Slots)
	}
	fmt.Printf("\nsustainable: %s, %.1f t/s per user (median), %.1f output t/s in all\nbound by: %s\n",
		sustained, res.PerUserTs, res.OutputTps, res.BoundBy)
	return nil
}

// decodeRoofline sets the deciding probe's decode against the hardware's
// ceiling (a probe of this class, or the GPU's datasheet): its aggregate
// decode rate is the sequences over the median inter-token latency, at the
// workload's mean prompt and output.
func decodeRoofline(res *load.CapacityResult, sv *served, reqs []load.Request, openSlots int, sampler *telemetry.Sampler) error {
	d := res.Deciding
	if d == nil || d.Summary.ITLMs.N == 0 || d.Summary.ITLMs.P50 <= 0 {
		return nil
	}
	p := sv.Base
	p.Parallel = cmp.Or(d.Concurrency, openSlots)
	var prompt, output int
	for _, r := range reqs {
		prompt, output = prompt+r.Prompt, output+r.Output
	}
	var tel *gpu.Window
	if sampler != nil {
		w := sampler.Window(d.Start, d.End)
		tel = &w
	}
	dir, err := sweep.CacheDir()
	if err != nil {
		return err
	}
	ts := float64(p.Parallel) * 1000 / d.Summary.ITLMs.P50
	a, err := sweep.DecodeRoofline(p, sv.Meta, sweep.DescribeEnv(version), prompt/len(reqs), output/len(reqs), ts, tel, dir)
	if err != nil || a == nil {
		return err
	}
	res.Roofline = a
	res.BoundBy += fmt.Sprintf("; its decode (%.1f t/s at %d sequences): %s, %s", ts, p.Parallel, a.Verdict, a.Why)
	return nil
}

func probeLoad(p load.Probe) string {
	if p.Rate > 0 {
		return fmt.Sprintf("%.3g/s", p.Rate)
	}
	return fmt.Sprint(p.Concurrency)
}

// appendJSON appends values to a file, a JSON line each, and syncs it.
func appendJSON(path string, values ...any) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, v := range values {
		if err == nil {
			err = enc.Encode(v)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("results %s: %w", path, err)
	}
	return nil
}
