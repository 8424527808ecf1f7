// Command sweepbench times a depth sweep against the same points run one
// by one with `tokbench run`, and compares their wall times and t/s
// (make bench-sweep).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/stats"
)

type rec struct {
	Test   string  `json:"test"`
	AvgTs  float64 `json:"avg_ts"`
	Status string  `json:"status"`
	Phases *struct {
		Load, Warmup, Depth, Measure float64
	} `json:"phases_ms"`
}

func main() {
	tb := flag.String("tokbench", "bin/tokbench", "tokbench binary")
	model := flag.String("m", "", "model")
	depths := flag.String("d", "0,512,1024,2048", "depths")
	reps := flag.Int("r", 3, "repetitions")
	rounds := flag.Int("rounds", 2, "rounds, in ABBA order (sweep first, then one by one first, ...)")
	extra := flag.String("args", "", "more flags for both, space-separated (e.g. \"-p 512 -n 128\")")
	flag.Parse()
	if *model == "" || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "sweepbench: give -m MODEL and -rounds of at least 1")
		os.Exit(2)
	}
	more := strings.Fields(*extra)
	dir, err := os.MkdirTemp("", "sweepbench-")
	check(err)
	defer os.RemoveAll(dir)

	sweepTs, runTs := map[string][]float64{}, map[string][]float64{}
	var sweepWall, runWall time.Duration
	var phases [4]float64
	sweep := func(round int) {
		out := filepath.Join(dir, fmt.Sprintf("sweep-%d.jsonl", round))
		args := append([]string{"sweep", "-m", *model, "-d", *depths, "-r", strconv.Itoa(*reps), "--out", out, "-o", "jsonl"}, more...)
		t0 := time.Now()
		_, err := exec.Command(*tb, args...).Output()
		check(err)
		sweepWall += time.Since(t0)
		data, err := os.ReadFile(out)
		check(err)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r rec
			check(json.Unmarshal([]byte(line), &r))
			sweepTs[r.Test] = append(sweepTs[r.Test], r.AvgTs)
			if r.Phases != nil {
				phases[0] += r.Phases.Load
				phases[1] += r.Phases.Warmup
				phases[2] += r.Phases.Depth
				phases[3] += r.Phases.Measure
			}
		}
	}
	// Each depth a process of its own (a range such as 0-3584+512 too).
	each, err := point.ParseInts(*depths)
	check(err)
	oneByOne := func() {
		for _, d := range each {
			args := append([]string{"run", "-m", *model, "-d", strconv.Itoa(d), "-r", strconv.Itoa(*reps), "-o", "json"}, more...)
			t0 := time.Now()
			b, err := exec.Command(*tb, args...).Output()
			check(err)
			runWall += time.Since(t0)
			var rs []rec
			check(json.Unmarshal(b, &rs))
			for _, r := range rs {
				runTs[r.Test] = append(runTs[r.Test], r.AvgTs)
			}
		}
	}
	for round := 0; round < *rounds; round++ {
		// ABBA: a machine that speeds up or slows down over the bench
		// favours neither side.
		if round%2 == 0 {
			sweep(round)
			oneByOne()
		} else {
			oneByOne()
			sweep(round)
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done\n", round+1, *rounds)
	}

	var tests []string
	for t := range sweepTs {
		tests = append(tests, t)
	}
	sort.Strings(tests)
	fmt.Printf("%-14s %12s %12s %8s\n", "test", "run t/s", "sweep t/s", "ratio")
	for _, t := range tests {
		r, s := stats.Median(runTs[t]), stats.Median(sweepTs[t])
		fmt.Printf("%-14s %12.2f %12.2f %8.3f\n", t, r, s, s/r)
	}
	n := float64(*rounds)
	fmt.Printf("\nwall time per round: one by one %.1fs, sweep %.1fs: ratio %.3f (target <= 0.5)\n", runWall.Seconds()/n, sweepWall.Seconds()/n, sweepWall.Seconds()/runWall.Seconds())
	fmt.Printf("sweep phases per round: load %.1fs, warm-up %.1fs, depth fill %.1fs, measuring %.1fs\n", phases[0]/1000/n, phases[1]/1000/n, phases[2]/1000/n, phases[3]/1000/n)
	fmt.Printf("(measuring is the same work in both: the ratio cannot go below measuring / one-by-one = %.3f)\n", phases[3]/1000/runWall.Seconds())
}

func check(err error) {
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			fmt.Fprintf(os.Stderr, "sweepbench: %v\n%s", err, ee.Stderr)
		} else {
			fmt.Fprintln(os.Stderr, "sweepbench:", err)
		}
		os.Exit(1)
	}
}
