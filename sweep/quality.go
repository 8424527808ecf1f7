package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/internal/isolate"
	"github.com/tokbench/tokbench/internal/quality"
	"github.com/tokbench/tokbench/record"
	"gopkg.in/yaml.v3"
)

// qualitySpec asks a sweep to evaluate its models' quality too (the
// "quality" key; sweep --quality): each against its family's base, on the
// same tokens (tokbench quality).
type qualitySpec struct {
	Text      string  `yaml:"text"`       // text file ("": the built-in text, random tokens for synthetic models)
	Tokens    int     `yaml:"tokens"`     // at most
	Ctx       int     `yaml:"ctx"`        // chunk size
	TopK      int     `yaml:"top_k"`      // base tokens cached per position, at most
	CacheTail float64 `yaml:"cache_tail"` // base probability a cached position may leave out
}

// DefaultQuality is tokbench quality's defaults.
func DefaultQuality() *qualitySpec {
	return &qualitySpec{Tokens: quality.DefaultTokens, Ctx: quality.DefaultCtx, TopK: quality.DefaultTopK, CacheTail: quality.DefaultTail}
}

// UnmarshalYAML reads the keys given over the defaults ("quality: {}"
// asks for the defaults).
func (q *qualitySpec) UnmarshalYAML(n *yaml.Node) error {
	// A nested decoder does not refuse unknown keys as LoadSpec's does.
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			switch k := n.Content[i].Value; k {
			case "text", "tokens", "ctx", "top_k", "cache_tail":
			default:
				return fmt.Errorf("line %d: quality has no key %q: its keys are text, tokens, ctx, top_k, cache_tail", n.Content[i].Line, k)
			}
		}
	}
	type plain qualitySpec
	v := plain(*DefaultQuality())
	if err := n.Decode(&v); err != nil {
		return err
	}
	*q = qualitySpec(v)
	return nil
}

func (q *qualitySpec) validate() error {
	switch {
	case q.Ctx < 16:
		return fmt.Errorf("quality: ctx %d must be at least 16", q.Ctx)
	case q.Tokens < q.Ctx:
		return fmt.Errorf("quality: tokens %d is less than one chunk of ctx %d", q.Tokens, q.Ctx)
	case q.TopK < 1:
		return fmt.Errorf("quality: top_k %d must be positive", q.TopK)
	case q.CacheTail < 0 || q.CacheTail >= 1:
		return fmt.Errorf("quality: cache_tail %g must be at least 0 and below 1", q.CacheTail)
	}
	return nil
}

// qualityGroup is one quality evaluation of a sweep: a base and the models
// compared with it.
type qualityGroup struct {
	Base   ModelRef
	Others []ModelRef
}

// QualityGroups are the families of a sweep's models, each with its base:
// --quantize-from's source and its quantizations; each --synth preset's
// types, the first type the base; the -m files, the first the base.
func QualityGroups(s *Spec, models []ModelRef) []qualityGroup {
	var groups []qualityGroup
	at := map[string]int{}
	for _, m := range models {
		family, base := "files", ModelRef{}
		switch kind, rest, _ := strings.Cut(m.ID, ":"); {
		case kind == "quant" && s.QuantizeFrom != "":
			family, base = "quant", ModelRef{ID: s.QuantizeFrom, Path: s.QuantizeFrom}
		case kind == "synth":
			family = "synth:" + strings.SplitN(rest, ":", 2)[0]
		}
		i, ok := at[family]
		if !ok {
			if base.Path == "" {
				base, m = m, ModelRef{}
			}
			at[family], i = len(groups), len(groups)
			groups = append(groups, qualityGroup{Base: base})
		}
		if m.Path != "" {
			groups[i].Others = append(groups[i].Others, m)
		}
	}
	return groups
}

// Done says whether the results file already holds this group's blocks
// for these settings (a resumed sweep does not evaluate them again).
func (g qualityGroup) Done(blocks []record.Quality, q *qualitySpec) bool {
	have := map[string]bool{}
	for _, b := range blocks {
		if b.BaseFile == g.Base.Path && b.Ctx == q.Ctx && b.TopK <= q.TopK && b.CacheTail == q.CacheTail {
			have[b.ModelFile] = true
		}
	}
	for _, m := range append([]ModelRef{g.Base}, g.Others...) {
		if !have[m.Path] {
			return false
		}
	}
	return true
}

// QualityRun is how a sweep starts its quality evaluations: tokbench
// quality in a child process (a model llama.cpp aborts on costs that
// group, not the sweep), appending to the results file.
type QualityRun struct {
	Cmd     isolate.Cmd
	Out     string
	Threads int
	NGL     int
	Seed    uint64
	Log     io.Writer // the child's progress
}

// Run evaluates one group.
func (r QualityRun) Run(ctx context.Context, g qualityGroup, q *qualitySpec) error {
	args := []string{"--out", r.Out, "--tokens", strconv.Itoa(q.Tokens), "--ctx", strconv.Itoa(q.Ctx),
		"--top-k", strconv.Itoa(q.TopK), "--cache-tail", strconv.FormatFloat(q.CacheTail, 'g', -1, 64),
		"--threads", strconv.Itoa(r.Threads), "--n-gpu-layers", strconv.Itoa(r.NGL), "--seed", strconv.FormatUint(r.Seed, 10)}
	if q.Text != "" {
		args = append(args, "--text", q.Text)
	}
	ids := []string{g.Base.ID}
	args = append(args, "-m", g.Base.Path)
	for _, m := range g.Others {
		args = append(args, "-m", m.Path)
		ids = append(ids, m.ID)
	}
	args = append(args, "--model-ids", strings.Join(ids, ","))
	cmd := r.Cmd.Command(ctx, "quality", args...)
	var log isolate.Log
	cmd.Stdout = io.Discard
	cmd.Stderr = io.MultiWriter(r.Log, &log)
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &ee):
		if msg := log.Aborted(); msg != "" {
			return fmt.Errorf("quality of %s: llama.cpp aborted: %s", g.Base.ID, msg)
		}
		return fmt.Errorf("quality of %s: %s", g.Base.ID, strings.TrimPrefix(log.Last(), "tokbench: "))
	}
	return fmt.Errorf("quality of %s: %w", g.Base.ID, err)
}
