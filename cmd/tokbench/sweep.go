package main

import (
	"cmp"
	"fmt"
	"os"
	"strings"

	"github.com/tokbench/tokbench/baseline"
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/infile"
	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/report"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/sweep"
	"github.com/tokbench/tokbench/sweep/work"
	"github.com/urfave/cli/v2"
)

func sweepCommand() *cli.Command {
	return &cli.Command{
		Name:  "sweep",
		Usage: "measure a grid of points (models x quantizations x depths x batch ...), resumably",
		UsageText: "tokbench sweep -m a.gguf,b.gguf -p 512 -n 128 -d 0,1024,4096 --parallel 1,4 --out results.jsonl\n" +
			"   tokbench sweep --quantize-from model-f16.gguf --types q8_0,q4_k_m -d 0-4096*2 --out results.jsonl\n" +
			"   tokbench sweep --spec examples/sweep.yaml --dry-run",
		Flags: append(append(append(testFlags(),
			&cli.StringFlag{Name: "spec", Usage: "YAML sweep spec (examples/sweep.yaml); flags given too override its keys"},
			listFlag("synth", nil, "synthetic presets (made once in the cache)"),
			listFlag("types", []string{"synth-type"}, "quantizations for --synth and --quantize-from"),
			&cli.StringFlag{Name: "quantize-from", Usage: "F16/BF16/F32 model to quantize to each of --types (cached by file hash and type)"},
			&cli.IntFlag{Name: "max-points", Value: sweep.DefaultMaxPoints, Usage: "refuse a grid of more points than this"},
			&cli.StringSliceFlag{Name: "filter", Usage: "drop the points matching, e.g. 'n_depth>=4096 && parallel>4' (repeatable)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan (points, memory, estimated time) and stop; with --shards N and no --shard, the partition"},
			&cli.StringFlag{Name: "shard", Usage: "measure only this share of the points, I/N (I from 0), or auto: from SLURM_ARRAY_TASK_ID/COUNT or JOB_COMPLETION_INDEX (with --shards)"},
			&cli.IntFlag{Name: "shards", Usage: "how many shards (--shard auto on Kubernetes; --dry-run prints the partition)"},
			&cli.IntFlag{Name: "rounds", Value: 1, Usage: "measure the grid this many times, alternately forward and reversed (ABBA), and merge each point's rounds: drift of the machine moves every point alike"},
			&cli.BoolFlag{Name: "shuffle", Usage: "with --rounds, each round in a random order (from --seed) instead"},
			&cli.StringFlag{Name: "out", Value: "results.jsonl", Usage: "JSONL results file, one record per point, written as measured"},
			&cli.BoolFlag{Name: "resume", Usage: "continue --out, skipping the points it holds"},
			&cli.BoolFlag{Name: "retry-failed", Usage: "with --resume, measure failed points again"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "closing summary format: " + strings.Join(report.Formats, ", ")},
			wideFlag,
			&cli.StringFlag{Name: "baseline-dir", Usage: "flag points whose t/s leaves the range of this folder's baseline (tokbench baseline create)"},
			&cli.Float64Flag{Name: "drift-threshold", Value: 10, Usage: "flag a decode rate that falls by more than this percent from the first to the last quarter of a point's steps (0: off)"},
			&cli.StringFlag{Name: "events", Usage: "write anomaly events (slog JSON lines) to this file instead of stderr"},
			&cli.StringFlag{Name: "test-fault", Hidden: true, Usage: "abort the worker at the point whose key contains this (tests)"},
		), telemetryFlags()...), qualityFlags(true)...),
		Action: doSweep,
	}
}

// specFromFlags starts from --spec (or the defaults) and applies the flags
// that were given; the hash is of the sweep as given (sweep.GivenHash).
func specFromFlags(c *cli.Context) (*sweep.Spec, string, error) {
	threads := host.Read().Cores
	s := sweep.DefaultSpec(threads)
	var file []byte
	if f := c.String("spec"); f != "" {
		var err error
		if s, err = sweep.LoadSpec(f, threads); err != nil {
			return nil, "", err
		}
		file, _ = infile.ReadFile(f)
	}
	var given []string
	for _, name := range sweep.SpecFlags() {
		if c.IsSet(name) {
			given = append(given, name+"="+flagText(c, name))
		}
	}
	s, err := specWith(c, s)
	return s, sweep.GivenHash(file, given), err
}

