package measure

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/infile"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/quality"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// QualityModel is one model of a quality evaluation.
type QualityModel struct {
	ID   string // as the sweep or the user named it
	Path string
}

// QualityOptions say how models are evaluated for quality.
type QualityOptions struct {
	Text       string  // text file; "": the built-in text (random tokens for synthetic models)
	Tokens     int     // at most this many tokens (whole chunks)
	Ctx        int     // chunk size
	TopK       int     // base tokens cached per row, at most
	Tail       float64 // base probability a cached row may leave out
	Threads    int
	NGPULayers int // -1: all
	Seed       uint64
	Timeout    time.Duration // per model; 0: none
	CacheDir   string
	// Progress, if set, is told after every chunk: the model, chunks done
	// and to do for it, and the time left for the whole evaluation.
	Progress func(model string, done, total int, eta time.Duration)
}

// qualityPlan is what an evaluation checked before it started.
type qualityPlan struct {
	models    []QualityModel
	files     []plan.File
	synthetic bool
}

// checkQuality refuses, before anything is evaluated, models that are not
// versions of one model: another architecture or shape, or another
// vocabulary (a tokenizer that cuts the text differently makes the
// comparison meaningless), and models that do not fit in memory.
func checkQuality(models []QualityModel, o QualityOptions) (*qualityPlan, error) {
	if len(models) == 0 {
		return nil, point.Inputf("no models: give the base model first (-m BASE.gguf), then the models to compare with it")
	}
	if o.Ctx < 16 || o.Ctx > point.MaxTokens {
		return nil, point.Inputf("--ctx %d: must be 16 to %d", o.Ctx, point.MaxTokens)
	}
	if o.TopK < 1 {
		return nil, point.Inputf("--top-k %d: must be positive", o.TopK)
	}
	if o.Tail < 0 || o.Tail >= 1 {
		return nil, point.Inputf("--cache-tail %g: must be at least 0 and below 1", o.Tail)
	}
	if o.Tokens < o.Ctx {
		return nil, point.Inputf("--tokens %d is less than one chunk of --ctx %d: raise --tokens or lower --ctx", o.Tokens, o.Ctx)
	}
	pl := &qualityPlan{models: models}
	var vocab [32]byte
	var base gguf.Hparams
	for i, m := range models {
		pf, err := plan.Read(m.Path)
		if err != nil {
			return nil, err
		}
		f, h := pf.GGUF, pf.H
		toks := f.KV["tokenizer.ggml.tokens"].Strs
		sum := sha256.New()
		for _, t := range toks {
			fmt.Fprintf(sum, "%d:%s", len(t), t)
		}
		var v [32]byte
		copy(v[:], sum.Sum(nil))
		if i == 0 {
			vocab, base = v, h
			_, pl.synthetic = f.KV["tokbench.synthetic"]
		} else {
			switch {
			case h.Arch != base.Arch:
				return nil, point.Inputf("%s is a %s model but the base %s is %s: compare quantizations of one model", m.Path, h.Arch, models[0].Path, base.Arch)
			case h.NLayer != base.NLayer || h.NEmbd != base.NEmbd || h.NFF != base.NFF || h.NHead != base.NHead || h.NExpert != base.NExpert:
				return nil, point.Inputf("%s (%s) is not the shape of the base %s (%s): compare quantizations of one model",
					m.Path, shapeText(h), models[0].Path, shapeText(base))
			case v != vocab || h.NVocab != base.NVocab:
				return nil, point.Inputf("%s has another vocabulary than the base %s (%d and %d tokens, or different tokens): quality can only compare models with one tokenizer",
					m.Path, models[0].Path, h.NVocab, base.NVocab)
			}
		}
		if err := pf.Check(qualityPoint(m.Path, o), free()); err != nil {
			return nil, err
		}
		pl.files = append(pl.files, pf)
	}
	return pl, nil
}

// qualityPoint is the context an evaluation uses, as a point (for the
// memory check and the context's settings).
func qualityPoint(path string, o QualityOptions) point.Point {
	p := point.Defaults(o.Threads)
	p.Model, p.NPrompt, p.NGen, p.NGPULayers = path, o.Ctx, 0, o.NGPULayers
	p.Shape = p.Within(o.Ctx)
	return p
}

