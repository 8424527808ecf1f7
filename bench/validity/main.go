// Command validity measures whether tokbench's records deserve the
// precision they claim. It runs one point -runs times, each in a process
// of its own (tokbench run -r auto), and reports:
//
//   - coverage: for each pair of runs, whether one run's mean lies inside
//     the other's claimed 95% interval (ci95_ts, which covers a rerun in
//     another process); at least 90% of pairs should. The runs start from
//     an empty history of reruns (a cache folder of their own, with the
//     machine's probe): the first runs' intervals rest on tokbench's
//     assumed spread between processes, the later ones on this machine's;
//   - the repetitions -r auto needed, and whether each met its target;
//   - the wall time of -r auto against a fixed -r 10, and the CI each
//     reached (the speed target: auto at most 0.6 of -r 10's time at the
//     target CI).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tokbench/tokbench/stats"
)

type rec struct {
	Test        string    `json:"test"`
	AvgTs       float64   `json:"avg_ts"`
	CI95Ts      float64   `json:"ci95_ts"`
	CI95RepsTs  float64   `json:"ci95_reps_ts"`
	CIBasis     string    `json:"ci_basis"`
	Reps        int       `json:"repetitions"`
	CITargetMet *bool     `json:"ci_target_met"`
	SamplesTs   []float64 `json:"samples_ts"`
}

