package report

import (
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// Records with a decomposition get the roofline chart (their points and
// their kernels' under the bandwidth slope and compute roof), the
// stacked split of each step, and two more table columns.
func TestDecompositionCharts(t *testing.T) {
	pk := roofline.Peaks{Source: "probe", BWGBs: 50, ReadBWGBs: 45, TFLOPS: 0.3}
	var recs []record.Record
	for i, q := range []string{"q4_0", "q8_0"} {
		ks := []roofline.KernelTime{
			{Op: roofline.Op{Name: "mul_mat " + q + " 2048x8192 (ffn_gate,ffn_up)", Kind: roofline.OpMatMul, Count: 32, Bytes: 3e8, Flops: 1e9}, Ms: 14},
			{Op: roofline.Op{Name: "add", Kind: roofline.OpAdd, Count: 32, Bytes: 1e6, Flops: 1e5}, Ms: 0.1},
		}
		in := roofline.Inputs{Tokens: 32, Parallel: 1, UBatch: 512, WeightsBytes: 7e8 * float64(i+1), Params: 1.2e9, NLayer: 16, NEmbd: 2048,
			MeasuredTs: 28, Kernels: ks, StepMs: 35}
		a := roofline.Analyze(in, pk)
		recs = append(recs, record.Record{ModelID: "synth:llama-1b:" + q, Test: "tg32", Status: record.StatusOK, Roofline: &a, Kernels: ks,
			Settings: record.Settings{NGen: 32, NParallel: 1, Sampling: "none"}, Result: record.Result{AvgTs: 28}})
	}
	var b strings.Builder
	if err := Write(&b, "html", recs); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	wellFormed(t, page)
	for _, want := range []string{"Roofline: achieved GFLOP/s against arithmetic intensity", "Where a step&#39;s time goes",
		"software (outside the graph&#39;s nodes)", "kernels slower in the step than alone", "synth:llama-1b:q8_0 tg32: mul_mat q8_0 2048x8192", "kernel %", "sw ms/step"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Two records and two kernels (the add is under 5% of its step).
	if n := strings.Count(page, `r="4.5"`); n != 2 {
		t.Errorf("%d record points, want 2", n)
	}
	if n := strings.Count(page, `r="2.5"`); n != 2 {
		t.Errorf("%d kernel points, want 2", n)
	}
	var tb strings.Builder
	if err := wide(&tb, recs); err != nil || !strings.Contains(tb.String(), "40%") {
		t.Errorf("table: %v\n%s", err, tb.String())
	}
}

// A split that does not add up says so in every view: the table's limit
// and the line below it, the chart's label, the HTML's attention list.
func TestUnvouchedEverywhere(t *testing.T) {
	pk := roofline.Peaks{Source: "probe", BWGBs: 50, ReadBWGBs: 45, TFLOPS: 0.3}
	ks := []roofline.KernelTime{{Op: roofline.Op{Name: "mul_mat q4_0 2048x8192", Kind: roofline.OpMatMul, Count: 32, Bytes: 3e8, Flops: 1e9}, Ms: 50}}
	in := roofline.Inputs{Tokens: 32, Parallel: 1, UBatch: 512, WeightsBytes: 7e8, Params: 1.2e9, NLayer: 16, NEmbd: 2048,
		MeasuredTs: 28, Kernels: ks, StepMs: 35}
	a := roofline.Analyze(in, pk)
	recs := []record.Record{{ModelID: "synth:llama-1b:q4_0", Test: "tg32", Status: record.StatusOK, Roofline: &a, Kernels: ks,
		Settings: record.Settings{NGen: 32, NParallel: 1, Sampling: "none"}, Result: record.Result{AvgTs: 28}}}
	if a.Verdict != roofline.Unvouched {
		t.Fatalf("verdict %q", a.Verdict)
	}
	var tb, page strings.Builder
	if err := Table(&tb, &tb, recs, false); err != nil {
		t.Fatal(err)
	}
	if err := Write(&page, "html", recs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ where, text, want string }{
		{"table", tb.String(), "not vouched for: the kernels timed alone took 143% of the step"},
		{"table", tb.String(), "rerun on a quiet machine"},
		{"chart", page.String(), "tg32 (not vouched for)"},
		{"attention", page.String(), "<h2>Needs attention</h2>"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q:\n%s", c.where, c.want, c.text)
		}
	}
}
