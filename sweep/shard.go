package sweep

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/point"
)

// Shard is one share of a sweep's points: the Index-th (0-based) of Count.
type Shard struct{ Index, Count int }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads "I/N", or "auto": the index and count Slurm gives an
// array task (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT), or
// Kubernetes an Indexed Job's pod (JOB_COMPLETION_INDEX, with the count
// from shards).
func ParseShard(v string, shards int) (Shard, error) {
	var sh Shard
	if v == "auto" {
		idx, count := os.Getenv("SLURM_ARRAY_TASK_ID"), os.Getenv("SLURM_ARRAY_TASK_COUNT")
		if idx == "" {
			idx, count = os.Getenv("JOB_COMPLETION_INDEX"), ""
		}
		if count == "" && shards > 0 {
			count = strconv.Itoa(shards)
		}
		if idx == "" || count == "" {
			return sh, point.Inputf("--shard auto: no SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, nor JOB_COMPLETION_INDEX with --shards N, in the environment: give --shard I/N")
		}
		v = idx + "/" + count
	}
	i, n, ok := strings.Cut(v, "/")
	var err1, err2 error
	sh.Index, err1 = strconv.Atoi(strings.TrimSpace(i))
	sh.Count, err2 = strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil || sh.Count < 1 || sh.Count > 4096 || sh.Index < 0 || sh.Index >= sh.Count {
		return sh, point.Inputf("--shard %q: want I/N with 0 <= I < N <= 4096 (the index counts from 0, as Slurm's array and Kubernetes' completion index do)", v)
	}
	return sh, nil
}

// Partition gives each model of points a shard of n: a model's points (and
// the quantization or synthesis that makes it) stay in one shard, so no
// shard loads or makes what another does; models go largest first to the
// shard with the least estimated time so far (ties: the lowest index), by
// the planner's estimate of their points. The same points give the same
// partition on every machine.
func Partition(points []point.Point, refs []ModelRef, n int) (map[string]int, []time.Duration, error) {
	cost := map[string]time.Duration{}
	infos := map[string]modelPlan{}
	for _, r := range refs {
		mi, err := plannedModel(r)
		if err != nil {
			return nil, nil, err
		}
		infos[r.ID] = mi
	}
	for _, p := range points {
		cost[p.ModelID] += infos[p.ModelID].Time(p, false)
	}
	ids := make([]string, 0, len(cost))
	for id := range cost {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(cost[b], cost[a]), cmp.Compare(a, b)) })
	load := make([]time.Duration, n)
	out := map[string]int{}
	for _, id := range ids {
		best := 0
		for i := range load {
			if load[i] < load[best] {
				best = i
			}
		}
		out[id] = best
		load[best] += cost[id]
	}
	return out, load, nil
}

// plannedModel is what the estimates need of a model, before it is made:
// a given file's real sizes; a synthetic model's or a quantization's from
// the shape (preset, or the source file) at the type's usual bits per
// weight, whether or not this machine's cache has it already (every shard
// must compute the same partition).
func plannedModel(r ModelRef) (modelPlan, error) {
	switch {
	case r.Preset != "":
		s, err := preset.Lookup(r.Preset)
		if err != nil {
			return modelPlan{}, err
		}
		return modelPlan{Name: fmt.Sprintf("%s %s (planned)", s.Name, r.Type), File: plan.Planned(s, r.Type)}, nil
	case r.Source != "":
		src, err := fileModel(r.Source)
		if err != nil {
			return modelPlan{}, err
		}
		f := plan.File{Model: src.Model.AtType(r.Type), H: src.H}
		return modelPlan{Name: r.ID + " (planned)", File: f}, nil
	}
	return fileModel(r.Path)
}

// SpecFlags are the sweep flags that say what is measured (the others say
// how a run goes: --out, --resume, --shard ...): the inputs' and those of
// every setting a spec holds.
func SpecFlags() []string {
	out := []string{"model", "synth", "types", "quantize-from", "filter",
		"quality", "quality-text", "quality-tokens", "quality-ctx", "quality-top-k", "quality-cache-tail"}
	for _, st := range point.Settings {
		if st.Key == "" {
			continue
		}
		for _, f := range []string{st.Not, st.Flag} {
			if f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// GivenHash is the SHA-256 of a sweep as it was asked for: the spec file's
// bytes and the spec flags given ("name=value", in any order). Every
// record carries it, so that shards started differently are not merged;
// defaults that differ between machines (threads) do not change it.
func GivenHash(file []byte, flags []string) string {
	h := sha256.New()
	h.Write(file)
	sorted := slices.Clone(flags)
	slices.Sort(sorted)
	for _, f := range sorted {
		fmt.Fprintf(h, "\x00%s", f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Shares are the parts of n shards for --dry-run --shards N
// (report.WritePartition): each shard's models, points and estimated time.
func Shares(points []point.Point, refs []ModelRef, n int) ([]plan.Share, error) {
	of, load, err := Partition(points, refs, n)
	if err != nil {
		return nil, err
	}
	out := make([]plan.Share, n)
	for i := range out {
		out[i] = plan.Share{Index: i, Count: n, Est: load[i]}
	}
	for _, r := range refs {
		if i, ok := of[r.ID]; ok {
			out[i].Models = append(out[i].Models, r.ID)
		}
	}
	for _, p := range points {
		out[of[p.ModelID]].Points++
	}
	return out, nil
}
