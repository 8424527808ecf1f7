// Command splitcost measures what the step's split (hardware, kernels,
// software) costs next to the measurement (make bench-split): tokbench
// run's wall time by default against --no-kernels, per model and depth,
// alternately, each default run with a kernel-timing cache of its own
// (cold: as on a first run) and again with the cache it left (warm); and
// a sweep's closing line, timing kernels against measuring.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/stats"
)

type rec struct {
	Test   string `json:"test"`
	Phases *struct {
		Depth   float64 `json:"depth"`
		Measure float64 `json:"measure"`
		Kernels float64 `json:"kernels"`
	} `json:"phases_ms"`
}

type models []string

func (m *models) String() string     { return strings.Join(*m, ",") }
func (m *models) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	tb := flag.String("tokbench", "bin/tokbench", "tokbench binary")
	var ms models
	flag.Var(&ms, "m", "model (repeatable)")
	depths := flag.String("d", "0,2048", "depths, each a run of its own")
	p := flag.Int("p", 64, "prompt tokens")
	n := flag.Int("n", 32, "generated tokens")
	reps := flag.Int("r", 3, "repetitions")
	rounds := flag.Int("rounds", 3, "rounds, alternately default first and --no-kernels first")
	probe := flag.String("probe", "", "a cache folder whose probe/ the runs copy (no probe run inside the timing)")
	sweepDepths := flag.String("sweep-d", "0,1024,2048", "the sweep's depths (with --parallel 1,2, pp32 and tg16); empty: no sweep")
	flag.Parse()
	if len(ms) == 0 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "splitcost: give -m MODEL and -rounds of at least 1")
		os.Exit(2)
	}
	tmp, err := os.MkdirTemp("", "splitcost-")
	check(err)
	defer os.RemoveAll(tmp)
	// cache is a new cache folder with the probe's ceilings and nothing
	// else: the kernels are timed afresh in it.
	cache := func() string {
		d, err := os.MkdirTemp(tmp, "cache-")
		check(err)
		if *probe != "" {
			check(exec.Command("cp", "-R", filepath.Join(*probe, "probe"), d).Run())
		}
		return d
	}
	run := func(dir string, args ...string) (time.Duration, []rec) {
		cmd := exec.Command(*tb, args...)
		cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+dir)
		t0 := time.Now()
		out, err := cmd.Output()
		wall := time.Since(t0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "splitcost: %s %v: %v\n", *tb, args, err)
			os.Exit(1)
		}
		var recs []rec
		check(json.Unmarshal(out, &recs))
		return wall, recs
	}
	fmt.Printf("%-40s %6s %10s %10s %10s %7s %7s %12s %12s\n", "model", "depth", "default s", "warm s", "no-kern s", "ratio", "warm", "kernels ms", "measure ms")
	for _, m := range ms {
		for _, d := range strings.Split(*depths, ",") {
			base := []string{"run", "-m", m, "-p", strconv.Itoa(*p), "-n", strconv.Itoa(*n), "-d", d, "-r", strconv.Itoa(*reps), "-o", "json"}
			var def, warm, off []float64
			var kern, meas float64
			for r := 0; r < *rounds; r++ {
				both := func(first bool) {
					if first == (r%2 == 0) {
						c := cache()
						w, recs := run(c, base...)
						def = append(def, w.Seconds())
						for _, x := range recs {
							if x.Phases != nil {
								kern, meas = kern+x.Phases.Kernels, meas+x.Phases.Measure
							}
						}
						w, _ = run(c, base...)
						warm = append(warm, w.Seconds())
					} else {
						w, _ := run(cache(), append(base, "--no-kernels")...)
						off = append(off, w.Seconds())
					}
				}
				both(true)
				both(false)
			}
			md, mw, mo := stats.Median(def), stats.Median(warm), stats.Median(off)
			fmt.Printf("%-40s %6s %10.2f %10.2f %10.2f %7.2f %7.2f %12.0f %12.0f\n", filepath.Base(m), d, md, mw, mo, md/mo, mw/mo,
				kern/float64(*rounds), meas/float64(*rounds))
		}
	}
	if *sweepDepths == "" {
		return
	}
	// The sweep's closing line: "measuring 44.0s, timing kernels 115.1s".
	line := regexp.MustCompile(`measuring ([0-9.]+)s.*timing kernels ([0-9.]+)s`)
	for _, m := range ms {
		out := filepath.Join(tmp, "sweep.jsonl")
		os.Remove(out)
		cmd := exec.Command(*tb, "sweep", "-m", m, "-d", *sweepDepths, "--parallel", "1,2", "-p", "32", "-n", "16", "-r", strconv.Itoa(*reps), "--out", out)
		cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+cache())
		b, err := cmd.CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "splitcost: sweep: %v\n%s", err, b)
			os.Exit(1)
		}
		if s := line.FindStringSubmatch(string(b)); s != nil {
			mm, _ := strconv.ParseFloat(s[1], 64)
			kk, _ := strconv.ParseFloat(s[2], 64)
			fmt.Printf("sweep %s -d %s --parallel 1,2 pp32 tg16: measuring %.1fs, timing kernels %.1fs: %.2f of measuring\n", filepath.Base(m), *sweepDepths, mm, kk, kk/mm)
		} else {
			fmt.Printf("sweep %s: no closing line with both figures:\n%s\n", filepath.Base(m), lastLines(string(b), 5))
		}
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitcost:", err)
		os.Exit(1)
	}
}
