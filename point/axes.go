package point

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseInts reads an integer axis as llama-bench writes one: a comma list
// whose items are numbers or ranges: "a-b" (step 1), "a-b+s" (step s),
// "a-b*m" (times m; from 0 it gives 0, then 1, m, m², ...).
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%q: empty item", s)
		}
		vals, err := parseRange(item)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, vals...)
	}
	return out, nil
}

// SplitList reads a list of names as flags give them: comma separated,
// blanks trimmed, empty items dropped; "\\," is a comma inside a name (a
// file called "a,b.gguf").
func SplitList(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if v := strings.TrimSpace(b.String()); v != "" {
			out = append(out, v)
		}
		b.Reset()
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			b.WriteByte(',')
			i++
		case s[i] == ',':
			flush()
		default:
			b.WriteByte(s[i])
		}
	}
	flush()
	return out
}

// maxAxisLen bounds what one range may expand to.
const maxAxisLen = 10000

func parseRange(item string) ([]int, error) {
	// A leading minus is a negative number, not a range (-1 for -ngl).
	dash := strings.Index(item[min(1, len(item)):], "-")
	if dash < 0 {
		v, err := strconv.Atoi(item)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number or a range (a-b, a-b+s, a-b*m)", item)
		}
		return []int{v}, nil
	}
	dash += min(1, len(item))
	first, rest := item[:dash], item[dash+1:]
	op, step := byte('+'), "1"
	if i := strings.IndexAny(rest, "+*"); i >= 0 {
		op, step, rest = rest[i], rest[i+1:], rest[:i]
	}
	a, err1 := strconv.Atoi(first)
	b, err2 := strconv.Atoi(rest)
	k, err3 := strconv.Atoi(step)
	for _, err := range []error{err1, err2, err3} {
		if errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("range %q: a number past 64 bits (at most %d)", item, math.MaxInt64)
		}
	}
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, fmt.Errorf("%q is not a range (a-b, a-b+s, a-b*m)", item)
	}
	if b < a {
		return nil, fmt.Errorf("range %q ends before it starts", item)
	}
	if (op == '+' && k < 1) || (op == '*' && k < 2) {
		return nil, fmt.Errorf("range %q: the step must be at least 1 (+) or 2 (*)", item)
	}
	var out []int
	for v := a; v <= b; {
		out = append(out, v)
		if len(out) > maxAxisLen {
			return nil, fmt.Errorf("range %q has more than %d values", item, maxAxisLen)
		}
		// The next value past b ends the range, checked before it is
		// made: near the 64-bit limit, making it would wrap around.
		switch {
		case op == '+' && v > b-k:
			return out, nil
		case op == '+':
			v += k
		case v == 0:
			v = 1
		case v > b/k:
			return out, nil
		default:
			v *= k
		}
	}
	return out, nil
}