// specFlags applies the inputs' flags given to s (the models, filters,
// quality) and checks the whole.
func specFlags(c *cli.Context, s *sweep.Spec) (*sweep.Spec, error) {
	if c.IsSet("model") {
		s.Models = sweep.Strs(models(c)...)
	}
	for name, ax := range map[string]*sweep.StrAxis{"synth": &s.Synth, "types": &s.Types} {
		if c.IsSet(name) {
			*ax = sweep.Strs(point.SplitList(list(c, name))...)
		}
	}
	if c.IsSet("filter") {
		s.Filter = sweep.Strs(c.StringSlice("filter")...)
	}
	if c.IsSet("quantize-from") {
		s.QuantizeFrom = c.String("quantize-from")
	}
	if c.IsSet("max-points") {
		s.MaxPoints = c.Int("max-points")
	}
	qualityFromFlags(c, s)
	if err := s.Validate(); err != nil {
		return nil, usageErr(err)
	}
	if err := engine.CheckPlacement(s.Placement()); err != nil {
		return nil, usageErr(err)
	}
	return s, nil
}

// modelList reads -m: a comma list of files, unless the whole value names
// a file (one whose name holds a comma; "\\," also escapes one).
func modelList(v string) []string {
	if fi, err := os.Stat(v); err == nil && fi.Mode().IsRegular() {
		return []string{v}
	}
	return point.SplitList(v)
}

func doSweep(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q: flags come before arguments, and sweep takes none", c.Args().First())
	}
	if err := checkFormat(c.String("output"), report.Formats); err != nil {
		return err
	}
	s, hash, err := specFromFlags(c)
	if err != nil {
		return err
	}
	dir, err := plan.CacheDir()
	if err != nil {
		return err
	}
	var shard sweep.Shard
	if c.IsSet("shard") {
		if shard, err = sweep.ParseShard(c.String("shard"), c.Int("shards")); err != nil {
			return err
		}
		if s.Quality != nil {
			return usagef("--quality evaluates each family of models against its base, which spans shards: run tokbench quality after the merge (tokbench quality --quantize-from SRC --types ...)")
		}
	}
	if n := c.Int("shards"); c.Bool("dry-run") && n > 0 && !c.IsSet("shard") {
		return partitionDryRun(s, dir, n)
	}
	if c.Bool("dry-run") {
		// Nothing is made: models not made yet are planned from their shapes.
		models, points, dropped, err := s.Layout(dir, shard)
		if err != nil {
			return err
		}
		g, err := sweep.DryRun(point.Order(points), models, dropped, measure.DescribeEnv(version))
		if err != nil {
			return err
		}
		if err := report.WriteGrid(os.Stdout, g); err != nil {
			return err
		}
		return qualityDryRun(os.Stdout, s, models)
	}
	models, points, dropped, err := work.Grid(s, dir, os.Stderr, func(path string) error { return checkModel(c, path) }, shard)
	if err != nil {
		return err
	}
	points = point.Order(points) // each model loaded once, each context made once
	if c.Context.Err() != nil {
		return fmt.Errorf("%w while planning: nothing was measured", errInterrupted)
	}
	if len(points) == 0 {
		fmt.Fprintf(os.Stderr, "shard %s has no points: the sweep has fewer models than shards\n", shard)
		return nil
	}
	env := measure.DescribeEnv(version)
	o, closeEvents, err := sweepOptions(c, dir, dropped)
	if err != nil {
		return err
	}
	defer closeEvents()
	o.SpecHash = hash
	if shard.Count > 0 {
		o.Shard = shard.String()
	}
	res, err := sweep.Run(c.Context, points, env, o)
	if err != nil {
		return err
	}
	var qerr error
	if s.Quality != nil && !res.Interrupted {
		qerr = sweepQuality(c, s, models)
	}
	recs := report.Grouped(record.Final(res.Records))
	if err := report.WriteWith(os.Stdout, c.String("output"), recs, report.Options{Wide: c.Bool("wide")}); err != nil {
		return err
	}
	if err := writeTradeoffs(os.Stdout, c.String("output"), c.String("out"), recs); err != nil {
		return err
	}
	if err := sweepEnd(c, res); err != nil {
		return err
	}
	return qerr
}

