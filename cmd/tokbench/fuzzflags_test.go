package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// hostileNumbers are the values every numeric flag is tried with.
var hostileNumbers = []string{"nan", "inf", "-inf", "1e308", "-1e308", "-1", "0", "9223372036854775807", "1e-300", "1h"}

// numericFlag is a command's numeric flag and the arguments that make the
// command quick to run on the tiny model (dir: a fresh folder for its
// files).
type numericFlag struct {
	path []string // the command and subcommand
	name string
}

// numericFlags lists every flag of type int, uint, float or duration of
// every command, walking the CLI itself: a flag added later is fuzzed
// without being listed here.
func numericFlags() []numericFlag {
	var out []numericFlag
	var walk func(path []string, cs []*cli.Command)
	walk = func(path []string, cs []*cli.Command) {
		for _, c := range cs {
			p := append(append([]string{}, path...), c.Name)
			for _, f := range c.Flags {
				switch f.(type) {
				case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.Float64Flag, *cli.DurationFlag:
					if n := f.Names()[0]; n != "test-step-delay" {
						out = append(out, numericFlag{p, n})
					}
				}
			}
			walk(p, c.Subcommands)
		}
	}
	walk(nil, newApp().Commands)
	return out
}

// quickArgs are arguments that make a command end in seconds on the tiny
// model, its files in dir.
func quickArgs(t *testing.T, cmd, dir string) []string {
	tiny := []string{"--synth", "tiny", "--no-telemetry"}
	switch cmd {
	case "run", "profile":
		return append([]string{"-p", "8", "-n", "4", "-r", "1"}, tiny...)
	case "sweep":
		return append([]string{"-p", "8", "-n", "0", "-r", "1", "--out", filepath.Join(dir, "s.jsonl")}, tiny...)
	case "load":
		return append([]string{"--workload", "short", "--requests", "4", "--output-len", "8"}, tiny...)
	case "capacity":
		return append([]string{"--prompt-len", "8", "--output-len", "4", "--slo", "e2e_p99=10s", "--max-time", "20s"}, tiny...)
	case "baseline create", "baseline compare":
		return []string{goodResults(t), "--dir", dir}
	case "synth":
		return []string{"--preset", "tiny", "--out", filepath.Join(dir, "x.gguf")}
	case "quantize":
		return []string{"-m", tinyModel(t), "--type", "q8_0", "--out", filepath.Join(dir, "q.gguf")}
	case "probe":
		return []string{"--types", "q8_0", "-o", "json"}
	case "quality":
		return []string{"-m", tinyModel(t), "-m", tinyModel(t), "--tokens", "256", "--ctx", "64"}
	case "fleet slurm", "fleet k8s":
		spec := filepath.Join(dir, "spec.yaml")
		os.WriteFile(spec, []byte("synth: [tiny]\nn_prompt: 8\nn_gen: 0\n"), 0o644)
		return []string{"--spec", spec, "--shards", "2", "--image", "tokbench"}
	}
	return nil
}

// goodResults is a results file of one measured point, made once.
func goodResults(t *testing.T) string {
	p := filepath.Join(workDir, "good-results.jsonl")
	if _, err := os.Stat(p); err != nil {
		if r := tokbench(t, "sweep", "-m", tinyModel(t), "-p", "8", "-n", "0", "-r", "2", "--no-telemetry", "--out", p); r.code != 0 {
			t.Fatalf("sweep: exit %d: %s", r.code, r.stderr)
		}
	}
	return p
}

// FuzzNumericFlags gives any numeric flag of any command any value and
// fails on a hang (90 s), a crash, an abort or an exit status other than
// 0, 1, 2 and 130. The seeds give each flag one of hostileNumbers in turn
// (TOKBENCH_FUZZ_ALL=1: every flag with every value); `make fuzz-flags`
// fuzzes beyond them.
func FuzzNumericFlags(f *testing.F) {
	flags := numericFlags()
	seedEach(f, len(flags), hostileNumbers)
	f.Fuzz(func(t *testing.T, which uint16, value string) {
		fl := flags[int(which)%len(flags)]
		cmd := strings.Join(fl.path, " ")
		args := append(append(append([]string{}, fl.path...), "--"+fl.name+"="+value), quickArgs(t, cmd, t.TempDir())...)
		hostileRun(t, args)
	})
}

