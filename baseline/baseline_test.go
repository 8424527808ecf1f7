package baseline

import (
	"strings"
	"testing"

	"github.com/tokbench/tokbench/point"

	"github.com/tokbench/tokbench/record"
)

func recs(cpu string, scale float64, noise []float64) []record.Record {
	var out []record.Record
	for i, test := range []string{"pp512", "tg128"} {
		base := []float64{1000, 1010, 990, 1005, 995}
		if i == 1 {
			base = []float64{50, 50.5, 49.5, 50.2, 49.8}
		}
		s := make([]float64, len(base))
		for j, v := range base {
			s[j] = v * scale
			if noise != nil {
				s[j] *= 1 + noise[j]
			}
		}
		out = append(out, record.Record{Key: point.Key{Model: "/models/m.gguf", NPrompt: 512 * (1 - i), NGen: 128 * i}, Test: test, Status: record.StatusOK, Machine: record.Machine{Backend: "CPU", CPUInfo: cpu}, Model: record.Model{ModelFile: "/models/m.gguf"}, Settings: record.Settings{NThreads: 8}, Result: record.Result{SamplesTs: s}})
	}
	return out
}

func TestBaselineCompare(t *testing.T) {
	f, err := Merge(nil, recs("Xeon", 1, nil), 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if f.Class != "cpu-xeon-8t" || len(f.Points) != 2 {
		t.Fatalf("baseline %+v", f)
	}
	p := f.Points[point.Key{Model: "m.gguf", NPrompt: 512}.String()]
	if p == nil || p.MedianTs != 1000 || p.Low > 950 || p.High < 1050 {
		t.Fatalf("point %+v", p)
	}
	check := func(name string, rs []record.Record, wantRegress bool) {
		rows, err := Compare(f, rs, 0.05, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		regress := false
		for _, r := range rows {
			regress = regress || r.Regression
		}
		if regress != wantRegress {
			t.Errorf("%s: rows %+v", name, rows)
		}
	}
	check("same", recs("Xeon", 1, nil), false)
	check("20% slower", recs("Xeon", 0.8, nil), true)
	check("2% noise", recs("Xeon", 1, []float64{0.02, -0.02, 0.015, -0.01, 0.02}), false)
	check("20% faster", recs("Xeon", 1.2, nil), false)
	if _, err := Compare(f, recs("EPYC", 1, nil), 0.05, 0.05); err == nil || !strings.Contains(err.Error(), "class") {
		t.Errorf("class mismatch: %v", err)
	}
	if _, err := Merge(f, recs("EPYC", 1, nil), 0.05); err == nil {
		t.Error("merged another class")
	}
	f2, _ := Merge(f, recs("Xeon", 1, nil), 0.05)
	if n := len(f2.Points[point.Key{Model: "m.gguf", NGen: 128}.String()].SamplesTs); n != 10 {
		t.Errorf("merge kept %d samples, want 10", n)
	}
}
