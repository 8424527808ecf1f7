package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

// tinyF32 synthesizes the tiny preset in F32 once: the base of quality
// tests.
func tinyF32(t *testing.T) string {
	t.Helper()
	p := filepath.Join(workDir, "tiny-f32.gguf")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if r := tokbench(t, "synth", "--preset", "tiny", "--type", "f32", "--seed", "3", "--out", p); r.code != 0 {
		t.Fatalf("synth: %d %s", r.code, r.stderr)
	}
	return p
}

func TestQualityCommand(t *testing.T) {
	src := tinyF32(t)
	out := filepath.Join(t.TempDir(), "q.jsonl")
	r := tokbench(t, "quality", "--quantize-from", src, "--types", "q8_0,q4_k_m", "--tokens", "1024", "--ctx", "256", "-t", "1", "--out", out)
	if r.code != 0 {
		t.Fatalf("quality: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"KLD mean", "top-1 %", "quant:tiny-f32:q4_k_m", "100.00 ± 0.00", "perplexity means nothing"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "chunk 4/4") {
		t.Errorf("no progress on stderr: %s", r.stderr)
	}
	blocks, err := record.ReadQuality(out)
	if err != nil || len(blocks) != 3 {
		t.Fatalf("%d blocks in %s: %v", len(blocks), out, err)
	}
	if blocks[1].Figures.KLD.Mean <= 0 || blocks[2].Figures.KLD.Mean <= blocks[1].Figures.KLD.Mean || !blocks[0].IsBase {
		t.Errorf("KLD %g then %g", blocks[1].Figures.KLD.Mean, blocks[2].Figures.KLD.Mean)
	}
	// A results file of quality blocks alone is no speed record file.
	if recs, _, _, err := record.Read(out); err != nil || len(recs) != 0 {
		t.Errorf("record.Read of quality blocks: %d records, %v", len(recs), err)
	}
	// -o json is the blocks, nothing else on stdout.
	r = tokbench(t, "quality", "-m", src, "-m", src, "--tokens", "512", "--ctx", "256", "-t", "1", "-o", "json")
	var got []record.Quality
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 || got[1].Figures.KLD.Mean != 0 || got[1].Figures.Top1Pct != 100 {
		t.Errorf("-o json: %v %d blocks\n%s", err, len(got), r.stdout)
	}
}

func TestQualityBadInput(t *testing.T) {
	src := tinyF32(t)
	other := filepath.Join(t.TempDir(), "other.gguf")
	if r := tokbench(t, "synth", "--preset", "tiny", "--n-vocab", "1000", "--type", "q8_0", "--out", other); r.code != 0 {
		t.Fatalf("synth: %s", r.stderr)
	}
	short := filepath.Join(t.TempDir(), "short.txt")
	os.WriteFile(short, []byte("Short."), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"quality"}, "no models"},
		{[]string{"quality", "-m", src, "-m", other}, "another vocabulary"},
		{[]string{"quality", "-m", src, "--text", short}, "one chunk of --ctx needs 512"},
		{[]string{"quality", "-m", src, "--ctx", "8"}, "--ctx 8"},
		{[]string{"quality", "-m", src, "--tokens", "100"}, "less than one chunk"},
		{[]string{"quality", "-m", src, "--cache-tail", "1"}, "--cache-tail"},
		{[]string{"quality", "-m", src, "-o", "html"}, "output format"},
		{[]string{"quality", "--quantize-from", src}, "needs --types"},
	} {
		r := tokbench(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if r := tokbench(t, "quality", "-m", filepath.Join(t.TempDir(), "none.gguf")); r.code == 0 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("missing model: exit %d, %s", r.code, r.stderr)
	}
}

