package baseline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tokbench/tokbench/record"
)

// A fleet's classes built one at a time from their spilled runs are the
// baselines that adding every record to its class's file in memory makes:
// the same points, runs (hosts, times in their zones, an empty host),
// samples, ranges and software, on top of a baseline already in the
// folder; and the spill is never a file a signal would leave behind.
func TestBuilderBuildsWhatAddDoes(t *testing.T) {
	dir := t.TempDir()
	old := NewFile("cpu-epyc")
	for _, r := range recs("EPYC", 0.9, nil) {
		old.Add(&r, 0.05)
	}
	if _, err := old.Save(dir); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	b := NewBuilder(dir)
	want := map[string]*File{}
	if f, err := Load(dir, "cpu-epyc"); err != nil || f == nil {
		t.Fatal(f, err)
	} else {
		want["cpu-epyc"] = f
	}
	zone := time.FixedZone("", -7*3600)
	for i := range 180 {
		cpu := []string{"Xeon", "EPYC", "Graviton"}[i%3]
		rs := recs(cpu, 1+float64(i%11)/100, []float64{0, 0.01 * float64(i%5), 0, 0, 0})
		for j := range rs {
			r := &rs[j]
			r.HostName = fmt.Sprintf("node-%d", i%4)
			if i%9 == 0 {
				r.HostName = "" // gob leaves an empty string out of the stream
			}
			r.TestTime = time.Date(2026, 12, 1, 0, i, 0, 0, zone)
			r.BuildCommit = fmt.Sprintf("b%d", i/60)
			if i == 50 {
				r.Status = record.StatusFailed // adds nothing
			}
			if err := b.Add(r); err != nil {
				t.Fatal(err)
			}
			f := want[r.Class()]
			if f == nil {
				f = NewFile(r.Class())
				want[r.Class()] = f
			}
			f.Add(r, 0.05)
		}
	}
	// The spill files are unlinked while they are written: a signal that
	// ends the process leaves none.
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("the spill is in %s: %v", tmp, left)
	}
	if got := b.Classes(); len(got) != 3 || got[0] != "cpu-xeon" || got[1] != "cpu-epyc" {
		t.Errorf("classes %v, want in the order first seen", got)
	}
	for _, class := range b.Classes() {
		f, err := b.Build(class, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		w := want[class]
		w.Settle()
		f.Updated, w.Updated = time.Time{}, time.Time{}
		gotJSON, _ := json.Marshal(f)
		wantJSON, _ := json.Marshal(w)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("class %s built from the spill:\n%s\nadded in memory:\n%s", class, gotJSON, wantJSON)
		}
		if p := f.Points[identity(&recs("X", 1, nil)[0])]; class == "cpu-xeon" && (p == nil || len(p.Runs) != maxRuns || p.Machines() != 5) {
			t.Errorf("a point of %s: %+v", class, p)
		}
	}
	b.Close()
}

// A baseline the builder cannot build on is refused at the first record
// of its class, not after every record is read.
func TestBuilderRefusesABadBaselineFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cpu-xeon.json"), []byte(`{"version": 1, "class": "cpu-xeon"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(dir)
	defer b.Close()
	r := recs("Xeon", 1, nil)[0]
	if err := b.Add(&r); err == nil {
		t.Fatal("a baseline of another format was built on")
	}
	if err := b.Include("cpu-xeon"); err == nil {
		t.Fatal("a class with quality figures only was let through")
	}
}

// The builder's descriptors are a fixed number whatever the classes: 600
// classes' runs wait in spillFiles files, each read once, and every class
// is built from them.
func TestBuilderDescriptorsBounded(t *testing.T) {
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	if fds() == 0 {
		t.Skip("no /proc/self/fd")
	}
	t.Setenv("TMPDIR", t.TempDir())
	before := fds()
	b := NewBuilder(t.TempDir())
	defer b.Close()
	const classes = 600
	for c := range classes {
		r := record.Record{Status: record.StatusOK, Test: "tg16"}
		r.Backend, r.CPUInfo, r.SamplesTs = "CPU", fmt.Sprintf("Model %03d", c), []float64{10, 11}
		if err := b.Add(&r); err != nil {
			t.Fatal(err)
		}
	}
	if open := fds() - before; open > spillFiles {
		t.Errorf("%d descriptors open for %d classes, more than %d", open, classes, spillFiles)
	}
	for _, class := range b.Classes() {
		f, err := b.Build(class, 0.02)
		if err != nil || len(f.Points) != 1 {
			t.Fatalf("%s: %v %v", class, f, err)
		}
	}
	if len(b.Classes()) != classes {
		t.Errorf("%d classes built of %d", len(b.Classes()), classes)
	}
}
