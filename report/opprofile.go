package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tokbench/tokbench/roofline"
)

// ProfileFormats are the formats of tokbench profile.
var ProfileFormats = []string{"table", "json", "md", "html"}

// profileRows is how many groups a profile shows by name; the rest are
// summed in one row.
const profileRows = 15

// WriteOpProfiles writes op profiles in a format.
func WriteOpProfiles(w io.Writer, format string, ps []roofline.OpProfile) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ps)
	case "html":
		var b strings.Builder
		pageStart(&b, "tokbench profile")
		for _, p := range ps {
			fmt.Fprintf(&b, "<h2>%s</h2>\n<p>%s</p>\n", esc(p.Test+": "+p.Model+", "+p.Backend), esc(profileNote(p)))
			labels, vals := profileBars(p)
			title := fmt.Sprintf("%s: ms per step by op (profiled)", p.Test)
			fmt.Fprintf(&b, "<figure>%s</figure>\n<pre>", barChart(title, "ms per step", labels, vals, make([]int, len(vals)), nil, 0, false))
			var t strings.Builder
			profileTable(&t, p)
			b.WriteString(esc(t.String()) + "</pre>\n")
		}
		b.WriteString("</body></html>\n")
		_, err := io.WriteString(w, b.String())
		return err
	case "md":
		for _, p := range ps {
			fmt.Fprintf(w, "## %s: %s, %s\n\n%s\n\n| op | ms/step | share | nodes/step |\n| --- | ---: | ---: | ---: |\n", p.Test, p.Model, p.Backend, profileNote(p))
			for _, r := range profileLines(p) {
				fmt.Fprintln(w, mdRow([]string{r.name, fmt.Sprintf("%.3f", r.ms), r.share, r.nodes}))
			}
			fmt.Fprintln(w)
		}
		return nil
	}
	for _, p := range ps {
		fmt.Fprintf(w, "%s: %s, %s\n%s\n", p.Test, p.Model, p.Backend, profileNote(p))
		var t strings.Builder
		profileTable(&t, p)
		io.WriteString(w, t.String()+"\n")
	}
	return nil
}

// profileNote sets the profiled step beside the unprofiled one.
func profileNote(p roofline.OpProfile) string {
	return fmt.Sprintf("step %.3f ms unprofiled, %.3f ms profiled (%+.0f%%): observing every node makes llama.cpp compute and synchronize one node at a time, so the profiled times are inflated; read the shares, not the sum",
		p.UnprofiledMs, p.ProfiledMs, 100*(p.ProfiledMs/p.UnprofiledMs-1))
}

type profileLine struct {
	name, share, nodes string
	ms                 float64
}

// profileLines are the longest groups, the rest summed, then the time
// outside the nodes.
func profileLines(p roofline.OpProfile) []profileLine {
	var out []profileLine
	var rest roofline.ProfileGroup
	for i, g := range p.Groups {
		if i >= profileRows {
			rest.Ms, rest.Nodes, rest.Share = rest.Ms+g.Ms, rest.Nodes+g.Nodes, rest.Share+g.Share
			continue
		}
		out = append(out, profileLine{g.Name, fmt.Sprintf("%.1f%%", 100*g.Share), fmt.Sprintf("%.0f", g.Nodes), g.Ms})
	}
	if rest.Nodes > 0 {
		out = append(out, profileLine{fmt.Sprintf("%d other kinds", len(p.Groups)-profileRows), fmt.Sprintf("%.1f%%", 100*rest.Share), fmt.Sprintf("%.0f", rest.Nodes), rest.Ms})
	}
	for _, o := range []struct {
		name string
		ms   float64
	}{{"(graph build, allocation, inputs)", p.BuildMs}, {"(between nodes: scheduling, synchronisation)", p.BetweenMs}, {"(after the last node)", p.TailMs}} {
		out = append(out, profileLine{o.name, "", "", o.ms})
	}
	return out
}

func profileTable(w io.Writer, p roofline.OpProfile) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ms/step\tshare\tnodes/step\t  op")
	for _, r := range profileLines(p) {
		fmt.Fprintf(tw, "%.3f\t%s\t%s\t  %s\n", r.ms, r.share, r.nodes, r.name)
	}
	tw.Flush()
}

// profileBars are the chart's bars: the groups shown by name.
func profileBars(p roofline.OpProfile) ([]string, []float64) {
	var labels []string
	var vals []float64
	for _, r := range profileLines(p) {
		labels, vals = append(labels, r.name), append(vals, r.ms)
	}
	return labels, vals
}