// qualityTokens are the tokens evaluated: the text (or the built-in one)
// through the base's tokenizer, or for a synthetic model without a text a
// seeded random stream; and what they are, for the records.
func qualityTokens(ctx context.Context, pl *qualityPlan, o QualityOptions) ([]int32, string, error) {
	vocab, err := engine.LoadVocab(pl.models[0].Path)
	if err != nil {
		return nil, "", err
	}
	defer vocab.Close()
	if o.Text == "" && pl.synthetic {
		return quality.RandomTokens(o.Tokens, vocab.Info.NVocab, 3, o.Seed), fmt.Sprintf("random tokens (seed %d)", o.Seed), nil
	}
	text, name := quality.DefaultText, quality.DefaultTextName
	if o.Text != "" {
		b, err := readPrefix(o.Text, max(1<<20, 64*int64(o.Tokens)))
		if err != nil {
			return nil, "", point.Inputf("--text: %v", err)
		}
		text, name = string(b), o.Text
	}
	toks, err := tokenizeUpTo(ctx, vocab, text, o.Tokens+o.Ctx)
	return toks, name, err
}

// tokenPiece is about how much text one call of the tokenizer gets: its
// time grows faster than the text's length (a 400 KB text took 52 s in one
// call), so a long text goes piece by piece.
const tokenPiece = 16 << 10

// tokenizeUpTo tokenizes text piece by piece, each piece ending at a line
// (or a space) where it can, until at least need tokens are had or the
// text ends; ctx ends it between pieces. Cutting the text changes a token
// or so at each cut, which every model then sees alike.
func tokenizeUpTo(ctx context.Context, vocab *engine.Model, text string, need int) ([]int32, error) {
	var toks []int32
	for len(text) > 0 && len(toks) < need {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := len(text)
		if n > tokenPiece {
			n = tokenPiece
			if i := strings.LastIndexByte(text[:n], '\n'); i > n/2 {
				n = i + 1
			} else if i := strings.LastIndexByte(text[:n], ' '); i > n/2 {
				n = i + 1
			}
			for n > 1 && !utf8.RuneStart(text[n]) { // never inside a character
				n--
			}
		}
		t, err := vocab.Tokenize(text[:n])
		if err != nil {
			return nil, err
		}
		toks, text = append(toks, t...), text[n:]
	}
	return toks, nil
}

// readPrefix reads at most limit bytes of a file, ending at a line or a
// space when it stops early: a text far longer than the tokens asked for
// is not all read and tokenized.
func readPrefix(path string, limit int64) ([]byte, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		b = b[:limit]
		if i := bytes.LastIndexAny(b, " \n"); i > 0 {
			b = b[:i]
		}
	}
	return b, nil
}

// Quality evaluates models[0] (the base) and then each other model on the
// same chunks of tokens, and emits one quality block per model as it is
// done. The base's distributions come from the cache (CacheDir), or are
// computed and cached on the way.
func Quality(ctx context.Context, models []QualityModel, o QualityOptions, env Env, emit func(record.Quality) error) error {
	pl, err := checkQuality(models, o)
	if err != nil {
		return err
	}
	toks, textName, err := qualityTokens(ctx, pl, o)
	if err != nil {
		return err
	}
	nv := int(pl.files[0].GGUF.KV["tokenizer.ggml.tokens"].ArrLen)
	bos := -1
	if v, ok := pl.files[0].GGUF.Int("tokenizer.ggml.bos_token_id"); ok {
		bos = int(v)
	}
	chunks, err := quality.Chunks(toks, o.Ctx, o.Tokens, bos)
	if err != nil {
		return point.Inputf("%v", err)
	}
	baseSum, err := plan.ModelDigest(models[0].Path, o.CacheDir)
	if err != nil {
		return fmt.Errorf("hash %s: %w", models[0].Path, err)
	}
	// A row cannot keep more tokens than the vocabulary has.
	o.TopK = min(o.TopK, nv)
	key := quality.NewKey(baseSum, chunks, o.TopK, o.Tail, nv)
	cachePath := key.Path(o.CacheDir)
	ev := &evaluator{o: o, chunks: chunks, key: key, cachePath: cachePath, start: time.Now(), total: len(chunks) * len(models), files: map[string]plan.File{}}
	for _, f := range pl.files {
		ev.files[f.Path] = f
	}
	common := record.Quality{Kind: record.QualityKind, BaseFile: models[0].Path, BaseSHA256: baseSum, Text: textName,
		Ctx: o.Ctx, Chunks: len(chunks), TopK: o.TopK, CacheTail: o.Tail, Synthetic: pl.synthetic, NThreads: o.Threads}
	common.BuildCommit, common.OllamaVersion, common.Tool = engine.LlamaCommit, engine.OllamaVersion, "tokbench "+env.Version
	common.Machine = env.Machine(o.NGPULayers)
	for i, m := range models {
		q := common
		q.ModelID, q.IsBase = m.ID, i == 0
		if i == 0 {
			err = ev.base(ctx, m, &q)
		} else {
			err = ev.compare(ctx, m, &q)
		}
		if err != nil {
			return fmt.Errorf("quality of %s: %w", m.Path, err)
		}
		if i == 0 {
			common.BaseFileType = q.ModelFileType
			q.BaseFileType = q.ModelFileType
		}
		q.Note = qualityNote(&q)
		if err := emit(q); err != nil {
			return err
		}
	}
	return nil
}