func main() {
	tb := flag.String("tokbench", "bin/tokbench", "tokbench binary")
	model := flag.String("m", "", "model")
	p := flag.Int("p", 0, "prompt tokens (0: a tg point only)")
	n := flag.Int("n", 64, "generated tokens")
	t := flag.Int("t", 2, "threads")
	runs := flag.Int("runs", 10, "runs of the point, each in its own process")
	target := flag.Float64("target-ci", 2, "-r auto's target, percent")
	flag.Parse()
	if *model == "" {
		fmt.Fprintln(os.Stderr, "validity: give -m MODEL")
		os.Exit(2)
	}
	args := []string{"run", "-m", *model, "-p", strconv.Itoa(*p), "-n", strconv.Itoa(*n), "-t", strconv.Itoa(*t), "-o", "json", "--no-telemetry", "--no-kernels",
		"--target-ci", fmt.Sprint(*target)}
	cache, err := freshCache()
	if err != nil {
		fmt.Fprintln(os.Stderr, "validity:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(cache)
	os.Setenv("TOKBENCH_CACHE", cache)
	var auto, fixed []rec
	var autoWall, fixedWall time.Duration
	// Alternate the two, so that the machine's drift favours neither.
	for i := 0; i < *runs; i++ {
		r, d := run(*tb, append(args, "-r", "auto"))
		auto, autoWall = append(auto, r), autoWall+d
		r, d = run(*tb, append(args, "-r", "10"))
		fixed, fixedWall = append(fixed, r), fixedWall+d
		fmt.Fprintf(os.Stderr, "run %d/%d: auto %.2f ± %.2f t/s in %d reps; -r 10 %.2f ± %.2f\n", i+1, *runs, auto[i].AvgTs, auto[i].CI95Ts, auto[i].Reps, fixed[i].AvgTs, fixed[i].CI95Ts)
	}
	report(auto, fixed, autoWall, fixedWall, *target)
	fmt.Printf("interval of the first run: %s; of the last: %s\n", auto[0].CIBasis, auto[len(auto)-1].CIBasis)
}

// freshCache is a cache folder with no history of reruns, holding the
// machine's probe (if the user's cache has it) so that no run probes.
func freshCache() (string, error) {
	dir, err := os.MkdirTemp("", "validity-cache-")
	if err != nil {
		return "", err
	}
	user := os.Getenv("TOKBENCH_CACHE")
	if user == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return dir, nil
		}
		user = filepath.Join(base, "tokbench")
	}
	if _, err := os.Stat(filepath.Join(user, "probe")); err == nil {
		if err := os.CopyFS(filepath.Join(dir, "probe"), os.DirFS(filepath.Join(user, "probe"))); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// run measures the point once and returns its (last) record and the
// process's wall time.
func run(tb string, args []string) (rec, time.Duration) {
	t0 := time.Now()
	out, err := exec.Command(tb, args...).Output()
	d := time.Since(t0)
	var recs []rec
	if err != nil || json.Unmarshal(out, &recs) != nil || len(recs) == 0 {
		fmt.Fprintf(os.Stderr, "validity: %s %v failed: %v\n", tb, args, err)
		os.Exit(1)
	}
	return recs[len(recs)-1], d
}

// coverage is the share of ordered pairs (i, j), i != j, whose mean i
// lies within j's claimed interval.
func coverage(rs []rec) float64 { return coverageOf(rs, func(r rec) float64 { return r.CI95Ts }) }

// coverageOf is coverage with the half-width ci gives.
func coverageOf(rs []rec, ci func(rec) float64) float64 {
	in, all := 0, 0
	for i := range rs {
		for j := range rs {
			if i == j {
				continue
			}
			all++
			if d := rs[i].AvgTs - rs[j].AvgTs; d >= -ci(rs[j]) && d <= ci(rs[j]) {
				in++
			}
		}
	}
	return float64(in) / float64(max(all, 1))
}

func report(auto, fixed []rec, autoWall, fixedWall time.Duration, target float64) {
	var means, reps, autoCI, fixedCI []float64
	met := 0
	for i := range auto {
		means = append(means, auto[i].AvgTs)
		reps = append(reps, float64(auto[i].Reps))
		autoCI = append(autoCI, 100*auto[i].CI95RepsTs/auto[i].AvgTs)
		fixedCI = append(fixedCI, 100*fixed[i].CI95RepsTs/fixed[i].AvgTs)
		if auto[i].CITargetMet != nil && *auto[i].CITargetMet {
			met++
		}
	}
	s := stats.Summarize(means)
	fmt.Printf("test %s, %d runs each in its own process\n", auto[0].Test, len(auto))
	fmt.Printf("means of the runs (-r auto): %.2f t/s, spread (CV) %.1f%%, min %.2f, max %.2f\n", s.Mean, 100*s.CV, s.Min, s.Max)
	fmt.Printf("coverage: %.0f%% of runs' means inside another run's claimed 95%% CI (-r auto), %.0f%% (-r 10) (target >= 90%% on a quiet machine)\n",
		100*coverage(auto), 100*coverage(fixed))
	repsCI := func(r rec) float64 { return r.CI95RepsTs }
	fmt.Printf("  with the repetitions' interval alone (ci95_reps_ts, what a CI of one process claims): %.0f%% (-r auto), %.0f%% (-r 10)\n",
		100*coverageOf(auto, repsCI), 100*coverageOf(fixed, repsCI))
	first, last := means[:len(means)/2], means[len(means)/2:]
	fmt.Printf("  drift: the later half's mean is %+.1f%% of the first half's\n", 100*(stats.Summarize(last).Mean/stats.Summarize(first).Mean-1))
	fmt.Printf("-r auto: %.1f repetitions on average (min %.0f, max %.0f); target ±%.1f%% met in %d of %d runs; CI reached %.1f%% (median)\n",
		stats.Summarize(reps).Mean, stats.Summarize(reps).Min, stats.Summarize(reps).Max, target, met, len(auto), stats.Median(autoCI))
	ratio := autoWall.Seconds() / fixedWall.Seconds()
	verdict := "met"
	if ratio > 0.6 {
		verdict = "MISSED"
	}
	fmt.Printf("wall time: -r auto %.1fs, -r 10 %.1fs (CI reached %.1f%% median): ratio %.2f (target <= 0.6) %s\n",
		autoWall.Seconds(), fixedWall.Seconds(), stats.Median(fixedCI), ratio, verdict)
	fmt.Println("(each wall time includes the process's start and model load, the same for both)")
}
