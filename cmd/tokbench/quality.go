package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/isolate"
	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/quality"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/report"
	"github.com/tokbench/tokbench/sweep"
	"github.com/tokbench/tokbench/sweep/work"
	"github.com/urfave/cli/v2"
)

func qualityCommand() *cli.Command {
	return &cli.Command{
		Name:  "quality",
		Usage: "what quantizing cost: each model's KL divergence, top-token agreement and perplexity against the base, on the same tokens",
		UsageText: "tokbench quality -m BASE.gguf -m Q4_K_M.gguf [-m ...] [--text FILE] [--tokens 4096] [--ctx 512] [--out results.jsonl]\n" +
			"   tokbench quality --quantize-from BASE.gguf --types q8_0,q4_k_m [...]",
		Flags:  qualityFlags(false),
		Action: doQuality,
	}
}

// qualityFlags are quality's settings; in a sweep (prefixed) they are
// named quality-text, quality-tokens, ...
func qualityFlags(inSweep bool) []cli.Flag {
	name := func(n string) string {
		if inSweep {
			return "quality-" + n
		}
		return n
	}
	flags := []cli.Flag{
		&cli.StringFlag{Name: name("text"), Usage: "text to evaluate on, tokenized with the model's vocabulary (default: tokbench's own README, built in; random tokens for synthetic models)"},
		&cli.IntFlag{Name: name("tokens"), Value: quality.DefaultTokens, Usage: "evaluate at most this many tokens (whole chunks)"},
		&cli.IntFlag{Name: name("ctx"), Value: quality.DefaultCtx, Usage: "chunk size: each chunk's second half is scored"},
		&cli.IntFlag{Name: name("top-k"), Value: quality.DefaultTopK, Usage: "base tokens the cache keeps per scored token, at most (the rest as one tail)"},
		&cli.Float64Flag{Name: name("cache-tail"), Value: quality.DefaultTail, Usage: "base probability a cached position may leave in its tail (0: keep up to --top-k tokens)"},
	}
	if inSweep {
		return append([]cli.Flag{&cli.BoolFlag{Name: "quality", Usage: "also evaluate quality: each model against --quantize-from's source (or the first model)"}}, flags...)
	}
	return append(flags,
		&cli.StringSliceFlag{Name: "model", Aliases: []string{"m"}, Usage: "model file; the first is the base, repeat for each model"},
		&cli.StringFlag{Name: "quantize-from", Usage: "the base: an F16/BF16/F32 model, quantized to each of --types (cached)"},
		&cli.StringFlag{Name: "types", Usage: "quantizations of --quantize-from, comma-separated"},
		&cli.StringFlag{Name: "model-ids", Hidden: true, Usage: "names of the -m models, comma-separated (sweep --quality)"},
		&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: host.Read().Cores, Usage: "CPU threads"},
		&cli.IntFlag{Name: "n-gpu-layers", Aliases: []string{"ngl"}, Value: -1, Usage: "layers to offload to the GPU (-1: all)"},
		&cli.Uint64Flag{Name: "seed", Value: 42, Usage: "seed of the random tokens of synthetic models"},
		&cli.DurationFlag{Name: "timeout", Value: 2 * time.Hour, Usage: "time limit for each model's evaluation (0: none)"},
		&cli.StringFlag{Name: "out", Usage: "append the quality blocks to this results file (JSONL, a sweep's file too)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output format: " + strings.Join(report.QualityFormats, ", ")},
	)
}

// qualityOptions reads the settings.
func qualityOptions(c *cli.Context, cacheDir string) (measure.QualityOptions, error) {
	o := measure.QualityOptions{Text: c.String("text"), Tokens: c.Int("tokens"), Ctx: c.Int("ctx"), TopK: c.Int("top-k"),
		Tail: c.Float64("cache-tail"), Threads: c.Int("threads"), NGPULayers: c.Int("n-gpu-layers"), Seed: c.Uint64("seed"),
		Timeout: c.Duration("timeout"), CacheDir: cacheDir}
	if o.Tokens > point.MaxTokens {
		return o, usagef("--tokens %d: at most %d", o.Tokens, point.MaxTokens)
	}
	if o.Threads < 1 {
		return o, usagef("--threads %d: must be positive", o.Threads)
	}
	return o, nil
}