// evaluator runs the passes of one evaluation.
type evaluator struct {
	o         QualityOptions
	chunks    [][]int32
	key       quality.Key
	cachePath string
	start     time.Time
	done      int // chunks evaluated, all models
	total     int
	files     map[string]plan.File // the models' files, read by checkQuality
}

// open loads a model and a context for the chunks (canceled with ctx),
// fills in the block's model, and returns the context and what frees both.
func (ev *evaluator) open(ctx context.Context, m QualityModel, q *record.Quality) (*engine.Context, func(), error) {
	p := qualityPoint(m.Path, ev.o)
	md, err := loadModel(ev.files[m.Path], p)
	if err != nil {
		return nil, nil, err
	}
	c, err := md.NewContext(engine.ContextOptions{NCtx: ev.o.Ctx, Shape: p.Used(), NSeqMax: 1})
	if err != nil {
		md.Close()
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, c.Cancel)
	if ev.o.Timeout > 0 {
		c.SetDeadline(time.Now().Add(ev.o.Timeout))
	}
	meta := md.Meta
	q.ModelFile, q.ModelType, q.ModelSize, q.ModelParams = m.Path, meta.Desc, meta.Size, meta.NParams
	q.ModelFileType, q.ModelFileSize = meta.FileType, meta.FileSize
	q.ModelNLayer, q.ModelNEmbd = meta.NLayer, meta.NEmbd
	if meta.NParams > 0 {
		q.BitsPerWeight = float64(meta.Size) * 8 / float64(meta.NParams)
	}
	q.NGPULayers = ev.o.NGPULayers
	if q.NGPULayers < 0 {
		q.NGPULayers = meta.NLayer + 1
	}
	if q.ModelSHA256, err = plan.ModelDigest(m.Path, ev.o.CacheDir); err != nil {
		stop()
		c.Close()
		md.Close()
		return nil, nil, fmt.Errorf("hash %s: %w", m.Path, err)
	}
	return c, func() { stop(); c.Close(); md.Close() }, nil
}

// tick reports one more chunk done.
func (ev *evaluator) tick(model string, done int) {
	ev.done++
	if ev.o.Progress != nil {
		el := time.Since(ev.start)
		eta := time.Duration(float64(el) / float64(ev.done) * float64(ev.total-ev.done))
		ev.o.Progress(model, done, len(ev.chunks), eta)
	}
}