// seedEach seeds a fuzz target of n flags with one of values each, in
// turn (TOKBENCH_FUZZ_ALL=1: every flag with every value).
func seedEach(f *testing.F, n int, values []string) {
	all := os.Getenv("TOKBENCH_FUZZ_ALL") == "1"
	for i := range n {
		for j, v := range values {
			if all || j == i%len(values) {
				f.Add(uint16(i), v)
			}
		}
	}
}

// hostileRun runs tokbench with args and fails on a hang (90 s), a crash,
// an abort or an exit status other than 0, 1, 2 and 130.
func hostileRun(t *testing.T, args []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, binPath, args...)
	c.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
	var errb bytes.Buffer
	c.Stderr = &errb
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("tokbench %s: still running after 90 s", strings.Join(args, " "))
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	msg := errb.String()
	if (code != 0 && code != 1 && code != 2 && code != 130) || strings.Contains(msg, "panic:") || strings.Contains(msg, "goroutine ") ||
		strings.Contains(msg, "aborted") {
		t.Fatalf("tokbench %s: exit %d:\n%s", strings.Join(args, " "), code, msg)
	}
}

// fileField is a number in a file tokbench reads: the file's text with
// the value in place of %s, and the command that reads it (%s: its path).
type fileField struct {
	name, text string
	args       []string
}

// fileFields are the numeric fields of specs, workloads, traces and
// records, each in a file that is otherwise good.
func fileFields(t *testing.T) []fileField {
	var out []fileField
	sweep := []string{"sweep", "--spec", "%s", "--dry-run"}
	for _, k := range []string{"n_prompt", "n_gen", "n_depth", "parallel", "n_batch", "n_ubatch", "threads", "n_gpu_layers", "repetitions",
		"target_ci", "max_reps", "timeout", "seed", "n_cpu_moe", "poll", "prio", "delay", "max_points"} {
		out = append(out, fileField{"spec " + k, "synth: [tiny]\nn_prompt: 8\nn_gen: 0\n" + k + ": %s\n", sweep})
	}
	load := []string{"load", "--synth", "tiny", "--no-telemetry", "--requests", "4", "--workload", "%s", "--timeout", "60s"}
	for _, w := range []string{"prompt: %s\noutput: 8\n", "prompt: 8\noutput: %s\n", "prompt: normal:%s,4\noutput: 8\n",
		"prompt: uniform:8-%s\noutput: 8\n", "prompt: 8\noutput: 8\nturns: %s\n"} {
		out = append(out, fileField{"workload " + w, "name: w\n" + w, load})
	}
	trace := []string{"load", "--synth", "tiny", "--no-telemetry", "--trace", "%s", "--timeout", "60s"}
	for _, row := range []string{"%s,8,4", "0.5,%s,4", "0.5,8,%s"} {
		out = append(out, fileField{"trace " + row, "arrival_s,input_tokens,output_tokens\n0,8,4\n" + row + "\n", trace})
	}
	good, err := os.ReadFile(goodResults(t))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(strings.Split(string(good), "\n")[0])
	for _, k := range []string{"avg_ts", "stddev_ts", "avg_ns", "stddev_ns", "n_prompt", "n_gen", "n_depth", "n_parallel", "n_threads", "repetitions"} {
		// The field's value replaced, whatever it was.
		i := strings.Index(line, `"`+k+`":`)
		if i < 0 {
			t.Fatalf("no %s in a record", k)
		}
		j := i + len(k) + 3
		end := j + strings.IndexAny(line[j:], ",}")
		text := line[:j] + "%s" + line[end:] + "\n"
		out = append(out, fileField{"record " + k, text, []string{"report", "%s"}}, fileField{"record " + k, text, []string{"baseline", "create", "%s", "--dir", "%d"}})
	}
	return out
}

// FuzzFileNumbers puts any value in any numeric field of a spec, a
// workload, a trace or a record and fails as FuzzNumericFlags does.
func FuzzFileNumbers(f *testing.F) {
	for i := range 64 {
		for j, v := range hostileNumbers {
			if os.Getenv("TOKBENCH_FUZZ_ALL") == "1" || j == i%len(hostileNumbers) {
				f.Add(uint16(i), v)
			}
		}
	}
	var fields []fileField
	f.Fuzz(func(t *testing.T, which uint16, value string) {
		if fields == nil {
			fields = fileFields(t)
		}
		ff := fields[int(which)%len(fields)]
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(ff.text, "%s", value)), 0o644); err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, a := range ff.args {
			args = append(args, strings.NewReplacer("%s", path, "%d", filepath.Join(dir, "b")).Replace(a))
		}
		hostileRun(t, args)
	})
}

