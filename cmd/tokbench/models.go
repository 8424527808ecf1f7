package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/report"
	"github.com/urfave/cli/v2"
)

func synthCommand() *cli.Command {
	return &cli.Command{
		Name:      "synth",
		Usage:     "write a synthetic model, dense or a mixture of experts (random weights, real shape)",
		UsageText: "tokbench synth --preset llama-8b [--type f16] [--seed N] --out FILE|--cache\n   tokbench synth --n-embd 1024 --n-layer 8 --n-ff 4096 --n-head 16 --n-head-kv 4 --n-vocab 32000 --out FILE\n   tokbench synth --preset tiny-moe --n-expert 16 --n-expert-used 4 [--router same] --out FILE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "preset", Usage: "shape: " + strings.Join(preset.Names(), ", ")},
			&cli.StringFlag{Name: "type", Value: "f16", Usage: "file type: f32, f16, bf16 or a quantization (" + strings.Join(gguf.FileTypes(), ", ") + ")"},
			&cli.Uint64Flag{Name: "seed", Value: 42, Usage: "random seed; the same seed gives the same file"},
			outFlag, deprecatedOutFlag,
			&cli.BoolFlag{Name: "cache", Usage: "write the preset into the cache, where run --synth and sweep --synth find it (instead of --out)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Usage: "threads (default: all)"},
			&cli.IntFlag{Name: "n-vocab", Usage: "vocabulary size (overrides the preset)"},
			&cli.IntFlag{Name: "n-embd", Usage: "embedding width"},
			&cli.IntFlag{Name: "n-layer", Usage: "blocks"},
			&cli.IntFlag{Name: "n-ff", Usage: "feed-forward width"},
			&cli.IntFlag{Name: "n-head", Usage: "attention heads"},
			&cli.IntFlag{Name: "n-head-kv", Usage: "KV heads (GQA)"},
			&cli.IntFlag{Name: "n-ctx-train", Usage: "trained context length"},
			&cli.BoolFlag{Name: "tied", Usage: "tie the output projection to the token embedding"},
			&cli.StringFlag{Name: "arch", Usage: "architecture: llama (dense, or Mixtral's experts) or qwen3moe"},
			&cli.IntFlag{Name: "head-dim", Usage: "head size (default: n-embd / n-head)"},
			&cli.IntFlag{Name: "n-expert", Usage: "experts per layer (0: dense)"},
			&cli.IntFlag{Name: "n-expert-used", Usage: "experts a token is routed to"},
			&cli.IntFlag{Name: "n-ff-exp", Usage: "an expert's feed-forward width (qwen3moe; llama's is n-ff)"},
			&cli.StringFlag{Name: "router", Value: engine.RouterRandom, Usage: "experts' router: random weights, or same (every token to the same experts)"},
		},
		Action: doSynth,
	}
}

