// Command compare runs two sides alternately on the same model and
// settings and prints the second's t/s as a ratio of the first's, per
// test. -mode cref: the C reference loop (bench/cref) against tokbench run
// (tokbench's overhead); -mode telemetry: tokbench run without telemetry
// against it sampling at -rate Hz (the sampler's cost). Alternating spreads
// the machine's drift over both; medians of all repetitions resist
// outliers.
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
	target := flag.Float64("target", 0.98, "ratio to meet")
	mode := flag.String("mode", "cref", "cref or telemetry")
	rate := flag.Int("rate", 20, "telemetry sampling rate (Hz), -mode telemetry")
	flag.Parse()
	if *model == "" {
		fmt.Fprintln(os.Stderr, "compare: give -m MODEL")
		os.Exit(2)
	}
	args := []string{"-m", *model, "-p", strconv.Itoa(*p), "-n", strconv.Itoa(*n), "-t", strconv.Itoa(*t), "-r", strconv.Itoa(*r)}
	sideA, sideB := "cref", "tokbench"
	cmdFor := func(who string) *exec.Cmd {
		switch who {
		case "cref":
			return exec.Command(*cref, args...)
		case "telemetry-off":
			return exec.Command(*tb, append([]string{"run", "-o", "json", "--no-telemetry"}, args...)...)
		case "telemetry-on":
			return exec.Command(*tb, append([]string{"run", "-o", "json", "--telemetry-rate", strconv.Itoa(*rate)}, args...)...)
		}
		return exec.Command(*tb, append([]string{"run", "-o", "json", "--no-telemetry"}, args...)...)
	}
	if *mode == "telemetry" {
		sideA, sideB = "telemetry-off", "telemetry-on"
	}
	samples := map[string]map[string][]float64{sideA: {}, sideB: {}}
	for round := 0; round < *rounds; round++ {
		// ABBA order: neither side always runs first.
		order := []string{sideA, sideB}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, who := range order {
			cmd := cmdFor(who)
			out, err := cmd.Output()
			if err != nil {
				fmt.Fprintf(os.Stderr, "compare: %s: %v\n", who, err)
				os.Exit(1)
			}
			var res []result
			if err := json.Unmarshal(out, &res); err != nil {
				fmt.Fprintf(os.Stderr, "compare: %s output: %v\n%s", who, err, out)
				os.Exit(1)
			}
			for _, x := range res {
				test := "pp" + strconv.Itoa(x.NPrompt)
				if x.NGen > 0 {
					test = "tg" + strconv.Itoa(x.NGen)
				}
				samples[who][test] = append(samples[who][test], x.SamplesTs...)
			}
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done\n", round+1, *rounds)
	}
	fmt.Printf("%-8s %14s %14s %8s  %s\n", "test", sideA, sideB, "ratio", "target")
	ok := true
	for _, test := range []string{"pp" + strconv.Itoa(*p), "tg" + strconv.Itoa(*n)} {
		c, b := stats.Median(samples[sideA][test]), stats.Median(samples[sideB][test])
		ratio := b / c
		verdict := "met"
		if ratio < *target {
			verdict, ok = "MISSED", false
		}
		fmt.Printf("%-8s %14.2f %14.2f %8.3f  >= %.2f %s\n", test, c, b, ratio, *target, verdict)
	}
	fmt.Printf("(%d rounds x %d repetitions each, medians; model %s, %d threads)\n", *rounds, *r, *model, *t)
	if !ok {
		fmt.Println("a missed target on a busy 2-core machine is often noise: rerun with more -rounds before concluding")
	}
}
