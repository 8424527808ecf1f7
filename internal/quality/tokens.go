package quality

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
)

// DefaultText is the text evaluated when none is given: a snapshot of
// tokbench's own README (the project's own words, so it may be shipped),
// kept fixed so that figures stay comparable between releases.
//
//go:embed text/tokbench-readme.md
var DefaultText string

// DefaultTextName says which text DefaultText is, in records.
const DefaultTextName = "tokbench README (built in)"

// RandomTokens is a seeded stream of n tokens drawn uniformly from
// [first, vocab): the input of a synthetic model, whose vocabulary has no
// real words to tokenize.
func RandomTokens(n, vocab, first int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 0x746f6b62656e6368))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(first + r.IntN(vocab-first))
	}
	return out
}

// Chunks cuts tokens into as many whole chunks of ctx as they hold, at
// most limit tokens in all (0: no limit), each beginning with bos when
// the model has one (bos >= 0), as llama-perplexity does. It refuses a
// stream shorter than one chunk.
func Chunks(tokens []int32, ctx, limit, bos int) ([][]int32, error) {
	if ctx < 4 {
		return nil, fmt.Errorf("chunk size %d: must be at least 4 tokens", ctx)
	}
	n := len(tokens)
	if limit > 0 {
		n = min(n, limit)
	}
	if n < ctx {
		return nil, fmt.Errorf("the text gives %d tokens but one chunk of --ctx needs %d: give a longer --text, or lower --ctx", len(tokens), ctx)
	}
	var out [][]int32
	for i := 0; i+ctx <= n; i += ctx {
		c := append([]int32(nil), tokens[i:i+ctx]...)
		if bos >= 0 {
			c[0] = int32(bos)
		}
		out = append(out, c)
	}
	return out, nil
}

// First is the first scored position of a chunk of ctx tokens: the second
// half is scored, so that every scored token has at least ctx/2 tokens of
// context (llama-perplexity's rule).
func First(ctx int) int { return ctx / 2 }

// Scored is the number of rows scored in a chunk of ctx tokens.
func Scored(ctx int) int { return ctx - 1 - First(ctx) }
