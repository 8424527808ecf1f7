package point

import (
	"cmp"
	"slices"
)

// Order sorts one-test points so that a run of them does the least work
// that is not measurement:
//   - points of one model are together, so it is loaded once;
//   - within a model, points sharing context settings are together, so a
//     context is built once (sized for the largest of them);
//   - within a context, depth ascends, so the KV cache is filled once and
//     extended, never refilled from zero;
//   - at one depth, tg tests come first (raw before sampled, so the
//     sampled one reuses the raw rate) and pp tests last, longest last: the
//     tokens a test leaves behind then count towards the next depth.
//
// Groups keep the order in which they first appear.
func Order(points []Point) []Point {
	first := map[ModelKey]int{}
	firstCtx := map[ContextKey]int{}
	for i, p := range points {
		if _, ok := first[p.ModelKey()]; !ok {
			first[p.ModelKey()] = i
		}
		if _, ok := firstCtx[p.ContextKey()]; !ok {
			firstCtx[p.ContextKey()] = i
		}
	}
	out := slices.Clone(points)
	slices.SortStableFunc(out, func(a, b Point) int {
		return cmp.Or(
			cmp.Compare(first[a.ModelKey()], first[b.ModelKey()]),
			cmp.Compare(firstCtx[a.ContextKey()], firstCtx[b.ContextKey()]),
			cmp.Compare(a.NDepth, b.NDepth),
			cmp.Compare(testRank(a), testRank(b)),
			cmp.Compare(a.NPrompt+a.NGen, b.NPrompt+b.NGen),
		)
	})
	return out
}

func testRank(p Point) int {
	switch {
	case p.NGen > 0 && p.SamplingName() == "off":
		return 0
	case p.NGen > 0:
		return 1
	}
	return 2
}
