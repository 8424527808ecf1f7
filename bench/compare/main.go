// Command compare runs several sides alternately on the same model and
// settings and prints each side's t/s as a ratio of the first's, per test.
// -mode cref: the C reference loop with llama-bench's thread pool
// (bench/cref) against tokbench run's default (tokbench's overhead, target
// -target), then both without a pool (what the pool is worth);
// -mode telemetry: tokbench run without telemetry against it sampling at
// -rate Hz (the sampler's cost). Alternating spreads the machine's drift
// over all sides; medians of all repetitions resist outliers.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"github.com/tokbench/tokbench/stats"
)

type result struct {
	NPrompt   int       `json:"n_prompt"`
	NGen      int       `json:"n_gen"`
	SamplesTs []float64 `json:"samples_ts"`
}

func main() {
	tb := flag.String("tokbench", "bin/tokbench", "tokbench binary")
	cref := flag.String("cref", "bin/cref", "reference binary")
	model := flag.String("m", "", "model")
	p := flag.Int("p", 256, "prompt tokens")
	n := flag.Int("n", 64, "generated tokens")
	t := flag.Int("t", 2, "threads")
	r := flag.Int("r", 5, "repetitions per run")
	rounds := flag.Int("rounds", 4, "alternating rounds")
	target := flag.Float64("target", 0.99, "ratio of the second side to the first to meet")
	mode := flag.String("mode", "cref", "cref or telemetry")
	rate := flag.Int("rate", 20, "telemetry sampling rate (Hz), -mode telemetry")
	flag.Parse()
	if *model == "" {
		fmt.Fprintln(os.Stderr, "compare: give -m MODEL")
		os.Exit(2)
	}
	args := []string{"-m", *model, "-p", strconv.Itoa(*p), "-n", strconv.Itoa(*n), "-t", strconv.Itoa(*t), "-r", strconv.Itoa(*r)}
	run := func(extra ...string) []string {
		return append(append([]string{"run", "-o", "json"}, extra...), args...)
	}
	type side struct {
		name string
		cmd  func() *exec.Cmd
	}
	sides := []side{
		{"cref", func() *exec.Cmd { return exec.Command(*cref, args...) }},
		{"tokbench", func() *exec.Cmd { return exec.Command(*tb, run()...) }},
		{"cref-nopool", func() *exec.Cmd { return exec.Command(*cref, append([]string{"-pool=false"}, args...)...) }},
		{"tokbench-nopool", func() *exec.Cmd { return exec.Command(*tb, run("--no-telemetry", "--poll", "none")...) }},
	}
	if *mode == "telemetry" {
		sides = []side{
			{"telemetry-off", func() *exec.Cmd { return exec.Command(*tb, run("--no-telemetry")...) }},
			{"telemetry-on", func() *exec.Cmd { return exec.Command(*tb, run("--telemetry-rate", strconv.Itoa(*rate))...) }},
		}
	}
	// samples[side][test] are all repetitions; means[side][test] one per run.
	samples := map[string]map[string][]float64{}
	means := map[string]map[string][]float64{}
	for _, s := range sides {
		samples[s.name], means[s.name] = map[string][]float64{}, map[string][]float64{}
	}
	for round := 0; round < *rounds; round++ {
		// Rotate the order: no side always runs first.
		for i := range sides {
			s := sides[(i+round)%len(sides)]
			out, err := s.cmd().Output()
			if err != nil {
				fmt.Fprintf(os.Stderr, "compare: %s: %v\n", s.name, err)
				os.Exit(1)
			}
			var res []result
			if err := json.Unmarshal(out, &res); err != nil {
				fmt.Fprintf(os.Stderr, "compare: %s output: %v\n%s", s.name, err, out)
				os.Exit(1)
			}
			for _, x := range res {
				test := "pp" + strconv.Itoa(x.NPrompt)
				if x.NGen > 0 {
					test = "tg" + strconv.Itoa(x.NGen)
				}
				samples[s.name][test] = append(samples[s.name][test], x.SamplesTs...)
				means[s.name][test] = append(means[s.name][test], stats.Summarize(x.SamplesTs).Mean)
			}
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done\n", round+1, *rounds)
	}
	ok := true
	fmt.Printf("%-8s %-16s %10s %8s %10s  %s\n", "test", "side", "median t/s", "ratio", "run CV", "target")
	for _, test := range []string{"pp" + strconv.Itoa(*p), "tg" + strconv.Itoa(*n)} {
		ref := stats.Median(samples[sides[0].name][test])
		for i, s := range sides {
			med := stats.Median(samples[s.name][test])
			cv := 100 * stats.Summarize(means[s.name][test]).CV
			verdict := ""
			if i == 1 {
				verdict = fmt.Sprintf(">= %.2f met", *target)
				if med/ref < *target {
					verdict, ok = fmt.Sprintf(">= %.2f MISSED", *target), false
				}
			}
			fmt.Printf("%-8s %-16s %10.2f %8.3f %9.1f%%  %s\n", test, s.name, med, med/ref, cv, verdict)
		}
	}
	fmt.Printf("(%d rounds x %d repetitions each, medians of all repetitions; run CV: of each run's mean; model %s, %d threads)\n",
		*rounds, *r, *model, *t)
	if !ok {
		fmt.Println("a missed target on a busy 2-core machine is often noise: rerun with more -rounds before concluding")
	}
}
