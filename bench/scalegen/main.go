// Command scalegen writes synthetic tokbench records for make bench-scale:
// a fleet's results (many hardware classes, models, tests and builds),
// each record a real run's with its settings and samples varied, so that
// report, merge, compare and baseline can be timed at 10^4 to 10^6 of
// them without measuring anything.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/tokbench/tokbench/point"
	tbrecord "github.com/tokbench/tokbench/record"
)

// The fleet's shape: every record is one point of one class and build.
const (
	models = 25
	builds = 3
)

var (
	classes = 40
	written bool
)

var tests = []struct{ p, n int }{{512, 0}, {0, 128}, {128, 0}, {0, 32}, {2048, 0}, {0, 256}, {1024, 0}, {0, 64}, {256, 0}, {0, 512}}

func main() {
	n := flag.Int("n", 10000, "records")
	shards := flag.Int("shards", 1, "files the records are spread over (shard-NNN.jsonl in -out, a folder); 1: -out is the file")
	out := flag.String("out", "", "the file, or the shards' folder")
	build := flag.Int("build", -1, "only this build's records (0 to 2), as a comparison's side: -1 all")
	flag.IntVar(&classes, "classes", classes, "hardware classes")
	flag.BoolVar(&written, "written", false, "each record's line as tokbench writes it (every field, in its order: about 1,550 bytes), not its fields sorted and zeros left out (about 950)")
	flag.Parse()
	if *out == "" || *n < 1 || *shards < 1 {
		fmt.Fprintln(os.Stderr, "usage: scalegen -n N [-shards K] [-build B] -out PATH")
		os.Exit(2)
	}
	if err := write(*out, *n, *shards, *build); err != nil {
		fmt.Fprintln(os.Stderr, "scalegen:", err)
		os.Exit(1)
	}
}

func write(out string, n, shards, build int) error {
	ws := make([]*bufio.Writer, shards)
	files := make([]*os.File, shards)
	for i := range ws {
		path := out
		if shards > 1 {
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			path = filepath.Join(out, fmt.Sprintf("shard-%03d.jsonl", i))
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		files[i], ws[i] = f, bufio.NewWriterSize(f, 1<<20)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		line, err := json.Marshal(record(i, build, rng))
		if err == nil && written {
			line, err = asWritten(i, line)
		}
		if err != nil {
			return err
		}
		w := ws[i%shards]
		w.Write(line)
		w.WriteByte('\n')
	}
	for i, w := range ws {
		if err := w.Flush(); err != nil {
			return err
		}
		if err := files[i].Close(); err != nil {
			return err
		}
	}
	return nil
}

// record is the i-th record of a fleet that runs one sweep again and
// again: i runs over classes fastest, then builds, then the sweep's
// points (models, tests, two thread counts: 500, a few hundred as a
// fleet's sweep has), then its rounds, so that any prefix is a fleet of
// every class, the records grow with the rounds (as a fleet's do with its
// boxes) while its points and tests stay, and no two records are one
// point of one class, build and round (merge's duplicates).
func record(i, onlyBuild int, rng *rand.Rand) map[string]any {
	class, rest := i%classes, i/classes
	b := rest % builds
	if onlyBuild >= 0 {
		b = onlyBuild
	} else {
		rest /= builds
	}
	t, rest := tests[rest%len(tests)], rest/len(tests)
	model, rest := rest%models, rest/models
	threads, round := 1<<(rest%2), 1+rest/2
	// A class is ~10-60% faster than the slowest; a build 0-4% slower.
	base := 20 * (1 + float64(class%13)/20) * (1 + float64(model%5)) / (1 + float64(b)/50)
	if t.p > 0 {
		base *= 12
	}
	var samples []float64
	sum := 0.0
	for range 5 {
		v := base * (1 + rng.NormFloat64()*0.02)
		samples = append(samples, v)
		sum += v
	}
	avg := sum / 5
	name := fmt.Sprintf("m%02d-q4_0.gguf", model)
	test := fmt.Sprintf("pp%d", t.p)
	if t.p == 0 {
		test = fmt.Sprintf("tg%d", t.n)
	}
	// The sweep's point is tokbench's defaults but for its test and
	// threads: its key and shape as tokbench writes them.
	p := point.Defaults(threads)
	p.Model, p.NPrompt, p.NGen = name, t.p, t.n
	rec := map[string]any{
		"key": p.Key().String(), "test": test, "status": "ok", "tool": "tokbench 0.2.0",
		"build_commit": fmt.Sprintf("%08x", 0xec98e200+b), "build_number": 7437 + b,
		"cpu_info": fmt.Sprintf("Fleet CPU %02d", class), "gpu_info": "", "backends": "CPU",
		"host_name":      fmt.Sprintf("node-%04d", i%997),
		"model_filename": name, "model_type": "llama 8B Q4_0", "model_size": 4_660_000_000 + model, "model_n_params": 8_030_000_000,
		"n_prompt": t.p, "n_gen": t.n, "n_depth": 0, "n_parallel": 1, "repetitions": 5, "round": round,
		"test_time":  fmt.Sprintf("2026-12-%02dT%02d:%02d:00Z", 1+i%28, i/60%24, i%60),
		"samples_ts": samples, "avg_ts": avg, "stddev_ts": stddev(samples, avg),
		"median_ts": samples[2], "avg_ns": int64(1e9 * float64(max(t.p, t.n)) / avg),
		"spec_sha256": strings.Repeat("ab", 32),
	}
	shape, _ := json.Marshal(p.Used())
	json.Unmarshal(shape, &rec)
	return rec
}

// asWritten is a record's line as tokbench writes it.
func asWritten(i int, line []byte) ([]byte, error) {
	r, _, err := tbrecord.DecodeLine("scalegen", i+1, line)
	if err != nil {
		return nil, err
	}
	line, err = tbrecord.EncodeLine(&r)
	return bytes.TrimSuffix(line, []byte("\n")), err
}

func stddev(xs []float64, mean float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += (x - mean) * (x - mean)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}
