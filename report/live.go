package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/stats"
)

// LoadFormats are the formats load and capacity print their results in.
var LoadFormats = []string{"table", "json"}

// WriteLoadRuns writes the runs of one load test as `tokbench load` shows
// them: as JSON, or a block per run (figures, latency percentiles, SLOs)
// and, with several scenarios, the legitimate users' figures side by side.
func WriteLoadRuns(w io.Writer, format string, wl load.Workload, runs []load.Result) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"workload": wl, "scenarios": runs})
	}
	for _, r := range runs {
		if err := loadRun(w, wl, r); err != nil {
			return err
		}
	}
	if len(runs) > 1 {
		return abuseTable(w, runs)
	}
	return nil
}

func loadRun(out io.Writer, wl load.Workload, r load.Result) error {
	loop := fmt.Sprintf("closed loop, %d clients", r.Clients)
	if r.Loop == load.OpenLoop {
		loop = fmt.Sprintf("open loop, %g/s", r.Rate)
	}
	s := r.Summary
	fmt.Fprintf(out, "== %s: workload %s (%s, %d slots): %d requests, %d completed, %d rejected in %.1fs\n",
		r.Scenario, wl.Name, loop, r.Slots, s.Requests, s.Completed, s.Rejected, s.Seconds)
	fmt.Fprintf(out, "throughput %.2f req/s, %.1f output t/s; goodput %.2f req/s (%.0f%% of requests met every SLO)\n",
		s.RequestsPerS, s.OutputTps, s.Goodput, 100*s.GoodFraction)
	if s.PrefixTokens > 0 {
		fmt.Fprintf(out, "conversation history: %.0f%% of prompt tokens; %.0f%% of it reused from the KV cache\n",
			100*s.PrefixShare, 100*s.PrefixReused)
	}
	if ls := r.LocalScore; ls != nil {
		fmt.Fprintf(out, "LocalScore %.0f (prompt %.1f t/s, generation %.1f t/s, TTFT %.0f ms; 10 x cube root of pp t/s x tg t/s x 1000 / TTFT ms)", ls.Score, ls.PromptTs, ls.GenTs, ls.TTFTMs)
		if ls.Note != "" {
			fmt.Fprintf(out, ": %s", ls.Note)
		}
		fmt.Fprintln(out)
	}
	if a := r.Abusive; a != nil {
		fmt.Fprintf(out, "abusive requests (not counted above): %d sent, %d completed, %d rejected, %.1f output t/s\n",
			a.Requests, a.Completed, a.Rejected, a.OutputTps)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tp50\tp90\tp95\tp99\tmax\t")
	for _, row := range []struct {
		name string
		p    stats.Percentiles
	}{{"queue ms", s.QueueMs}, {"ttft ms", s.TTFTMs}, {"itl ms", s.ITLMs}, {"e2e ms", s.E2EMs}, {"t/s per user", s.PerUserTs}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", row.name, row.p.P50, row.p.P90, row.p.P95, row.p.P99, row.p.Max)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var names []string
	for k := range s.SLOsMet {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		verdict := "met"
		if !s.SLOsMet[k] {
			verdict = "MISSED"
		}
		fmt.Fprintf(out, "SLO %s: %s\n", k, verdict)
	}
	_, err := fmt.Fprintf(out, "scheduler overhead: %.2f%% of the wall time outside llama_decode\n\n", s.SchedulerPct)
	return err
}

// abuseTable sets the legitimate users' figures of the scenarios side by
// side: what the abuse cost them, and what the guards gave back.
func abuseTable(out io.Writer, runs []load.Result) error {
	g := grid{title: "legitimate users:", head: []string{"scenario", "completed", "t/s per user p50", "itl p50 ms", "itl p99 ms",
		"ttft p50 ms", "ttft p99 ms", "goodput/s", "abusive ok/rejected"}}
	for _, r := range runs {
		s, abused := r.Summary, "-"
		if a := r.Abusive; a != nil {
			abused = fmt.Sprintf("%d/%d", a.Completed, a.Rejected)
		}
		g.rows = append(g.rows, []string{r.Scenario, fmt.Sprint(s.Completed), f1(s.PerUserTs.P50), f1(s.ITLMs.P50), f1(s.ITLMs.P99),
			f1(s.TTFTMs.P50), f1(s.TTFTMs.P99), fmt.Sprintf("%.2f", s.Goodput), abused})
	}
	if err := g.table(out); err != nil {
		return err
	}
	if gd := runs[len(runs)-1].Guards; gd.Any() {
		fmt.Fprintf(out, "guards: max prompt %d, max output %d, client budget %d tokens/min, fair %v\n", gd.MaxPrompt, gd.MaxOutput, gd.ClientBudget, gd.Fair)
	}
	return nil
}

// WriteCapacity writes a capacity search as `tokbench capacity` shows it:
// as JSON, or a row per trial, the sustainable load and what bound it.
func WriteCapacity(w io.Writer, format string, res load.CapacityResult) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	g := grid{head: []string{"load", "req/s", "output t/s", "ttft p99 ms", "itl p99 ms", "t/s per user", "result"}}
	for _, p := range res.Trials {
		s := p.Summary
		g.rows = append(g.rows, []string{probeAt(p), fmt.Sprintf("%.2f", s.RequestsPerS), f1(s.OutputTps), f1(s.TTFTMs.P99), f1(s.ITLMs.P99), f1(s.PerUserTs.P50), trialResult(p)})
	}
	if err := g.rowsOnly(w); err != nil {
		return err
	}
	sustained := fmt.Sprintf("%d concurrent generations", res.Concurrency)
	if res.Slots > 0 {
		sustained = fmt.Sprintf("%.3g requests/s on %d slots", res.Rate, res.Slots)
	}
	if res.Stopped != "" && !strings.HasPrefix(res.Stopped, "saturated") {
		sustained = "at least " + sustained + " (the search stopped: " + res.Stopped + ")"
	}
	_, err := fmt.Fprintf(w, "\nsustainable: %s, %.1f t/s per user (median), %.1f output t/s in all\nbound by: %s\n",
		sustained, res.PerUserTs, res.OutputTps, res.BoundBy)
	return err
}

// TrialProgress is a capacity probe's progress line (stderr): its load,
// throughput, p99s, verdict, and the search's outlook.
func TrialProgress(p load.Trial, at load.Outlook) string {
	s := p.Summary
	verdict := "pass"
	if !p.Pass {
		verdict = "FAIL: " + p.Why
	}
	if p.Cut != "" {
		verdict += " (" + p.Cut + ")"
	}
	line := fmt.Sprintf("capacity: probe %d, %s: %.1f output t/s, ttft p99 %s ms, itl p99 %s ms, %d of %d requests: %s | %s so far",
		at.Trials, p.Load(), s.OutputTps, f1(s.TTFTMs.P99), f1(s.ITLMs.P99), s.Completed, s.Requests, verdict, load.RoundDuration(at.Elapsed))
	if at.Left == 0 {
		return line + ", the search converges"
	}
	return line + fmt.Sprintf(", at most %d probe(s) left, ETA %s at the last probe's pace", at.Left, load.RoundDuration(at.ETA()))
}

// trialResult is a probe's verdict in a table: pass, the SLOs missed,
// and whether it was cut short.
func trialResult(p load.Trial) string {
	switch {
	case p.NotJudged:
		return p.Why
	case p.Pass:
		return "pass"
	case p.Cut != "":
		return p.Why + " (certain early: " + p.Cut + ")"
	}
	return p.Why
}