// Ctrl-C in a long evaluation: the models finished are printed and kept
// in --out, the process exits 130.
func TestQualityInterrupt(t *testing.T) {
	src := tinyF32(t)
	out := filepath.Join(t.TempDir(), "q.jsonl")
	cmd := exec.Command(binPath, "quality", "-m", src, "-m", src, "--tokens", "40000", "--ctx", "512", "-t", "1", "--out", out)
	cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+t.TempDir())
	var stdout, errb bytes.Buffer
	cmd.Stdout = &stdout
	// The base is done; the second model is on its way.
	stderr := startUntil(t, cmd, &errb, func(line string) bool {
		return strings.Contains(line, "chunk 2/78") && strings.Contains(errb.String(), "top-1 100.00%")
	})
	interrupt(t, cmd, stderr, &errb)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130: %s", code, errb.String())
	}
	blocks, err := record.ReadQuality(out)
	if err != nil || len(blocks) != 1 || !blocks[0].IsBase {
		t.Errorf("--out holds %d blocks (%v), want the base's", len(blocks), err)
	}
	if !strings.Contains(stdout.String(), "100.00 ± 0.00") {
		t.Errorf("the finished base was not printed: %q", stdout.String())
	}
}

// sweep --quality: the speed records and the quality blocks share the
// results file, report joins them, and the baseline gates on both.
func TestSweepQualityReportAndBaseline(t *testing.T) {
	src := tinyF32(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "s.jsonl")
	args := []string{"sweep", "--quantize-from", src, "--types", "q8_0,q2_k", "-p", "64", "-n", "16", "-r", "3", "-t", "1", "--no-kernels",
		"--quality", "--quality-tokens", "1024", "--quality-ctx", "256", "--out", out}
	r := tokbench(t, args...)
	if r.code != 0 {
		t.Fatalf("sweep: %d %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "Pareto") || !strings.Contains(r.stdout, "front") {
		t.Errorf("the sweep's summary lacks the quality table:\n%s", r.stdout)
	}
	recs, _, _, err := record.Read(out)
	blocks, qerr := record.ReadQuality(out)
	if err != nil || qerr != nil || len(recs) != 4 || len(blocks) != 3 {
		t.Fatalf("%d records, %d blocks: %v %v", len(recs), len(blocks), err, qerr)
	}
	// Resumed, the sweep does not evaluate the quality again.
	r = tokbench(t, append(args, "--resume")...)
	if r.code != 0 || !strings.Contains(r.stderr, "already in") {
		t.Errorf("resume: %d %s", r.code, r.stderr)
	}
	if b, _ := record.ReadQuality(out); len(b) != 3 {
		t.Errorf("%d blocks after resuming, want 3", len(b))
	}
	r = tokbench(t, "report", out)
	if r.code != 0 || !strings.Contains(r.stdout, "KLD mean") || !strings.Contains(r.stdout, "quant:tiny-f32:q2_k") {
		t.Errorf("report: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	html := filepath.Join(dir, "r.html")
	if r := tokbench(t, "report", "-o", "html", "--out", html, out); r.code != 0 {
		t.Fatalf("report html: %s", r.stderr)
	}
	page, _ := os.ReadFile(html)
	for _, want := range []string{"the Pareto front", "mean KLD by bits per weight", "Quality and speed"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	bdir := filepath.Join(dir, "baselines")
	if r := tokbench(t, "baseline", "create", "--dir", bdir, out); r.code != 0 || !strings.Contains(r.stderr, "3 quality figures") {
		t.Fatalf("baseline create: %d %s", r.code, r.stderr)
	}
	// The same figures pass; a KLD risen well beyond its uncertainty fails
	// the gate like a slowdown.
	worse := filepath.Join(dir, "worse.jsonl")
	var lines []string
	for _, q := range blocks {
		if q.ModelFileType == "q2_k" {
			q.Figures.KLD.Mean *= 1.2
		}
		b, _ := json.Marshal(q)
		lines = append(lines, string(b))
	}
	os.WriteFile(worse, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	r = tokbench(t, "baseline", "compare", "--dir", bdir, worse)
	if r.code != 1 || !strings.Contains(r.stderr, "quality regression") || !strings.Contains(r.stdout, "worse quality") {
		t.Errorf("worse quality: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = tokbench(t, "baseline", "compare", "--dir", bdir, out)
	if r.code != 0 || !strings.Contains(r.stdout, "3 of 3 quality figures matched") {
		t.Errorf("same quality: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
