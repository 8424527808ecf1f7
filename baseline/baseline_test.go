package baseline

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/gpu"
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
		r := record.Record{Key: point.Key{Model: "/models/m.gguf", NPrompt: 512 * (1 - i), NGen: 128 * i, Reps: 5}, Test: test, Status: record.StatusOK}
		r.Backend, r.CPUInfo, r.HostName = "CPU", cpu, "box-1"
		r.ModelFile, r.ModelParams, r.ModelFileType, r.ModelSHA256 = "/models/m.gguf", 8e9, "q4_0", "5eed"
		r.Threads, r.NPrompt, r.NGen, r.SamplesTs = 8, 512*(1-i), 128*i, s
		out = append(out, r)
	}
	return out
}

func TestBaselineCompare(t *testing.T) {
	f, err := merge(nil, recs("Xeon", 1, nil), 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if f.Class != "cpu-xeon" || len(f.Points) != 2 {
		t.Fatalf("baseline %+v", f)
	}
	p := f.Points[identity(&recs("Xeon", 1, nil)[0])]
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
	if _, err := merge(f, recs("EPYC", 1, nil), 0.05); err == nil {
		t.Error("merged another class")
	}
	f2, _ := merge(f, recs("Xeon", 1, nil), 0.05)
	if p := f2.Points[identity(&recs("Xeon", 1, nil)[1])]; len(p.SamplesTs) != 10 || len(p.Runs) != 2 || p.Spread != withinRuns {
		t.Errorf("merge kept %d samples of %d runs (%s), want 10 of 2", len(p.SamplesTs), len(p.Runs), p.Spread)
	}
}

// A point is what it measures: the same file under another path and name
// (and measured with other repetitions) matches; another file does not.
func TestIdentityTravels(t *testing.T) {
	f, _ := merge(nil, recs("Xeon", 1, nil), 0.05)
	moved := recs("Xeon", 1, nil)
	for i := range moved {
		moved[i].ModelFile, moved[i].ModelID, moved[i].Key.Reps, moved[i].HostName = "/elsewhere/renamed.gguf", "my-model", 7, "box-2"
	}
	rows, _ := Compare(f, moved, 0.05, 0.05)
	if Matched(rows) != 2 {
		t.Errorf("moved and renamed: %+v", rows)
	}
	other := recs("Xeon", 1, nil)
	other[0].ModelSHA256 = "f1ipped"
	rows, _ = Compare(f, other, 0.05, 0.05)
	if Matched(rows) != 1 || rows[0].Verdict != NoBaseline && rows[1].Verdict != NoBaseline {
		t.Errorf("another file: %+v", rows)
	}
	// Pooled: three runs make the range of the runs' medians, from both
	// machines.
	f, _ = merge(f, moved, 0.05)
	f, _ = merge(f, recs("Xeon", 1.01, nil), 0.05)
	p := f.Points[identity(&moved[1])]
	if len(p.Runs) != 3 || p.Machines() != 2 || p.Spread != betweenRuns || p.MedianTs != 50 {
		t.Errorf("pooled point %+v", p)
	}
}

// A baseline kept when a CPU's class named its thread count (one file
// per count) is read as its class's, every point kept; another class
// whose name begins alike is not taken in.
func TestLoadPerThreadFiles(t *testing.T) {
	dir := t.TempDir()
	for i, n := range []int{1, 8} {
		f, err := merge(nil, recs("Xeon", float64(i+1), nil), 0.05)
		if err != nil {
			t.Fatal(err)
		}
		f.Class = fmt.Sprintf("cpu-xeon-%dt", n)
		pts := map[string]*Point{}
		for k, p := range f.Points {
			pts[strings.Replace(k, "|t=8|", fmt.Sprintf("|t=%d|", n), 1)] = p
		}
		f.Points = pts
		if _, err := f.Save(dir); err != nil {
			t.Fatal(err)
		}
	}
	other := NewFile("cpu-xeon-max-8t")
	other.Points["x"] = &Point{}
	other.Save(dir)
	f, err := Load(dir, "cpu-xeon")
	if err != nil || f == nil || f.Class != "cpu-xeon" || len(f.Points) != 4 {
		t.Fatalf("%+v %v", f, err)
	}
	if p := f.Points[identity(&recs("Xeon", 1, nil)[0])]; p == nil || p.MedianTs != 2000 {
		t.Errorf("the 8-thread point: %+v", p)
	}
}

// merge adds records to a baseline (nil: a new one) as baseline create
// does, refusing records of another class.
func merge(f *File, recs []record.Record, minEffect float64) (*File, error) {
	class, err := classOf(recs)
	if err != nil {
		return nil, err
	}
	if f == nil {
		f = NewFile(class)
	}
	if f.Class != class {
		return nil, fmt.Errorf("results are of class %s, the baseline of %s", class, f.Class)
	}
	for i := range recs {
		f.Add(&recs[i], minEffect)
	}
	f.Settle()
	f.Updated = time.Now().UTC().Truncate(time.Second)
	return f, nil
}

// A point's history is bounded in memory too, not only in its file: a
// thousand runs merged into it leave the newest maxRuns runs and
// maxSamples samples, in arrays of no more room than one more each.
func TestHistoryBounded(t *testing.T) {
	f := NewFile("cpu-x")
	for i := range 1000 {
		r := recs("X", 1, nil)[0]
		r.HostName, r.SamplesTs = fmt.Sprintf("node-%d", i%7), []float64{float64(i), float64(i) + 1}
		f.Add(&r, 0.05)
	}
	for _, p := range f.Points {
		if len(p.Runs) != maxRuns || cap(p.Runs) > maxRuns+1 || len(p.SamplesTs) != maxSamples || cap(p.SamplesTs) > maxSamples+2 ||
			p.Runs[maxRuns-1].MedianTs != 999.5 || p.Machines() != 7 {
			t.Errorf("%d runs in room for %d, %d samples in room for %d; newest median %v, %d machines",
				len(p.Runs), cap(p.Runs), len(p.SamplesTs), cap(p.SamplesTs), p.Runs[len(p.Runs)-1].MedianTs, p.Machines())
		}
	}
}

// Results of another build than the baseline's say how it differs: a
// commit, a version, or the same commit built with other features (a
// baseline that kept none differs from any build that has them); a
// commit's 9 digits and 8 name one build.
func TestBuildChanged(t *testing.T) {
	r := record.Record{Status: record.StatusOK}
	r.BuildCommit, r.OllamaVersion, r.Tool, r.CPUFeatures = "ec98e200", "v0.17.4", "tokbench 0.3.0", "AVX2 LLAMAFILE OPENMP REPACK"
	f := NewFile("cpu-x")
	f.setSoftware(softwareOf(&r))
	if c := BuildChanged(f, []record.Record{r}); c != "" {
		t.Errorf("the same build: %s", c)
	}
	nine := r
	nine.BuildCommit = "ec98e2002"
	if c := BuildChanged(f, []record.Record{nine}); c != "" {
		t.Errorf("9 digits of the same commit: %s", c)
	}
	for name, edit := range map[string]func(*record.Record){
		"cpu_features": func(r *record.Record) { r.CPUFeatures = "AVX2 LLAMAFILE" },
		"tokbench":     func(r *record.Record) { r.Tool = "tokbench 0.2.0" },
		"llama.cpp":    func(r *record.Record) { r.BuildCommit = "deadbeef" },
	} {
		o := r
		edit(&o)
		if c := BuildChanged(f, []record.Record{o}); !strings.Contains(c, name) {
			t.Errorf("%s changed: %q", name, c)
		}
	}
	old := NewFile("cpu-x")
	old.Software = map[string]string{"llama.cpp": "ec98e200", "ollama": "v0.17.4", "tokbench": "tokbench 0.3.0"}
	if c := BuildChanged(old, []record.Record{r}); !strings.Contains(c, "cpu_features") {
		t.Errorf("a baseline without features: %q", c)
	}
}

// A baseline file is data: a null point or quality figure, or a figure no
// run gives, is a clean error naming it; "points": null is no points.
func TestBaselineFileChecked(t *testing.T) {
	dir := t.TempDir()
	head := `{"version": 2, "class": "cpu-x", "software": {}, "updated": "2026-01-01T00:00:00Z", `
	for body, want := range map[string]string{
		`"points": {"a": null}}`: "is null",
		`"points": {"a": {"test": "tg", "median_ts": -1, "samples_ts": [1]}}}`:                               "a figure of -1",
		`"points": {"a": {"test": "tg", "median_ts": 5, "expected_low_ts": 9, "expected_high_ts": 3}}}`:      "upside down",
		`"points": {}, "quality": {"q": null}}`:                                                              "quality",
		`"points": {}, "quality": {"q": {"figures": {"tokens": 5, "kld": {"mean": 0.1, "stderr": 1e300}}}}}`: "kld.stderr",
	} {
		os.WriteFile(gpu.ClassFile(dir, "cpu-x"), []byte(head+body), 0o644)
		if _, err := Load(dir, "cpu-x"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", body, err)
		}
	}
	os.WriteFile(gpu.ClassFile(dir, "cpu-x"), []byte(head+`"points": null}`), 0o644)
	f, err := Load(dir, "cpu-x")
	if err != nil || f == nil || f.Points == nil {
		t.Fatalf("points null: %v %v", f, err)
	}
	r := record.Record{Status: record.StatusOK, Test: "tg16"}
	r.SamplesTs, r.AvgTs = []float64{10, 11}, 10.5
	f.Add(&r, 0.02) // no panic: a file without points takes new ones
}
