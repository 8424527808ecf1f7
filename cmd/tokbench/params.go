package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/sweep"
	"github.com/urfave/cli/v2"
)

// listFlags are the test parameters as llama-bench takes them, in run and
// sweep alike: each a comma list, a range (1-8, 64-512*2, 128-1024+128)
// or the flag repeated (-n 16 -n 32); every combination is measured.
var listFlags = map[string]bool{}

func listFlag(name string, aliases []string, usage string) cli.Flag {
	listFlags[name] = true
	return &cli.StringSliceFlag{Name: name, Aliases: aliases, Usage: usage}
}

// list is a list flag's values as one comma list: "-n 16 -n 32" and
// "-n 16,32" both give "16,32".
func list(c *cli.Context, name string) string { return strings.Join(c.StringSlice(name), ",") }

// flagText is a flag's value as the sweep's hash records it.
func flagText(c *cli.Context, name string) string {
	if listFlags[name] {
		return list(c, name)
	}
	return fmt.Sprint(c.Value(name))
}

// testFlags are the flags of run and sweep that lay out the tests: the
// models, then every setting of point.Settings, as its kind reads.
func testFlags() []cli.Flag {
	flags := []cli.Flag{listFlag("model", []string{"m"}, "model files (a name with a comma: the whole file, or \\,)")}
	for _, st := range point.Settings {
		if st.Not != "" {
			flags = append(flags, &cli.BoolFlag{Name: st.Not, Usage: st.NotHelp})
		}
		if st.Flag == "" {
			continue
		}
		var f cli.Flag
		switch st.Kind {
		case point.List:
			lf := listFlag(st.Flag, st.Aliases, st.Usage).(*cli.StringSliceFlag)
			lf.Hidden = st.Hidden
			f = lf
		case point.Int:
			ff := &cli.IntFlag{Name: st.Flag, Aliases: st.Aliases, Usage: st.Usage, Hidden: st.Hidden}
			if st.Shown {
				ff.Value, _ = strconv.Atoi(st.Default)
			}
			f = ff
		case point.Uint:
			f = &cli.Uint64Flag{Name: st.Flag, Aliases: st.Aliases, Usage: st.Usage, Hidden: st.Hidden}
		case point.Float:
			ff := &cli.Float64Flag{Name: st.Flag, Aliases: st.Aliases, Usage: st.Usage, Hidden: st.Hidden}
			if st.Shown {
				ff.Value, _ = strconv.ParseFloat(st.Default, 64)
			}
			f = ff
		case point.Bool:
			f = &cli.BoolFlag{Name: st.Flag, Aliases: st.Aliases, Usage: st.Usage, Hidden: st.Hidden, Value: st.Shown && st.Default == "true"}
		case point.Duration:
			f = &cli.DurationFlag{Name: st.Flag, Aliases: st.Aliases, Usage: st.Usage, Hidden: st.Hidden}
		default:
			f = &cli.StringFlag{Name: st.Flag, Aliases: st.Aliases, Usage: st.Usage, Hidden: st.Hidden}
		}
		flags = append(flags, f)
	}
	return flags
}

// settingText is the value a setting's flags give, as its Read takes it,
// and the flag that gave it; "" when none was given.
func settingText(c *cli.Context, st *point.Setting) (text, flag string) {
	if st.Not != "" && c.IsSet(st.Not) {
		text, flag = strconv.FormatBool(!c.Bool(st.Not)), st.Not
	}
	if st.Flag == "" || !c.IsSet(st.Flag) {
		return text, flag
	}
	switch st.Kind {
	case point.List:
		return list(c, st.Flag), st.Flag
	case point.Duration:
		return c.Duration(st.Flag).String(), st.Flag
	case point.String:
		return c.String(st.Flag), st.Flag
	}
	return fmt.Sprint(c.Value(st.Flag)), st.Flag
}

// models are the -m values: each a comma list, unless it names a file
// whole.
func models(c *cli.Context) []string {
	var out []string
	for _, v := range c.StringSlice("model") {
		out = append(out, modelList(v)...)
	}
	return out
}

// specWith applies the settings' flags given to s (run and sweep), each
// value checked as its flag reads it, then the inputs' flags.
func specWith(c *cli.Context, s *sweep.Spec) (*sweep.Spec, error) {
	if c.IsSet("mmap") && c.IsSet("no-mmap") {
		return nil, usagef("give -mmp or --no-mmap, not both")
	}
	for i := range point.Settings {
		st := &point.Settings[i]
		text, flag := settingText(c, st)
		if flag == "" {
			continue
		}
		if st.Key == "" { // a llama-bench switch tokbench keeps off
			if _, err := st.Read(text); err != nil {
				return nil, usagef("--%s: %v", flag, err)
			}
			continue
		}
		if err := s.SetText(st, text); err != nil {
			return nil, usagef("--%s: %v", flag, err)
		}
	}
	return specFlags(c, s)
}

// The output's options of run, sweep and report.
var (
	wideFlag        = &cli.BoolFlag{Name: "wide", Usage: "the table with every column (CI, latencies, the step's split, GPU figures) and a line per test"}
	tagParallelFlag = &cli.BoolFlag{Name: "tag-parallel", Usage: "json, jsonl, csv, sql: name tests of several sequences in model_type (\"np 4\"), which compare-llama-bench.py keys on"}
)
