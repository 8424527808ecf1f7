// Command validity measures whether tokbench's records deserve the
// precision they claim. It runs one point -runs times, each in a process
// of its own (tokbench run -r auto), and reports:
//
//   - coverage: for each pair of runs, whether one run's mean lies inside
//     the other's claimed 95% confidence interval; on a quiet machine at
//     least 90% of pairs should (runs of one machine share its drift, so a
//     little less than 95% is expected);
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
	"strconv"
	"time"

	"github.com/tokbench/tokbench/stats"
)

type rec struct {
	Test        string    `json:"test"`
	AvgTs       float64   `json:"avg_ts"`
	CI95Ts      float64   `json:"ci95_ts"`
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
func coverage(rs []rec) float64 {
	in, all := 0, 0
	for i := range rs {
		for j := range rs {
			if i == j {
				continue
			}
			all++
			if d := rs[i].AvgTs - rs[j].AvgTs; d >= -rs[j].CI95Ts && d <= rs[j].CI95Ts {
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
		autoCI = append(autoCI, 100*auto[i].CI95Ts/auto[i].AvgTs)
		fixedCI = append(fixedCI, 100*fixed[i].CI95Ts/fixed[i].AvgTs)
		if auto[i].CITargetMet != nil && *auto[i].CITargetMet {
			met++
		}
	}
	s := stats.Summarize(means)
	fmt.Printf("test %s, %d runs each in its own process\n", auto[0].Test, len(auto))
	fmt.Printf("means of the runs (-r auto): %.2f t/s, spread (CV) %.1f%%, min %.2f, max %.2f\n", s.Mean, 100*s.CV, s.Min, s.Max)
	fmt.Printf("coverage: %.0f%% of runs' means inside another run's claimed 95%% CI (-r auto), %.0f%% (-r 10) (target >= 90%% on a quiet machine)\n",
		100*coverage(auto), 100*coverage(fixed))
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
