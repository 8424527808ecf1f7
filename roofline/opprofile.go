package roofline

import (
	"cmp"
	"slices"
	"strings"
)

// Node is one computed graph node of a profiled step (llama.cpp's graph
// evaluation callback).
type Node struct {
	Op   string // ggml's op: MUL_MAT, FLASH_ATTN_EXT, SILU, ...
	Type string // the weight's or K cache's type, for matrix products, lookups and attention
	Name string // the tensor's name, e.g. "ffn_up-3"
	Ns   int64
}

// ProfileGroup is the nodes of one kind in a step: op, type and the
// tensor's role (its name without the layer).
type ProfileGroup struct {
	Name  string  `json:"name"`
	Nodes float64 `json:"nodes_per_step"`
	Ms    float64 `json:"ms_per_step"`
	Share float64 `json:"share"` // of the profiled step
}

// OpProfile is where a real step's time went, node by node. Observing
// every node makes llama.cpp compute and synchronize one node at a time,
// so the profiled step is slower than the unprofiled one; both are given.
type OpProfile struct {
	Test         string         `json:"test"`
	Model        string         `json:"model"`
	Backend      string         `json:"backend"`
	Steps        int            `json:"steps"`
	UnprofiledMs float64        `json:"unprofiled_ms"` // a step without observation
	ProfiledMs   float64        `json:"profiled_ms"`   // a step observed node by node
	NodesMs      float64        `json:"nodes_ms"`      // the nodes' sum
	BuildMs      float64        `json:"build_ms"`      // step start to the first node
	BetweenMs    float64        `json:"between_ms"`    // between nodes
	TailMs       float64        `json:"tail_ms"`       // after the last node
	Groups       []ProfileGroup `json:"groups"`
}

// Group sums a profile's nodes per kind, per step, longest first.
func Group(nodes []Node, steps int) []ProfileGroup {
	idx := map[string]int{}
	var out []ProfileGroup
	var total float64
	for _, n := range nodes {
		name := nodeGroup(n)
		i, ok := idx[name]
		if !ok {
			i = len(out)
			idx[name] = i
			out = append(out, ProfileGroup{Name: name})
		}
		ms := float64(n.Ns) / 1e6 / float64(max(steps, 1))
		out[i].Nodes += 1 / float64(max(steps, 1))
		out[i].Ms += ms
		total += ms
	}
	for i := range out {
		if total > 0 {
			out[i].Share = out[i].Ms / total
		}
	}
	slices.SortStableFunc(out, func(a, b ProfileGroup) int { return cmp.Compare(b.Ms, a.Ms) })
	return out
}

// noCompute are the ops that only relabel memory.
var noCompute = map[string]bool{"VIEW": true, "RESHAPE": true, "PERMUTE": true, "TRANSPOSE": true, "NONE": true}

// nodeGroup names a node's kind: op, type, and the tensor's role, which
// is its name without the layer ("ffn_up-3" is ffn_up, "cache_k_l3"
// cache_k, "k_cache_view-3 (copy)" k_cache_view).
func nodeGroup(n Node) string {
	if noCompute[n.Op] {
		return "view, reshape, permute (no compute)"
	}
	role, _, _ := strings.Cut(n.Name, " ")
	for _, sep := range []string{"-", "_l"} {
		if i := strings.LastIndex(role, sep); i > 0 && i+len(sep) < len(role) && strings.Trim(role[i+len(sep):], "0123456789") == "" {
			role = role[:i]
		}
	}
	name := strings.ToLower(n.Op)
	if n.Type != "" {
		name += " " + n.Type
	}
	if role != "" {
		name += " (" + role + ")"
	}
	return name
}
