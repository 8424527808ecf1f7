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
		"software (outside the kernels)", "synth:llama-1b:q8_0 tg32: mul_mat q8_0 2048x8192", "kernel %", "sw ms/step"} {
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
