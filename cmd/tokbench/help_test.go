package main

import (
	"strings"
	"testing"
)

// Every command's help fits 100 columns and says each default once.
func TestHelpFits(t *testing.T) {
	for _, cmd := range [][]string{{"run"}, {"sweep"}, {"load"}, {"capacity"}, {"quality"}, {"report"}, {"profile"}, {"probe"},
		{"synth"}, {"quantize"}, {"baseline", "compare"}, {"fleet", "slurm"}, {"merge"}, {"info"}, {"devices"}} {
		r := tokbench(t, append(cmd, "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "OPTIONS") {
			t.Errorf("%v --help: exit %d: %s", cmd, r.code, r.stderr)
			continue
		}
		for _, line := range strings.Split(r.stdout, "\n") {
			if n := len([]rune(line)); n > 100 && !strings.HasPrefix(strings.TrimSpace(line), "tokbench ") {
				t.Errorf("%v --help: a line of %d columns: %s", cmd, n, line)
			}
			if strings.Count(line, "default") > 1 {
				t.Errorf("%v --help: a default twice: %s", cmd, line)
			}
		}
	}
}