// partitionDryRun prints how n shards would share the spec's points,
// without making any model.
func partitionDryRun(s *sweep.Spec, cacheDir string, n int) error {
	if n < 1 || n > 4096 {
		return usagef("--shards %d: use 1 to 4096", n)
	}
	refs, err := sweep.Refs(s, cacheDir, false)
	if err != nil {
		return err
	}
	points, _, err := s.Points(refs)
	if err != nil {
		return err
	}
	shares, err := sweep.Shares(points, refs, n)
	if err != nil {
		return err
	}
	return report.WritePartition(os.Stdout, shares)
}

// sweepOptions are how the flags ask the sweep to run.
func sweepOptions(c *cli.Context, cacheDir string, dropped int) (sweep.Options, func(), error) {
	rate, err := telemetryRate(c)
	if err != nil {
		return sweep.Options{}, nil, err
	}
	if r := c.Int("rounds"); r < 1 || r > 100 {
		return sweep.Options{}, nil, usagef("--rounds %d: use 1 to 100", r)
	}
	// Said as run says it: only when asked (a CPU-only machine has no
	// NVML, and devices and doctor say so always).
	if _, err := telemetry.ReadGPUs(); rate > 0 && err != nil && c.Bool("verbose") {
		fmt.Fprintln(os.Stderr, err.Error()+"; sampling the host only")
	}
	watch, closeEvents, err := watchFromFlags(c)
	if err != nil {
		return sweep.Options{}, nil, err
	}
	var exeArgs []string
	for _, d := range c.StringSlice("backend-dir") {
		exeArgs = append(exeArgs, "--backend-dir", d)
	}
	return sweep.Options{Out: c.String("out"), Resume: c.Bool("resume"), RetryFailed: c.Bool("retry-failed"),
		Peaks: &roofline.Cache{Dir: cacheDir}, Watch: watch, ExeArgs: exeArgs, Fault: c.String("test-fault"),
		Telemetry: rate, TelemetryTo: c.String("telemetry-out"), Log: os.Stderr, TTY: isTerminal(os.Stderr), Dropped: dropped,
		Rounds: c.Int("rounds"), Shuffle: c.Bool("shuffle"), Seed: c.Uint64("seed")}, closeEvents, nil
}

// sweepEnd says how a sweep ended: its closing line, how to resume an
// interrupted one, the anomalies it logged, the points that failed.
func sweepEnd(c *cli.Context, res *sweep.Result) error {
	fmt.Fprintf(os.Stderr, "\n%s; results in %s\n", res, c.String("out"))
	if res.Interrupted {
		cmd := strings.Join(os.Args, " ")
		if !c.Bool("resume") {
			cmd += " --resume"
		}
		return fmt.Errorf("%w: every finished point is in %s; continue with:\n  %s", errInterrupted, c.String("out"), cmd)
	}
	if res.Anomalies > 0 {
		fmt.Fprintf(os.Stderr, "%d anomaly event(s): see %s\n", res.Anomalies, cmp.Or(c.String("events"), "the JSON lines above"))
	}
	if res.Failed > 0 {
		return fmt.Errorf("%d point(s) failed; their reasons are above and in %s (--resume --retry-failed measures them again)", res.Failed, c.String("out"))
	}
	return nil
}

// watchFromFlags sets up anomaly events: against the baseline of each
// record's hardware class, and for decode drift.
func watchFromFlags(c *cli.Context) (*sweep.Watch, func(), error) {
	w := &sweep.Watch{DriftPct: c.Float64("drift-threshold")}
	if w.DriftPct < 0 {
		return nil, nil, usagef("--drift-threshold %g: must be 0 (off) or positive", w.DriftPct)
	}
	log, closeFn, err := eventLog(c.String("events"))
	if err != nil {
		return nil, nil, err
	}
	w.Log = log
	if dir := c.String("baseline-dir"); dir != "" {
		w.Expected = (&baseline.Ranges{Dir: dir}).Of
	}
	return w, closeFn, nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func workerCommand() *cli.Command {
	return &cli.Command{
		Name:   "sweep-worker",
		Hidden: true,
		Usage:  "measure points for a sweep (started by tokbench sweep)",
		Action: func(c *cli.Context) error {
			if code := work.ServeWorker(os.Stdin, os.Stdout); code != 0 {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}