func doQuality(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q: give models with -m, once each", c.Args().First())
	}
	format := c.String("output")
	if err := checkFormat(format, report.QualityFormats); err != nil {
		return err
	}
	dir, err := plan.CacheDir()
	if err != nil {
		return err
	}
	o, err := qualityOptions(c, dir)
	if err != nil {
		return err
	}
	models, err := qualityModels(c, dir)
	if err != nil {
		return err
	}
	for _, m := range models {
		if err := checkModel(c, m.Path); err != nil {
			return err
		}
	}
	out, err := openOut(c.String("out"))
	if err != nil {
		return err
	}
	defer out.Close()
	o.Progress = qualityProgress(os.Stderr, isTerminal(os.Stderr))
	var blocks []record.Quality
	err = measure.Quality(c.Context, models, o, measure.DescribeEnv(version), func(q record.Quality) error {
		blocks = append(blocks, q)
		timing := "from the cache"
		if q.Seconds > 0 {
			timing = fmt.Sprintf("in %.1fs, %.1f%% of it in llama_decode", q.Seconds, 100*q.DecodeShare)
		}
		fmt.Fprintf(os.Stderr, "%s: KLD %.6f, top-1 %.2f%% %s\n", q.ModelID, q.Figures.KLD.Mean, q.Figures.Top1Pct, timing)
		if out != nil {
			return out.Append(q)
		}
		return nil
	})
	// What was evaluated is printed even when a later model failed.
	if len(blocks) > 0 {
		if werr := report.WriteQuality(os.Stdout, format, blocks); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// qualityModels are the models to evaluate, the base first: -m files (named
// by --model-ids when a sweep starts the command), or --quantize-from's
// source and its quantizations.
func qualityModels(c *cli.Context, cacheDir string) ([]measure.QualityModel, error) {
	paths := c.StringSlice("model")
	if src := c.String("quantize-from"); src != "" {
		if len(paths) > 0 {
			return nil, usagef("give either -m models or --quantize-from with --types, not both")
		}
		if c.String("types") == "" {
			return nil, usagef("--quantize-from needs --types: the quantizations to compare with it")
		}
		s := &sweep.Spec{Inputs: sweep.Inputs{QuantizeFrom: src}}
		s.Types.Values = point.SplitList(c.String("types"))
		refs, err := work.Models(s, cacheDir, os.Stderr, func(path string) error { return checkModel(c, path) })
		if err != nil {
			return nil, err
		}
		models := []measure.QualityModel{{ID: src, Path: src}}
		for _, r := range refs {
			models = append(models, measure.QualityModel{ID: r.ID, Path: r.Path})
		}
		return models, nil
	}
	if len(paths) == 0 {
		return nil, usagef("no models: give the base first and then the models to compare (-m BASE.gguf -m Q4_K_M.gguf), or --quantize-from BASE.gguf --types q4_k_m")
	}
	ids := point.SplitList(c.String("model-ids"))
	if len(ids) > 0 && len(ids) != len(paths) {
		return nil, usagef("--model-ids names %d models but -m gives %d", len(ids), len(paths))
	}
	var models []measure.QualityModel
	for i, p := range paths {
		id := p
		if len(ids) > 0 {
			id = ids[i]
		}
		models = append(models, measure.QualityModel{ID: id, Path: p})
	}
	return models, nil
}

// qualityProgress prints each chunk's progress: on a terminal over one
// line (cleared when a model is done), elsewhere a line each.
func qualityProgress(w io.Writer, tty bool) func(model string, done, total int, eta time.Duration) {
	return func(model string, done, total int, eta time.Duration) {
		line := fmt.Sprintf("quality %s: chunk %d/%d, about %s left", cmp.Or(model, "?"), done, total, eta.Round(time.Second))
		switch {
		case !tty:
			fmt.Fprintln(w, line)
		case done == total:
			fmt.Fprintf(w, "\r%*s\r", len(line), "")
		default:
			fmt.Fprintf(w, "\r%s", line)
		}
	}
}

// qualityFromFlags sets the spec's quality from --quality and the
// --quality-* flags (any of which asks for it).
func qualityFromFlags(c *cli.Context, s *sweep.Spec) {
	names := []string{"text", "tokens", "ctx", "top-k", "cache-tail"}
	asked := c.Bool("quality")
	for _, n := range names {
		asked = asked || c.IsSet("quality-"+n)
	}
	if !asked {
		return
	}
	if s.Quality == nil {
		s.Quality = sweep.DefaultQuality()
	}
	q := s.Quality
	if c.IsSet("quality-text") {
		q.Text = c.String("quality-text")
	}
	if c.IsSet("quality-tokens") {
		q.Tokens = c.Int("quality-tokens")
	}
	if c.IsSet("quality-ctx") {
		q.Ctx = c.Int("quality-ctx")
	}
	if c.IsSet("quality-top-k") {
		q.TopK = c.Int("quality-top-k")
	}
	if c.IsSet("quality-cache-tail") {
		q.CacheTail = c.Float64("quality-cache-tail")
	}
}

// sweepQuality runs a sweep's quality evaluations, each in a child
// process appending to the results file, skipping those it already holds.
func sweepQuality(c *cli.Context, s *sweep.Spec, models []sweep.ModelRef) error {
	have, err := record.ReadQuality(c.String("out"))
	if err != nil {
		return err
	}
	var args []string
	for _, d := range c.StringSlice("backend-dir") {
		args = append(args, "--backend-dir", d)
	}
	self, err := isolate.Self(args...)
	if err != nil {
		return err
	}
	run := sweep.QualityRun{Cmd: self, Out: c.String("out"), Threads: s.Ints("threads")[0], NGL: s.Ints("n_gpu_layers")[0], Seed: s.Seed(), Log: os.Stderr}
	var errs []error
	for _, g := range sweep.QualityGroups(s, models) {
		if g.Done(have, s.Quality) {
			fmt.Fprintf(os.Stderr, "quality of %s and its %d model(s): already in %s\n", g.Base.ID, len(g.Others), c.String("out"))
			continue
		}
		if err := run.Run(c.Context, g, s.Quality); err != nil {
			if c.Context.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// qualityDryRun says which quality evaluations a sweep would run.
func qualityDryRun(w io.Writer, s *sweep.Spec, models []sweep.ModelRef) error {
	if s.Quality == nil {
		return nil
	}
	for _, g := range sweep.QualityGroups(s, models) {
		var ids []string
		for _, m := range g.Others {
			ids = append(ids, m.ID)
		}
		fmt.Fprintf(w, "quality: %s against the base %s, %d tokens in chunks of %d\n", cmp.Or(strings.Join(ids, ", "), "nothing"), g.Base.ID, s.Quality.Tokens, s.Quality.Ctx)
	}
	return nil
}

// writeTradeoffs writes, after a speed table, the quality blocks of the
// results file joined to the speed records (table and md only).
func writeTradeoffs(w io.Writer, format, path string, recs []record.Record) error {
	if format != "table" && format != "md" {
		return nil
	}
	blocks, err := record.ReadQuality(path)
	if err != nil || len(blocks) == 0 {
		return err
	}
	fmt.Fprintln(w)
	return report.WriteTradeoffs(w, format == "md", report.Tradeoffs(recs, blocks))
}
