package rerun

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The spread between processes is what their means vary by beyond what
// their repetitions explain.
func TestBetween(t *testing.T) {
	runs := []Run{{Mean: 98}, {Mean: 100}, {Mean: 102}}
	if got := between(runs); math.Abs(got-0.02) > 1e-9 {
		t.Errorf("between = %v, want 0.02", got)
	}
	// Repetitions noisy enough to explain the means' spread: none left.
	for i := range runs {
		runs[i].VarMean = 10
	}
	if got := between(runs); got != 0 {
		t.Errorf("between = %v, want 0", got)
	}
}

// A test's own processes, else the machine's other tests, else the
// prior: each says so.
func TestSpreadBasis(t *testing.T) {
	dir := t.TempDir()
	h := Open(dir, "cpu/AMD EPYC")
	this := Run{Mean: 100}
	if cv, basis := h.Spread("a", this); cv != priorCV || !strings.Contains(basis, "assumed") {
		t.Errorf("empty history: %v %q", cv, basis)
	}
	for _, m := range []float64{90, 110, 100} {
		if err := h.Add("b", Run{Mean: m}); err != nil {
			t.Fatal(err)
		}
	}
	if cv, basis := h.Spread("a", this); math.Abs(cv-0.1) > 1e-9 || !strings.Contains(basis, "1 other tests") {
		t.Errorf("other tests: %v %q", cv, basis)
	}
	h.Add("a", Run{Mean: 99})
	h.Add("a", Run{Mean: 100})
	// Read back from the file: the history outlives the process. Three
	// processes 1% apart weigh 2 against the prior's 4.
	h = Open(dir, "cpu/AMD EPYC")
	want := math.Sqrt((4*0.1*0.1 + 2*0.01*0.01) / 6)
	if cv, basis := h.Spread("a", Run{Mean: 101}); math.Abs(cv-want) > 1e-3 || !strings.Contains(basis, "3 processes of this test") {
		t.Errorf("own history: %v (want %v) %q", cv, want, basis)
	}
	// Many processes of its own: the test's spread, nearly.
	for range 30 {
		h.Add("a", Run{Mean: 99})
		h.Add("a", Run{Mean: 101})
	}
	if cv, _ := h.Spread("a", Run{Mean: 100}); cv > 0.05 {
		t.Errorf("20 processes 1%% apart: %v", cv)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "reruns")); len(ents) != 1 || ents[0].Name() != "cpu_AMD_EPYC.json" {
		t.Errorf("files %v", ents)
	}
}

func TestAddKeepsTheLatest(t *testing.T) {
	h := Open("", "c")
	for i := range maxRuns + 5 {
		h.Add("a", Run{Mean: float64(i + 1)})
	}
	h.Add("a", Run{Mean: math.NaN()})
	rs := h.Runs["a"]
	if len(rs) != maxRuns || rs[0].Mean != 6 || rs[len(rs)-1].Mean != maxRuns+5 {
		t.Errorf("kept %v", rs)
	}
}

// A damaged history is no history, not an error.
func TestDamagedHistory(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "reruns"), 0o755)
	os.WriteFile(filepath.Join(dir, "reruns", "c.json"), []byte("{not json"), 0o644)
	h := Open(dir, "c")
	if len(h.Runs) != 0 {
		t.Errorf("runs %v", h.Runs)
	}
	if err := h.Add("a", Run{Mean: 1}); err != nil {
		t.Fatal(err)
	}
}

// A process whose repetitions spread more than the prior assumes for
// processes takes their spread.
func TestNoisyRepetitionsWidenThePrior(t *testing.T) {
	h := Open("", "c")
	if cv, basis := h.Spread("a", Run{Mean: 100, CV: 0.05}); cv != 0.05 || !strings.Contains(basis, "as much as its repetitions") {
		t.Errorf("%v %q", cv, basis)
	}
}
