package report

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// compactRecords are a pp and a tg test as run measures them: defaults
// but for the depth and the batch of the second.
func compactRecords() []record.Record {
	base := record.Record{Status: record.StatusOK, Machine: record.Machine{Backend: "CPU"},
		Model:    record.Model{ModelType: "llama 8B Q4_0", ModelSize: 4 << 30, ModelParams: 8e9},
		Settings: record.Settings{Shape: point.Shape{Threads: 2, NBatch: 2048, NUBatch: 512, TypeK: "f16", TypeV: "f16"}, FlashAttn: point.FlashOff, NParallel: 1, Poll: 50, UseMmap: true, Sampling: "none"}}
	base.BuildCommit, base.BuildNumber = "ec98e2002", 7437
	pp, tg := base, base
	pp.Test, pp.NPrompt, pp.AvgTs, pp.StddevTs = "pp512", 512, 1234.5, 10
	pp.Roofline = &roofline.Analysis{CeilingTs: 2000, Efficiency: 0.617, Verdict: roofline.KernelBound}
	tg.Test, tg.NGen, tg.NDepth, tg.AvgTs, tg.StddevTs = "tg128@d512", 128, 512, 20.25, 0.5
	return []record.Record{pp, tg}
}

// The default table is llama-bench's columns, its test names, then eff
// and limit; it fits 120 columns, and says nothing below when nothing
// needs attention.
func TestCompactTable(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "table", compactRecords()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	head := strings.Fields(lines[0])
	if strings.Join(head, " ") != "model size params backend threads test t/s eff limit" || len(lines) != 5 || lines[3] != "" ||
		!strings.HasPrefix(lines[4], "limit: kernel-bound: the kernels are below") {
		t.Errorf("table, then the legend of its limits:\n%s", out)
	}
	for _, want := range []string{"pp512", "tg128 @ d512", "1234.50 ± 10.00", "62%", "kernel-bound"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, l := range lines {
		if len([]rune(l)) > 120 {
			t.Errorf("%d columns: %s", len([]rune(l)), l)
		}
	}
	// A parameter that varies gets its column; a test that needs
	// attention gets a note wrapped to 119 columns.
	recs := compactRecords()
	recs[1].NBatch = 256
	recs[1].Noise = &host.Noise{Warnings: []string{strings.Repeat("the machine was busy ", 20), "and more"}}
	b.Reset()
	Write(&b, "md", recs)
	out = b.String()
	if !strings.Contains(out, "| n_batch |") || !strings.Contains(out, "|     256 |") || !strings.Contains(out, "20.25 ± 0.50 (!)") ||
		!strings.Contains(out, "\n\nbuild: ec98e2002 (7437)\n") {
		t.Errorf("md:\n%s", out)
	}
	note := out[strings.Index(out, "(!) llama"):]
	for _, line := range strings.Split(strings.TrimSpace(note), "\n") {
		if len([]rune(line)) > 119 {
			t.Errorf("attention line of %d columns: %q", len([]rune(line)), line)
		}
	}
	if got := strings.Join(strings.Fields(note), " "); !strings.Contains(got, strings.TrimSpace(strings.Repeat("the machine was busy ", 20))+" (and 1 more: --wide)") {
		t.Errorf("attention note: %q", note)
	}
	// --wide keeps every column.
	b.Reset()
	WriteWith(&b, "table", recs, Options{Wide: true})
	if !strings.Contains(b.String(), "t/s/seq") {
		t.Errorf("wide:\n%s", b.String())
	}
}

// A llama-bench file with tests of several sequences says so, and
// --tag-parallel names them in model_type.
func TestParallelTagged(t *testing.T) {
	recs := compactRecords()
	recs[1].NParallel = 4
	if note := ParallelNote("jsonl", recs, Options{}); !strings.Contains(note, "1 test(s)") || !strings.Contains(note, "--tag-parallel") {
		t.Errorf("note %q", note)
	}
	if ParallelNote("table", recs, Options{}) != "" || ParallelNote("csv", recs, Options{TagParallel: true}) != "" {
		t.Error("a note where none is due")
	}
	var b bytes.Buffer
	WriteWith(&b, "csv", recs, Options{TagParallel: true})
	if !strings.Contains(b.String(), "llama 8B Q4_0 np 4") || strings.Count(b.String(), "np 4") != 1 {
		t.Errorf("csv:\n%s", b.String())
	}
}

// Records of one setting are shown pp first, then tg, as llama-bench
// shows them, whatever order a sweep measured them in.
func TestGroupedShowsPPFirst(t *testing.T) {
	recs := compactRecords()
	recs[1].NDepth = 0
	recs[0], recs[1] = recs[1], recs[0] // tg, then pp
	for i := range recs {
		recs[i].Key = point.Key{Model: "m", NPrompt: recs[i].NPrompt, NGen: recs[i].NGen, Parallel: 1}
	}
	if got := Grouped(recs); !got[0].IsPrompt() || got[1].IsPrompt() {
		t.Errorf("order: %s, %s", got[0].Test, got[1].Test)
	}
}

// A two-test run of many settings keeps within 120 columns: packed
// closer, then with the settings both tests share said above the table.
func TestTableFits120(t *testing.T) {
	recs := compactRecords()
	for i := range recs {
		r := &recs[i]
		r.ModelType = "qwen3moe 30B.A3B Q4_K - Medium"
		r.NBatch, r.NUBatch, r.TypeK, r.TypeV, r.FlashAttn, r.NCPUMoE, r.Poll, r.CPUMask = 64, 32, "q8_0", "q8_0", 1, 12, 0, "0xFFFF"
		r.NoKVOffload, r.TensorOverrides = true, "blk\\.[0-9]+\\.ffn_.*_exps=CPU"
		r.Roofline = &roofline.Analysis{CeilingTs: 2000, Efficiency: 0.5, Verdict: roofline.Unvouched}
	}
	var b bytes.Buffer
	if err := Write(&b, "table", recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > 120 {
			t.Errorf("%d columns: %s", len([]rune(l)), l)
		}
	}
	if !strings.HasPrefix(out, "every test: ") || !strings.Contains(out, "type_k q8_0") || !strings.Contains(out, "not vouched for: the kernels timed alone") {
		t.Errorf("table:\n%s", out)
	}
}

// Grouped orders as a stable sort by the group's first place, the
// settings' first place and the test's kind would: checked against one
// on shuffled records of several models, settings and kinds.
func TestGroupedIsTheStableOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []record.Record
	for i := range 300 {
		r := record.Record{ModelID: fmt.Sprintf("m%d", rng.IntN(4)), Test: fmt.Sprint(i)}
		r.Key.Threads = rng.IntN(3)
		switch rng.IntN(3) {
		case 0:
			r.NPrompt = 8
		case 1:
			r.NGen = 8
		default:
			r.NPrompt, r.NGen = 8, 8
		}
		recs = append(recs, r)
	}
	want := slices.Clone(recs)
	first, firstSet := map[string]int{}, map[string]int{}
	for i := range want {
		if _, ok := first[group(&want[i])]; !ok {
			first[group(&want[i])] = i
		}
		if _, ok := firstSet[testSettings(&want[i])]; !ok {
			firstSet[testSettings(&want[i])] = i
		}
	}
	kind := func(r *record.Record) int {
		if r.IsCombined() {
			return 2
		}
		if r.IsPrompt() {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(want, func(a, b record.Record) int {
		return cmp.Or(first[group(&a)]-first[group(&b)], firstSet[testSettings(&a)]-firstSet[testSettings(&b)], kind(&a)-kind(&b))
	})
	got := Grouped(recs)
	for i := range want {
		if got[i].Test != want[i].Test {
			t.Fatalf("place %d: test %s, want %s", i, got[i].Test, want[i].Test)
		}
	}
}
