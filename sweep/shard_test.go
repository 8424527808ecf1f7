package sweep

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"0/1": {0, 1}, "3/4": {3, 4}, " 2 / 16": {2, 16}} {
		if got, err := ParseShard(in, 0); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"4/4", "-1/4", "1", "a/b", "0/0", "1/5000"} {
		if _, err := ParseShard(bad, 0); err == nil || !strings.Contains(err.Error(), "I/N") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	t.Setenv("SLURM_ARRAY_TASK_ID", "2")
	t.Setenv("SLURM_ARRAY_TASK_COUNT", "5")
	if got, err := ParseShard("auto", 0); err != nil || got != (Shard{2, 5}) {
		t.Errorf("Slurm: %v %v", got, err)
	}
	t.Setenv("SLURM_ARRAY_TASK_ID", "")
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	if got, err := ParseShard("auto", 3); err != nil || got != (Shard{1, 3}) {
		t.Errorf("Kubernetes: %v %v", got, err)
	}
	if _, err := ParseShard("auto", 0); err == nil || !strings.Contains(err.Error(), "--shards") {
		t.Errorf("Kubernetes without --shards: %v", err)
	}
}

// The partition of a grid of 8 quantizations of one shape and 2 of
// another: every point in one shard, a model's points together, the same
// answer every time, and (for N up to half the models) no shard more than
// 25% above the mean.
func TestPartition(t *testing.T) {
	s := DefaultSpec(4)
	s.Synth.Values = []string{"llama-1b"}
	s.Types.Values = []string{"f16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k"}
	s.Values["n_depth"] = []string{"0", "1024", "4096"}
	refs, err := Refs(s, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	s2 := DefaultSpec(4)
	s2.Synth.Values, s2.Types.Values = []string{"smollm-135m"}, []string{"q8_0", "q4_0"}
	more, _ := Refs(s2, t.TempDir(), false)
	refs = append(refs, more...)
	points, _, err := s.Points(refs)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 16; n++ {
		of, load, err := Partition(points, refs, n)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := Partition(slices.Clone(points), refs, n)
		count := make([]int, n)
		for _, p := range points {
			i, ok := of[p.ModelID]
			if !ok || i < 0 || i >= n || again[p.ModelID] != i {
				t.Fatalf("n=%d: %s in shard %d (%v), then %d", n, p.ModelID, i, ok, again[p.ModelID])
			}
			count[i]++
		}
		var sum time.Duration
		for _, l := range load {
			sum += l
		}
		if mean := sum / time.Duration(n); n <= len(refs)/2 && slices.Max(load) > mean*5/4 {
			t.Errorf("n=%d: longest shard %s, mean %s: loads %v", n, slices.Max(load), mean, load)
		}
		if total := func() (t int) {
			for _, c := range count {
				t += c
			}
			return
		}(); total != len(points) {
			t.Errorf("n=%d: %d points in shards of %d", n, total, len(points))
		}
	}
}
