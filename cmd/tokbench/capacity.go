package main

import (
	"cmp"
	"fmt"
	"os"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
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
			&cli.Float64Flag{Name: "burstiness", Value: 1, Usage: "open loop: gamma shape of the gaps, as vLLM's (1: Poisson, below 1: burstier)"},
			&cli.DurationFlag{Name: "max-time", Usage: "end the search within this time (e.g. 10m) with the best answer so far (0: no limit)"},
			&cli.BoolFlag{Name: "keep-raising", Usage: "raise the load past saturation (by default the search stops once doubling it adds under 10% output t/s while the latency climbs)"},
			&cli.StringFlag{Name: "out", Usage: "append each probe as it is judged, then the search, as JSON lines to this file (tokbench report reads it)"},
		), telemetryFlags()...),
		Action: doCapacity,
	}
}

func doCapacity(c *cli.Context) error {
	in, err := serveSetup(c)
	if err != nil {
		return err
	}
	if len(in.slos) == 0 {
		return usagef("capacity needs --slo, e.g. --slo ttft_p99=2s,itl_p99=60ms")
	}
	o := load.CapacityOptions{MaxConcurrency: c.Int("max-concurrency"), RequestsPerClient: c.Int("requests-per-client"), Seed: c.Uint64("seed"), Guards: in.guards,
		MaxTime: c.Duration("max-time"), KeepRaising: c.Bool("keep-raising")}
	if c.Bool("open-loop") {
		o.Slots, o.MaxRate, o.Requests, o.Burstiness = c.Int("slots"), c.Float64("max-rate"), c.Int("requests"), c.Float64("burstiness")
	}
	if err := o.Check(); err != nil {
		return err
	}
	if err := measure.CheckSlots(in.base, o.MaxSlots()); err != nil {
		return err
	}
	out, err := openOut(c.String("out"))
	if err != nil {
		return err
	}
	defer out.Close()
	// Each probe is written before it is shown: what the user sees is saved.
	o.Judged = func(p load.Trial, at load.Outlook) error {
		if out != nil {
			if err := out.Append(load.TrialLine(p, in.workload, provenance())); err != nil {
				return err
			}
		}
		fmt.Fprintln(os.Stderr, report.TrialProgress(p, at))
		return nil
	}
	sampler, stopSampling, err := startSampling(c)
	if err != nil {
		return err
	}
	defer warn(stopSampling)
	reqs := o.Largest(in.workload)
	sv, err := measure.Serve(c.Context, in.base, load.Longest(load.Scenario{Requests: reqs, Options: load.Options{Guards: in.guards}}), c.Duration("timeout"))
	if err != nil {
		return err
	}
	defer sv.Close()
	res, err := load.Capacity(c.Context, sv.Slots, in.workload, in.slos, o)
	if err != nil {
		return err
	}
	if err := decodeRoofline(&res, sv, reqs, sampler); err != nil {
		fmt.Fprintln(os.Stderr, "roofline:", err)
	}
	// The result is shown first: a file that fails now loses nothing.
	if err := report.WriteCapacity(os.Stdout, c.String("output"), res); err != nil {
		return err
	}
	if out != nil {
		if err := out.Append(res.Line(in.workload, provenance())); err != nil {
			return fmt.Errorf("%w: the result is above; rerun with another --out to keep it in a file", err)
		}
	}
	if c.Context.Err() != nil {
		judged := 0
		for _, p := range res.Trials {
			if !p.NotJudged {
				judged++
			}
		}
		return fmt.Errorf("%w: the %d probe(s) judged are above", errInterrupted, judged)
	}
	return nil
}

// decodeRoofline sets the deciding trial's decode against the hardware's
// ceiling (a probe of this class, or the GPU's datasheet): its aggregate
// decode rate is the sequences over the median inter-token latency, at the
// workload's mean prompt and output.
func decodeRoofline(res *load.CapacityResult, sv *measure.Served, reqs []load.Request, sampler *telemetry.Sampler) error {
	d := res.Deciding
	if d == nil || d.Summary.ITLMs.N == 0 || d.Summary.ITLMs.P50 <= 0 {
		return nil
	}
	p := sv.Base
	p.Parallel = cmp.Or(d.Concurrency, res.Slots)
	var tel *gpu.Window
	if sampler != nil {
		w := sampler.Window(d.Start, d.End)
		tel = &w
	}
	prompt, output := load.MeanLengths(reqs)
	ts := float64(p.Parallel) * 1000 / d.Summary.ITLMs.P50
	a, err := sv.Meta.Decode(p, measure.DescribeEnv(version), prompt, output, ts, tel)
	if err != nil {
		return err
	}
	res.Roofline = &a
	res.BoundBy += fmt.Sprintf("; its decode (%.1f t/s at %d sequences): %s, %s", ts, p.Parallel, a.Verdict, a.Why)
	return nil
}