func doSynth(c *cli.Context) error {
	s, err := shapeFromFlags(c)
	if err != nil {
		return err
	}
	if _, _, err := gguf.ParseFileType(c.String("type")); err != nil {
		return usageErr(err)
	}
	out, err := outFile(c)
	if err != nil {
		return err
	}
	switch {
	case out != "" && c.Bool("cache"):
		return usagef("give --out FILE.gguf or --cache, not both")
	case out == "" && !c.Bool("cache"):
		return usagef("no output file: give --out FILE.gguf, or --cache to make the preset where run --synth finds it")
	case c.Bool("cache"):
		// A preset as it is, with the default router, goes where
		// run --synth and sweep --synth look for it.
		if !c.IsSet("preset") || len(shapeFlagsSet(c)) > 0 || c.String("router") != engine.RouterRandom {
			return usagef("--cache makes a preset as it is: drop the shape flags and --router, or give --out FILE.gguf")
		}
		dir, err := plan.CacheDir()
		if err != nil {
			return err
		}
		if out, err = plan.SynthPath(dir, c.String("preset"), c.String("type"), c.Uint64("seed")); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		// Made already and whole: a second GPU run on the same scratch
		// folder, or a script run twice, reuses it (a damaged one is
		// made again, as run --synth does).
		if _, _, err := gguf.Inspect(out); err == nil {
			fmt.Fprintf(os.Stderr, "%s is in the cache already (checked): nothing to make\n", out)
			return nil
		}
	}
	if r := c.String("router"); r != engine.RouterRandom && r != engine.RouterSame {
		return usagef("--router %s: use %s or %s", r, engine.RouterRandom, engine.RouterSame)
	}
	start := time.Now()
	last := time.Now()
	// A progress line redrawn with \r on a terminal; into a file or a
	// pipe, a line every 10 s.
	tty, every, cr := isTerminal(os.Stderr), 10*time.Second, ""
	if tty {
		every, cr = time.Second, "\r"
	}
	err = engine.Synthesize(s, out, engine.SynthOptions{
		Type: c.String("type"), Seed: c.Uint64("seed"), Threads: c.Int("threads"), Router: c.String("router"),
		Progress: func(done, total int64) {
			if time.Since(last) > every {
				fmt.Fprintf(os.Stderr, "%s%5.1f%% of %.2f GiB", cr, 100*float64(done)/float64(total), float64(total)/(1<<30))
				if !tty {
					fmt.Fprintln(os.Stderr)
				}
				last = time.Now()
			}
		},
	})
	if err != nil {
		return err
	}
	st, _ := os.Stat(out)
	params := fmt.Sprintf("%d params", s.Params())
	if s.MoE() {
		params += fmt.Sprintf(" (%d active: %d of %d experts)", s.ActiveParams(), s.NExpertUsed, s.NExpert)
	}
	fmt.Fprintf(os.Stderr, "%swrote %s: %s %s, %s, %.1f MiB in %.1fs\n", cr, out, s.Name, c.String("type"), params, float64(st.Size())/(1<<20), time.Since(start).Seconds())
	return nil
}

// shapeFlags are synth's flags that change a shape's dimensions.
func shapeFlags(s *preset.Shape) map[string]*int {
	return map[string]*int{"n-vocab": &s.NVocab, "n-embd": &s.NEmbd, "n-layer": &s.NLayer, "n-ff": &s.NFF,
		"n-head": &s.NHead, "n-head-kv": &s.NHeadKV, "n-ctx-train": &s.NCtxTrain, "head-dim": &s.HeadSize,
		"n-expert": &s.NExpert, "n-expert-used": &s.NExpertUsed, "n-ff-exp": &s.NFFExp}
}

// shapeFlagsSet are the shape flags given (--arch and --tied count).
func shapeFlagsSet(c *cli.Context) []string {
	var set []string
	for name := range shapeFlags(&preset.Shape{}) {
		if c.IsSet(name) {
			set = append(set, name)
		}
	}
	for _, name := range []string{"arch", "tied"} {
		if c.IsSet(name) {
			set = append(set, name)
		}
	}
	return set
}

// shapeFromFlags is the --preset's shape with the dimensions given as
// flags in its place, or a custom shape of those dimensions.
func shapeFromFlags(c *cli.Context) (preset.Shape, error) {
	s := preset.Shape{Name: "custom", NCtxTrain: 4096, RopeBase: 10000}
	if c.IsSet("preset") {
		var err error
		if s, err = preset.Lookup(c.String("preset")); err != nil {
			return s, usageErr(err)
		}
	} else if !c.IsSet("n-embd") {
		return s, usagef("give --preset NAME (%s) or the dimensions (--n-embd, --n-layer, ...)", strings.Join(preset.Names(), ", "))
	}
	for name, dst := range shapeFlags(&s) {
		if c.IsSet(name) {
			*dst = c.Int(name)
		}
	}
	if c.IsSet("tied") {
		s.Tied = c.Bool("tied")
	}
	if c.IsSet("arch") {
		s.Arch = c.String("arch")
	}
	if c.IsSet("n-expert") && c.Int("n-expert") == 0 {
		s.NExpertUsed, s.NFFExp = 0, 0 // dense
	}
	if s.NHeadKV == 0 {
		s.NHeadKV = s.NHead
	}
	if s.NVocab == 0 {
		s.NVocab = 32000
	}
	if err := s.Check(); err != nil {
		return s, usageErr(err)
	}
	return s, nil
}

