package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// dist is a distribution of token counts: fixed A, uniform [A, B],
// normal (mean A, sd B, at least 1) or an empirical list.
type dist struct {
	Kind   string  `json:"kind" yaml:"kind"`
	A      float64 `json:"a,omitempty" yaml:"a"`
	B      float64 `json:"b,omitempty" yaml:"b"`
	Values []int   `json:"values,omitempty" yaml:"values"`
}

// Sample draws one count.
func (d dist) Sample(r *rand.Rand) int {
	switch d.Kind {
	case "uniform":
		return int(d.A) + r.IntN(int(d.B-d.A)+1)
	case "normal":
		return max(1, int(math.Round(d.A+d.B*r.NormFloat64())))
	case "empirical":
		return d.Values[r.IntN(len(d.Values))]
	}
	return int(d.A)
}

// Max is the largest count the distribution gives (normal: mean + 4 sd).
func (d dist) Max() int {
	switch d.Kind {
	case "uniform":
		return int(d.B)
	case "normal":
		return int(math.Ceil(d.A + 4*d.B))
	case "empirical":
		m := 0
		for _, v := range d.Values {
			m = max(m, v)
		}
		return m
	}
	return int(d.A)
}

// maxDistTokens bounds a distribution's parameters, in tokens.
const maxDistTokens = 1 << 24

func (d dist) check(what string) error {
	// NaN passes every comparison below, and a huge value overflows the
	// token counts drawn from it.
	if math.IsNaN(d.A) || math.IsNaN(d.B) || math.Abs(d.A) > maxDistTokens || math.Abs(d.B) > maxDistTokens {
		return fmt.Errorf("%s: %g, %g: give token counts of at most %g", what, d.A, d.B, float64(maxDistTokens))
	}
	switch d.Kind {
	case "fixed":
		if d.A < 1 {
			return fmt.Errorf("%s: fixed %g: must be at least 1", what, d.A)
		}
	case "uniform":
		if d.A < 1 || d.B < d.A {
			return fmt.Errorf("%s: uniform %g-%g: need 1 <= a <= b", what, d.A, d.B)
		}
	case "normal":
		if d.A < 1 || d.B < 0 {
			return fmt.Errorf("%s: normal mean %g sd %g: need mean >= 1 and sd >= 0", what, d.A, d.B)
		}
	case "empirical":
		if len(d.Values) == 0 {
			return fmt.Errorf("%s: empirical list is empty", what)
		}
		for _, v := range d.Values {
			if v < 1 {
				return fmt.Errorf("%s: empirical value %d: must be at least 1", what, v)
			}
		}
	default:
		return fmt.Errorf("%s: distribution %q: use fixed, uniform, normal or empirical", what, d.Kind)
	}
	return nil
}

// parseDist reads "256", "uniform:32-256", "normal:128,48" or "list:16,64,256".
func parseDist(s string) (dist, error) {
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		v, err := strconv.Atoi(s)
		if err != nil {
			return dist{}, fmt.Errorf("%q: use N, uniform:A-B, normal:MEAN,SD or list:N,N,...", s)
		}
		return dist{Kind: "fixed", A: float64(v)}, nil
	}
	d := dist{Kind: kind}
	var err error
	switch kind {
	case "uniform":
		a, b, _ := strings.Cut(arg, "-")
		d.A, err = strconv.ParseFloat(a, 64)
		if err == nil {
			d.B, err = strconv.ParseFloat(b, 64)
		}
	case "normal":
		a, b, _ := strings.Cut(arg, ",")
		d.A, err = strconv.ParseFloat(a, 64)
		if err == nil {
			d.B, err = strconv.ParseFloat(b, 64)
		}
	case "list":
		d.Kind = "empirical"
		for _, f := range strings.Split(arg, ",") {
			v, e := strconv.Atoi(strings.TrimSpace(f))
			if e != nil {
				err = e
				break
			}
			d.Values = append(d.Values, v)
		}
	default:
		return d, fmt.Errorf("%q: use N, uniform:A-B, normal:MEAN,SD or list:N,N,...", s)
	}
	if err != nil {
		return d, fmt.Errorf("%q: %w", s, err)
	}
	return d, d.check(s)
}

// UnmarshalYAML takes a distribution as a string ("uniform:32-256") or
// as a mapping of its fields.
func (d *dist) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := parseDist(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		*d = v
		return nil
	}
	type plain dist
	if err := n.Decode((*plain)(d)); err != nil {
		return err
	}
	if err := d.check(d.Kind); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}
