package sweep

import (
	"math/rand/v2"
	"slices"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// roundOrder is the order of round r (1 to rounds) of an interleaved
// sweep: the plan's order in odd rounds and its reverse in even ones, as
// ABBA benchmarks alternate. Over each pair of rounds a point's samples
// then lie symmetrically about the pair's middle in time, whatever its
// place in the plan, so a drift of the machine that is linear in time
// moves every point's mean and median alike (exactly, over an even number
// of rounds) instead of biasing the points measured last. (Rotating the
// order instead would spread the drift, but not cancel it.) With
// shuffle, each round is a permutation drawn from seed and the round.
func roundOrder(points []point.Point, r, rounds int, shuffle bool, seed uint64) []point.Point {
	out := slices.Clone(points)
	switch {
	case shuffle:
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	case r%2 == 0:
		slices.Reverse(out)
	}
	return out
}

// roundKey names one round's measurement of a point.
type roundKey struct {
	key   point.Key
	round int
}

// mergeRounds merges, for every point all of whose rounds are measured
// ok and not yet merged, its round records into one (record.MergeRounds).
func mergeRounds(recs []record.Record, rounds int) []record.Record {
	byKey := map[point.Key][]record.Record{}
	merged := map[point.Key]bool{}
	var order []point.Key
	for _, r := range recs {
		switch {
		case r.Round == 0 && r.Rounds > 0:
			merged[r.Key] = true
		case r.Round > 0 && r.OK():
			if _, ok := byKey[r.Key]; !ok {
				order = append(order, r.Key)
			}
			byKey[r.Key] = append(byKey[r.Key], r)
		}
	}
	var out []record.Record
	for _, k := range order {
		rs := byKey[k]
		if merged[k] || len(rs) != rounds {
			continue
		}
		slices.SortFunc(rs, func(a, b record.Record) int { return a.Round - b.Round })
		out = append(out, record.MergeRounds(rs))
	}
	return out
}