// hostileStrings are the values every string flag of fleet is tried with:
// a line break, quotes, a command substitution, control characters, and a
// YAML document of the attacker's.
var hostileStrings = []string{"x\ntouch PWNED", "x;touch PWNED", "x$(touch PWNED)", "x`touch PWNED`", `x'"$(touch PWNED)"'`,
	"x\rtouch PWNED", "x\x1b[2J", "x\\\ntouch PWNED", "x\n---\nkind: Pod", "X_Y.Z", "-x", "x\x7f"}

// fleetStringFlags lists every string flag of fleet's job writers.
func fleetStringFlags() (out []numericFlag) {
	for _, c := range newApp().Commands {
		if c.Name != "fleet" {
			continue
		}
		for _, sub := range c.Subcommands {
			for _, f := range sub.Flags {
				switch f.(type) {
				case *cli.StringFlag, *cli.StringSliceFlag:
					out = append(out, numericFlag{[]string{"fleet", sub.Name}, f.Names()[0]})
				}
			}
		}
	}
	return out
}

// FuzzFleetStrings gives any string flag of fleet slurm or k8s any value
// (the spec's path too, as a file of that name). The job file is refused
// (exit 2) or inert: no control character in it, as many lines and YAML
// documents as with a plain value, bash -n passes, and running the Slurm
// script (tokbench being /bin/true) runs nothing of the value's.
func FuzzFleetStrings(f *testing.F) {
	flags := fleetStringFlags()
	seedEach(f, len(flags), hostileStrings)
	f.Fuzz(func(t *testing.T, which uint16, value string) {
		fl := flags[int(which)%len(flags)]
		if strings.ContainsRune(value, 0) {
			return // no argument can hold a NUL
		}
		dir := t.TempDir()
		write := func(v string) (result, string) {
			spec := filepath.Join(dir, "s.yaml")
			args := append([]string{}, fl.path...)
			switch fl.name {
			case "spec":
				spec = filepath.Join(dir, strings.ReplaceAll(v, "/", "_"))
			case "results":
				v = filepath.Join(dir, v)
			}
			os.WriteFile(spec, []byte("synth: [tiny]\nn_prompt: 8\nn_gen: 0\n"), 0o644)
			args = append(args, "--spec", spec, "--shards", "2")
			if fl.path[1] == "slurm" && fl.name != "tokbench" {
				args = append(args, "--tokbench", "/bin/true")
			}
			if fl.name != "spec" {
				args = append(args, "--"+fl.name+"="+v)
			}
			return tokbench(t, args...), spec
		}
		r, _ := write(value)
		if r.code == 2 {
			return
		}
		if r.code != 0 {
			t.Fatalf("--%s=%q: exit %d: %s", fl.name, value, r.code, r.stderr)
		}
		plain, _ := write("plain")
		if strings.IndexFunc(r.stdout, func(c rune) bool { return c < 0x20 && c != '\n' && c != '\t' || c == 0x7f }) >= 0 {
			t.Fatalf("--%s=%q: a control character in the job file:\n%s", fl.name, value, r.stdout)
		}
		if a, b := strings.Count(r.stdout, "\n"), strings.Count(plain.stdout, "\n"); a != b {
			t.Fatalf("--%s=%q: %d lines, %d with a plain value:\n%s", fl.name, value, a, b, r.stdout)
		}
		if fl.path[1] == "k8s" {
			if a, b := strings.Count(r.stdout, "\n---"), strings.Count(plain.stdout, "\n---"); a != b {
				t.Fatalf("--%s=%q: %d documents, %d with a plain value", fl.name, value, a+1, b+1)
			}
			return
		}
		script := filepath.Join(dir, "job.sh")
		os.WriteFile(script, []byte(r.stdout), 0o755)
		if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
			t.Fatalf("--%s=%q: bash -n: %v %s", fl.name, value, err, out)
		}
		run := exec.Command("bash", script)
		run.Dir = dir
		run.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=0")
		run.Run()
		// And the merge command its comment gives, pasted.
		if _, hint, ok := strings.Cut(r.stdout, "then: tokbench merge "); ok {
			hint, _, _ = strings.Cut(hint, "\n")
			paste := exec.Command("bash", "-c", "true "+hint)
			paste.Dir = dir
			paste.Run()
		}
		if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
			t.Fatalf("--%s=%q: running the script, or its merge line, ran the value's command:\n%s", fl.name, value, r.stdout)
		}
	})
}
