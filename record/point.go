package record

import (
	"strconv"

	"github.com/tokbench/tokbench/point"
)

// Point is the point the record's settings describe, read back as the
// planner filled them in (plan.Env.Fill) or llama-bench wrote them: its
// test sizes, shape, placement, threading and switches, in the form the
// settings table's Get reads (what llama-bench writes for a setting left
// at its default, "none" or "0x0", is the point's unset value). The
// sampling is the key's; the model and test are the record's own.
func (r *Record) Point() point.Point {
	p := point.Point{NPrompt: r.NPrompt, NGen: r.NGen, NDepth: r.NDepth, Parallel: r.NParallel, Shape: r.Shape,
		MainGPU: r.MainGPU, NoMmap: !r.UseMmap, FlashAttn: r.FlashAttnSetting(), Sampling: r.Key.Sampling, Reps: r.Reps,
		NoWarmup: !r.Warmup, Seed: r.Key.Seed, NoKVOffload: r.NoKVOffload}
	p.Split, _ = point.ParseSplitMode(r.SplitMode)
	p.NCPUMoE, p.Switches, p.Devices = r.NCPUMoE, r.Switches, r.DeviceSelect
	if d := string(r.Devices); p.Devices == "" && d != "auto" {
		p.Devices = d // llama-bench's
	}
	p.TensorSplit, p.Overrides, p.CPUMask = unset(r.TensorSplit, "0.00"), unset(r.TensorOverrides, "none"), unset(r.CPUMask, "0x0")
	p.CPUStrict, p.Prio = r.CPUStrict, r.Prio
	switch {
	case r.Poll < 0:
		p.Poll = point.NoPool
	case r.Poll != 50:
		p.Poll = strconv.Itoa(r.Poll)
	}
	return p
}

// unset is v, or "" where it is what llama-bench writes for unset.
func unset(v, written string) string {
	if v == written {
		return ""
	}
	return v
}
