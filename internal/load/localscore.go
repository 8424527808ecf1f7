package load

import (
	"fmt"
	"math"
)

// localScore is localScore's headline figure (localscore.ai) for a run
// of its workload: 10 × ∛(prompt t/s × generation t/s × 1000 / TTFT ms),
// each the mean over the requests. It is localScore's number only when
// the requests ran one at a time on an idle server, as localScore runs
// them (Comparable); Note says why not otherwise.
type localScore struct {
	Score      float64 `json:"score"`
	PromptTs   float64 `json:"prompt_ts"`
	GenTs      float64 `json:"gen_ts"`
	TTFTMs     float64 `json:"ttft_ms"`
	Comparable bool    `json:"comparable"`
	Note       string  `json:"note,omitempty"`
}

// localScoreOf scores the requests served. A request's prompt t/s is its
// prefilled tokens over its time from admission to first token (the
// step that ends its prefill also gives that token, as in LocalScore);
// its generation t/s, the tokens after the first over their time.
func localScoreOf(outs []*Served, closedLoop bool, clients int) *localScore {
	var ls localScore
	n, rejected := 0, 0
	for _, o := range outs {
		if o.Status == statusRejected {
			rejected++
		}
		prefill := (o.TTFTMs - o.QueueMs) / 1000
		if o.Status != StatusOK || o.Abusive || prefill <= 0 || o.OutputTs <= 0 {
			continue
		}
		ls.PromptTs += float64(o.Prompt-o.Reused) / prefill
		ls.GenTs += o.OutputTs
		ls.TTFTMs += o.TTFTMs
		n++
	}
	if n == 0 {
		return nil
	}
	ls.PromptTs, ls.GenTs, ls.TTFTMs = ls.PromptTs/float64(n), ls.GenTs/float64(n), ls.TTFTMs/float64(n)
	ls.Score = 10 * math.Cbrt(ls.PromptTs*ls.GenTs*1000/ls.TTFTMs)
	switch {
	case !closedLoop || clients != 1:
		ls.Note = "not LocalScore's number: it runs one request at a time (use --concurrency 1)"
	case rejected > 0:
		ls.Note = fmt.Sprintf("not LocalScore's number: %d of its tests were turned away by a guard", rejected)
	default:
		ls.Comparable = true
	}
	return &ls
}
