package main

import (
	"slices"
	"strings"

	"github.com/tokbench/tokbench/point"
	"github.com/urfave/cli/v2"
)

// flagsFirst moves a command's positional arguments after its flags, so
// that "tokbench report results.jsonl -o md" parses as people type it (the
// flag parser stops at the first argument that is not a flag), and the
// global flags given after the command (-v, as llama-bench users type it)
// before it.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmd, i := commandOf(app, args)
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	var global, flags, positional []string
	for j := i; j < len(args); j++ {
		a := args[j]
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "-") && hasFlag(app.Flags, name) && !hasFlag(cmd.Flags, name):
			global = append(global, a)
			if !strings.Contains(a, "=") && !isBool(app.Flags, a) && j+1 < len(args) {
				j++
				global = append(global, args[j])
			}
		case a == "--":
			positional = append(positional, args[j+1:]...)
			j = len(args)
		case strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && point.IsSwitch(a) && hasFlag(cmd.Flags, strings.TrimLeft(a, "-")):
			// A switch alone is 1 (--no-kv-offload); llama-bench's take
			// a list: -nkvo 0,1. A value that is not a flag is the
			// switch's, checked where it is read (-nkvo 2: "give 0 or 1").
			if j+1 < len(args) && !strings.HasPrefix(args[j+1], "-") {
				flags = append(flags, a+"="+args[j+1])
				j++
			} else {
				flags = append(flags, a+"=true")
			}
		case strings.HasPrefix(a, "-") && a != "-" && !strings.Contains(a, "=") && isBool(cmd.Flags, a) && j+1 < len(args) && isBoolValue(args[j+1]):
			// llama-bench's switches take a value: -nkvo 1, --cpu-strict 0.
			flags = append(flags, a+"="+args[j+1])
			j++
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			if !strings.Contains(a, "=") && !isBool(cmd.Flags, a) && j+1 < len(args) {
				j++
				flags = append(flags, args[j])
			}
		default:
			positional = append(positional, a)
		}
	}
	out := append(append([]string{}, args[:1]...), global...)
	out = append(append(out, args[1:i]...), flags...)
	return append(out, positional...)
}

func hasFlag(flags []cli.Flag, name string) bool {
	return slices.ContainsFunc(flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) })
}

// commandOf finds the (sub)command the arguments name, past global flags,
// and the index of the first argument after its name (nil if none).
func commandOf(app *cli.App, args []string) (*cli.Command, int) {
	cmds := app.Commands
	var cmd *cli.Command
	i := 1
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(a, "=") && !isBool(app.Flags, a) && i+1 < len(args) {
				i++
			}
			i++
			continue
		}
		next := findCommand(cmds, a)
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
		i++
		if len(cmds) == 0 {
			break
		}
	}
	return cmd, i
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

func isBool(flags []cli.Flag, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	for _, f := range flags {
		if _, ok := f.(*cli.BoolFlag); ok && slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

func isBoolValue(s string) bool { return s == "0" || s == "1" || s == "true" || s == "false" }
