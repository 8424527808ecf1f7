package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
)

// WriteGrid writes a sweep's plan, as sweep --dry-run shows it: each
// point, what cannot fit, and the counts and estimated time.
func WriteGrid(w io.Writer, g *plan.Grid) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// The settings that vary besides the columns' (-nkvo 0,1, -mmp 0,1)
	// in one more column, so that no two rows look alike.
	others := make([]string, len(g.Points))
	if len(g.Points) > 0 {
		for i, v := range point.Varying(g.Points) {
			for _, s := range strings.Fields(v) {
				if k, _, _ := strings.Cut(s, "="); !slices.Contains([]string{"b", "ub", "t", "ngl", "fa", "ctk", "ctv", "sampling"}, k) {
					others[i] = strings.TrimSpace(others[i] + " " + s)
				}
			}
		}
	}
	extra := slices.ContainsFunc(others, func(s string) bool { return s != "" })
	head := "#\tmodel\ttest\tb/ub\tthreads\tngl\tfa\tkv k/v\tsampling\tmemory GiB\test time"
	if extra {
		head += "\tsettings"
	}
	fmt.Fprintln(tw, head)
	models, contexts := map[point.ModelKey]bool{}, map[point.ContextKey]bool{}
	for i, p := range g.Points {
		models[p.ModelKey()], contexts[p.ContextKey()] = true, true
		m := g.Memory[p.Key()]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%d\t%d\t%s\t%s/%s\t%s\t%.2f\t%s", i+1, p.ModelID, p.TestName(), p.NBatch, p.UBatch(),
			p.Threads, p.NGPULayers, p.FlashAttn, p.TypeK, p.TypeV, p.SamplingName(), float64(m.Total())/(1<<30), plan.Rough(g.Est[p.Key()]))
		if extra {
			fmt.Fprintf(tw, "\t%s", cmp.Or(others[i], "-"))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, r := range g.Skipped {
		fmt.Fprintf(w, "skip %s %s: %s\n", r.ModelID, r.Test, r.Reason)
	}
	fmt.Fprintf(w, "\n%d points to measure (%d models, %d contexts), %d skipped (cannot fit), %d already recorded, %d dropped by filters\n",
		len(g.Points), len(models), len(contexts), len(g.Skipped), g.Done, g.Dropped)
	_, err := fmt.Fprintf(w, "estimated time: %s (rough: assumes %.0f GB/s and %.0f GFLOP/s per CPU thread, or 1 TB/s and 50 TFLOP/s on a GPU)\n",
		plan.Rough(g.Total()), plan.CPUBWPerThread/1e9, plan.CPUFlopPerThread/1e9)
	return err
}

// WritePartition writes the shares of a sweep's shards, as sweep
// --dry-run --shards N shows them: each shard's points, time and models.
func WritePartition(w io.Writer, shares []plan.Share) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\tpoints\test time\tmodels")
	var total time.Duration
	points, models, loads := 0, 0, make([]time.Duration, len(shares))
	for i, s := range shares {
		total, points, models, loads[i] = total+s.Est, points+s.Points, models+len(s.Models), s.Est
		fmt.Fprintf(tw, "%d/%d\t%d\t%s\t%s\n", s.Index, s.Count, s.Points, plan.Rough(s.Est), strings.Join(s.Models, ", "))
	}
	tw.Flush()
	_, err := fmt.Fprintf(w, "\n%d points of %d models in %d shards; the longest shard is %s of the mean's %s (rough estimates: see --dry-run)\n",
		points, models, len(shares), plan.Rough(slices.Max(loads)), plan.Rough(total/time.Duration(len(shares))))
	return err
}

// WriteEstimates writes run --dry-run's estimates: a table, then why
// each test that would be refused would be; or (json) the estimates.
func WriteEstimates(w io.Writer, format string, rows []plan.TestEstimate) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	gib, mib := func(b int64) float64 { return float64(b) / (1 << 30) }, func(b float64) float64 { return b / (1 << 20) }
	// Columns only where they say something: the settings that tell the
	// tests apart, a mixture's experts; the ceilings' source below the
	// table, once each (the table fits 120 columns).
	settings := slices.ContainsFunc(rows, func(r plan.TestEstimate) bool { return r.Settings != "" })
	experts := slices.ContainsFunc(rows, func(r plan.TestEstimate) bool { return r.Experts != nil })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"model"}
	if settings {
		head = append(head, "settings")
	}
	head = append(head, "test", "memory GiB (w+KV+c)", "fits", "MiB/step")
	if experts {
		head = append(head, "ncmoe", "experts MiB (per layer)")
	}
	fmt.Fprintln(tw, strings.Join(append(head, "GFLOP/step", "ceiling t/s", "bound"), "\t"))
	var peaks []string
	for _, r := range rows {
		m, a := r.Memory, r.Roofline
		cells := []string{filepath.Base(r.Model)} // a file by its name: its folder is in -o json
		if settings {
			cells = append(cells, cmp.Or(r.Settings, "-"))
		}
		fits := map[bool]string{true: "yes", false: "no"}[r.Fits]
		cells = append(cells, r.Test, fmt.Sprintf("%.2f (%.2f+%.2f+%.2f)", gib(m.Total()), gib(m.Weights), gib(m.KV), gib(m.Compute)), fits, fmt.Sprintf("%.1f", mib(a.BytesPerStep)))
		if experts {
			x := "-"
			if r.Experts != nil {
				x = fmt.Sprintf("%.1f (%.1f of %d)", mib(a.ExpertBytesPerStep), r.Experts.Uniform, r.Experts.Count)
			}
			cells = append(cells, fmt.Sprint(r.NCPUMoE), x)
		}
		ceiling, bound, pk := "-", "-", "none known: run tokbench probe"
		if a.CeilingTs > 0 {
			ceiling, bound = fmt.Sprintf("%.1f", a.CeilingTs), a.Bound
			pk = fmt.Sprintf("%s %.0f GB/s, %.2f TFLOP/s", a.PeakSource, a.PeakBWGBs, a.PeakTFLOPS)
			if a.HostBWGBs > 0 {
				pk += fmt.Sprintf("; experts from host memory at %.0f GB/s", a.HostBWGBs)
			}
		}
		if pk = fmt.Sprintf("t=%d: %s", r.Threads, pk); !slices.Contains(peaks, pk) {
			peaks = append(peaks, pk)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, fmt.Sprintf("%.1f", a.FlopsPerStep/1e9), ceiling, bound), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(peaks) > 0 {
		fmt.Fprintf(w, "ceilings: %s\n", strings.Join(peaks, "; "))
	}
	for _, r := range rows {
		if !r.Fits {
			if _, err := fmt.Fprintf(w, "would be refused: %s %s: %s\n", r.Model, r.Test, r.Refused); err != nil {
				return err
			}
		}
	}
	return nil
}
