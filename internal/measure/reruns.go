package measure

import (
	"fmt"
	"os"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/rerun"
	"github.com/tokbench/tokbench/record"
)

// coverReruns widens a measured record's interval to cover a rerun in
// another process (rerun.History), and keeps this process's mean for the
// next: not a test measured while other processes ran or the hypervisor
// took the CPU, whose mean says what the machine did, not the test.
func (e *Executor) coverReruns(r *record.Record) {
	if !r.OK() || r.AvgTs <= 0 || len(r.SamplesTs) == 0 {
		return
	}
	class := r.Class()
	h := e.reruns[class]
	if h == nil {
		h = rerun.Open(e.Env.CacheDir, class)
		if e.reruns == nil {
			e.reruns = map[string]*rerun.History{}
		}
		e.reruns[class] = h
	}
	id := rerunID(r)
	n := float64(len(r.SamplesTs))
	run := rerun.Run{Mean: r.AvgTs, VarMean: r.StddevTs * r.StddevTs / n, CV: r.CV}
	cv, basis := h.Spread(id, run)
	r.CoverReruns(cv, basis)
	if nz := r.Noise; nz != nil && (nz.OtherCPUPct > host.MaxOtherCPUPct || nz.StealPct > host.MaxStealPct) {
		return
	}
	if err := h.Add(id, run); err != nil {
		fmt.Fprintln(os.Stderr, "tokbench: keeping the run for later intervals:", err)
	}
}

// rerunID names a test the same in every process that runs it: its
// settings but not how many repetitions or the file's path, the model's
// content and what ran it.
func rerunID(r *record.Record) string {
	k := r.Key
	k.Reps = 0
	if r.ModelSHA256 != "" {
		k.Model = ""
	}
	return fmt.Sprintf("%s|%s|%s|%s|%s", k.String(), r.ModelSHA256, r.BuildCommit, r.Tool, r.Backend)
}