// base evaluates the base model: from its cache when there is one (no
// decoding), else decoding each chunk and writing the cache.
func (ev *evaluator) base(ctx context.Context, m QualityModel, q *record.Quality) error {
	c, closeAll, err := ev.open(ctx, m, q)
	if err != nil {
		return err
	}
	defer closeAll()
	n, k := quality.Scored(ev.o.Ctx), ev.o.TopK
	rows := engine.NewRows(n, k, ev.o.Tail, false)
	defer rows.Free()
	var tally quality.Tally
	add := func() {
		for r := range n {
			lp := float64(rows.LogNext[r])
			tally.Add(0, true, 0, lp, lp, rows.Tail[r])
		}
	}
	start := time.Now()
	if cr, err := quality.OpenCache(ev.cachePath, ev.key); err == nil {
		defer cr.Close()
		for range ev.chunks {
			if err := cr.Read(rows.N, rows.IDs, rows.LogP, rows.Tail, rows.LogNext); err != nil {
				return err
			}
			add()
		}
		// Nothing was decoded: the time left is the other models'.
		ev.total -= len(ev.chunks)
		ev.start = time.Now()
		q.Figures = tally.Figures()
		q.Note = "base figures from the cache of its distributions"
		return nil
	} else if !errors.Is(err, quality.ErrNoCache) {
		return err
	}
	cw, err := quality.CreateCache(ev.cachePath, ev.key)
	if err != nil {
		return err
	}
	for i, chunk := range ev.chunks {
		if err := c.EvalChunk(chunk, quality.First(ev.o.Ctx), rows); err != nil {
			cw.Abort()
			return err
		}
		if err := cw.Write(rows.N, rows.IDs, rows.LogP, rows.Tail, rows.LogNext); err != nil {
			cw.Abort()
			return err
		}
		add()
		ev.tick(m.ID, i+1)
	}
	if err := cw.Commit(); err != nil {
		return err
	}
	ev.timed(q, start, rows)
	q.Figures = tally.Figures()
	return nil
}

// compare evaluates a model against the cached base.
func (ev *evaluator) compare(ctx context.Context, m QualityModel, q *record.Quality) error {
	c, closeAll, err := ev.open(ctx, m, q)
	if err != nil {
		return err
	}
	defer closeAll()
	cr, err := quality.OpenCache(ev.cachePath, ev.key)
	if err != nil {
		return err
	}
	defer cr.Close()
	n, k := quality.Scored(ev.o.Ctx), ev.o.TopK
	rows := engine.NewRows(n, k, ev.o.Tail, true)
	defer rows.Free()
	baseNext := make([]float32, n)
	var tally quality.Tally
	start := time.Now()
	for i, chunk := range ev.chunks {
		if err := cr.Read(rows.N, rows.IDs, rows.LogP, rows.Tail, baseNext); err != nil {
			return err
		}
		if err := c.EvalChunk(chunk, quality.First(ev.o.Ctx), rows); err != nil {
			return err
		}
		for r := range n {
			tally.Add(rows.KLD[r], rows.Top[r] == 1, float64(rows.DP[r]), float64(rows.LogNext[r]), float64(baseNext[r]), rows.Tail[r])
		}
		ev.tick(m.ID, i+1)
	}
	ev.timed(q, start, rows)
	q.Figures = tally.Figures()
	return nil
}

// timed records a pass's wall time and the share of it in llama_decode.
func (ev *evaluator) timed(q *record.Quality, start time.Time, rows *engine.Rows) {
	wall := time.Since(start)
	q.Seconds = wall.Seconds()
	if wall > 0 {
		q.DecodeShare = rows.DecodeTime().Seconds() / wall.Seconds()
	}
	q.TestTime = time.Now().UTC().Truncate(time.Second)
}

// qualityNote says what a block's figures cannot vouch for.
func qualityNote(q *record.Quality) string {
	var notes []string
	if q.Note != "" {
		notes = append(notes, q.Note)
	}
	if q.Synthetic {
		notes = append(notes, "synthetic model: perplexity means nothing (random weights, random tokens), and KLD measures only the numerical error of the quantization")
	}
	if q.Figures.Bounded() {
		notes = append(notes, fmt.Sprintf("KLD is a lower bound, by about %.0f%% of itself: the cache leaves %.1f%% of the base's probability outside its top %d tokens (raise --top-k)", 100*q.Figures.TailMass, 100*q.Figures.TailMass, q.TopK))
	}
	return strings.Join(notes, "; ")
}

// shapeText names what of a model's shape quality compares.
func shapeText(h gguf.Hparams) string {
	s := fmt.Sprintf("%d layers, embedding %d, feed-forward %d, %d heads", h.NLayer, h.NEmbd, h.NFF, h.NHead)
	if h.NExpert > 0 {
		return s + fmt.Sprintf(", %d experts (%d used)", h.NExpert, h.NExpertUsed)
	}
	return s + ", dense"
}