func quantizeCommand() *cli.Command {
	return &cli.Command{
		Name:      "quantize",
		Usage:     "quantize a model with llama.cpp's quantizer",
		UsageText: "tokbench quantize -m IN.gguf --type q4_k_m --out OUT.gguf [-t N]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "source model (F32, F16 or BF16)"},
			&cli.StringFlag{Name: "type", Usage: "target: " + strings.Join(gguf.FileTypes(), ", ")},
			outFlag, deprecatedOutFlag,
			&cli.BoolFlag{Name: "cache", Usage: "write the preset into the cache, where run --synth and sweep --synth find it (instead of --out)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Usage: "threads (default: all)"},
			&cli.BoolFlag{Name: "allow-requantize", Usage: "allow an already quantized source"},
			&cli.BoolFlag{Name: "pure", Usage: "one type for every tensor (no k-quant mixture)"},
		},
		Action: func(c *cli.Context) error {
			out, err := outFile(c)
			if err != nil {
				return err
			}
			in, typ := c.String("model"), c.String("type")
			if in == "" || out == "" || typ == "" {
				return usagef("quantize needs -m IN.gguf, --type TYPE and --out OUT.gguf")
			}
			if _, _, err := gguf.ParseFileType(typ); err != nil {
				return usageErr(err)
			}
			if err := checkModel(c, in); err != nil {
				return err
			}
			start := time.Now()
			if err := engine.Quantize(in, out, typ, engine.QuantizeOptions{Threads: c.Int("threads"), AllowRequantize: c.Bool("allow-requantize"), Pure: c.Bool("pure")}); err != nil {
				return err
			}
			si, _ := os.Stat(in)
			so, _ := os.Stat(out)
			fmt.Fprintf(os.Stderr, "wrote %s: %.1f MiB -> %.1f MiB (%.1f%%) in %.1fs\n", out, float64(si.Size())/(1<<20), float64(so.Size())/(1<<20),
				100*float64(so.Size())/float64(si.Size()), time.Since(start).Seconds())
			return nil
		},
	}
}

func infoCommand() *cli.Command {
	return &cli.Command{
		Name:      "info",
		Usage:     "validate a GGUF model and print its shape and tensor types (no llama.cpp involved)",
		UsageText: "tokbench info MODEL.gguf   (or -m MODEL.gguf)",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "GGUF model file"}},
		Action: func(c *cli.Context) error {
			path := c.String("model")
			switch {
			case path == "" && c.NArg() == 1:
				path = c.Args().First() // as report takes its file
			case c.NArg() > 0:
				return usagef("give one model: tokbench info MODEL.gguf")
			case path == "":
				return usagef("give a model: tokbench info MODEL.gguf")
			}
			f, h, err := gguf.Inspect(path)
			if err != nil {
				return err
			}
			return report.ModelInfo(os.Stdout, path, f, h)
		},
	}
}

// synth and quantize write a file: --out names it, as in every command
// (-o is the output format elsewhere); -o FILE still works, with a note.
var (
	outFlag           = &cli.StringFlag{Name: "out", Usage: "output file"}
	deprecatedOutFlag = &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Hidden: true, Usage: "output file (deprecated: use --out)"}
)

func outFile(c *cli.Context) (string, error) {
	out := c.String("out")
	if out == "" && c.String("output") != "" {
		fmt.Fprintln(os.Stderr, "tokbench: -o FILE is deprecated for synth and quantize: use --out FILE (-o is the output format in every other command)")
		out = c.String("output")
	}
	if out != "" {
		if err := safefile.CheckOut(out, false); err != nil {
			return "", usagef("--out %v", err)
		}
	}
	return out, nil
}
