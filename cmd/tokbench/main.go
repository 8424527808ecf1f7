// Command tokbench measures how fast llama.cpp models produce tokens on
// this machine (CPU, CUDA, Metal, Vulkan), and why they are not faster.
// The commands parse flags, call the packages and turn errors into exit
// codes: 0 done, 1 failed, 2 bad input, 3 a baseline comparison that
// matched no point, 130 interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/point"
	"github.com/urfave/cli/v2"
)

var version = "0.3.0"

// Exit codes: 0 ok, 1 failure, 2 bad input (flags, values), 3 nothing
// compared, 130 interrupted.
const (
	exitFail        = 1
	exitUsage       = 2
	exitInterrupted = 130
	// A baseline comparison that matched no point: a gate that compares
	// nothing must not pass.
	exitNothingCompared = 3
)

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	// The first Ctrl-C, SIGTERM, SIGHUP (the terminal closed) or SIGPIPE
	// (a reader of the output gone) ends the run in order (what is
	// measured is kept); a second ends the process at once. A phase that
	// cannot stop in order (making a model, probing: nothing measured
	// yet) ends at the first, its half-made files removed (halt). Go
	// keeps handling them from start to end: a process started in the
	// background by a shell (SIGINT ignored) still hears them.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		s := <-sigs
		if halt.Signal() {
			// A reader gone (| head) is no news: said only for the others.
			if s != syscall.SIGPIPE {
				fmt.Fprintf(os.Stderr, "tokbench: %v: stopped; what was half made is removed\n", s)
			}
			os.Exit(exitInterrupted)
		}
		cancel()
		<-sigs
		halt.RemoveTemps()
		fmt.Fprintln(os.Stderr, "tokbench: interrupted again: stopping at once (what was written is kept)")
		os.Exit(exitInterrupted)
	}()
	app := newApp()
	var unknown string
	app.CommandNotFound = func(_ *cli.Context, name string) { unknown = name }
	err := app.RunContext(ctx, flagsFirst(app, args))
	if unknown != "" {
		fmt.Fprintf(os.Stderr, "tokbench: no command %q: tokbench --help lists them\n", unknown)
		return exitUsage
	}
	if err == nil {
		return 0
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		if ec.Error() != "" {
			fmt.Fprintln(os.Stderr, ec.Error())
		}
		return ec.ExitCode()
	}
	if !errors.Is(err, syscall.EPIPE) { // the reader of the output left (| head): nothing to say
		fmt.Fprintln(os.Stderr, "tokbench:", err)
	}
	var ie *point.InputError
	var refused *safefile.Refused // an output or folder tokbench will not write
	switch {
	case errors.Is(err, engine.ErrCanceled) || errors.Is(err, errInterrupted) || errors.Is(err, syscall.EPIPE) || ctx.Err() != nil:
		return exitInterrupted
	case errors.As(err, &ie), errors.As(err, &refused):
		return exitUsage
	}
	return exitFail
}

// atOnce makes cmd and its subcommands a phase that a signal ends at once.
func atOnce(cmd *cli.Command) {
	if a := cmd.Action; a != nil {
		cmd.Action = func(c *cli.Context) error {
			defer halt.AtOnce()()
			return a(c)
		}
	}
	for _, sub := range cmd.Subcommands {
		atOnce(sub)
	}
}

func newApp() *cli.App {
	cli.FlagStringer = flagHelp
	// -v is llama-bench's --verbose; the version is --version alone.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version"}
	app := &cli.App{
		Name:    "tokbench",
		Usage:   "benchmark LLM token throughput on llama.cpp (CPU, CUDA, Metal, Vulkan)",
		Version: version,
		// Lists are split by tokbench (sweep.SplitList), which keeps a
		// comma escaped as \, in a file name.
		DisableSliceFlagSeparator: true,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "backend-dir", Usage: "folder with GPU backend libraries (libggml-cuda.so ...); default $TOKBENCH_BACKEND_DIR, the binary's folder, ../lib/tokbench"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "show llama.cpp's log (also after the command, as llama-bench's -v)"},
			&cli.BoolFlag{Name: "debug-log", Hidden: true, Usage: "show llama.cpp's log with its debug lines (tests)"},
		},
		Before: func(c *cli.Context) error {
			lvl := engine.LogError
			if c.Bool("verbose") {
				lvl = engine.LogInfo
			}
			if c.Bool("debug-log") {
				lvl = engine.LogDebug
			}
			engine.Init(engine.Options{BackendDirs: c.StringSlice("backend-dir"), Log: lvl})
			// A backend asked for (--backend-dir, TOKBENCH_BACKEND_DIR) that
			// did not load is an error; one beside the binary, a warning.
			if errs := engine.BackendErrors(); len(errs) > 0 {
				if c.IsSet("backend-dir") || os.Getenv("TOKBENCH_BACKEND_DIR") != "" {
					return errors.Join(errs...)
				}
				for _, err := range errs {
					fmt.Fprintln(os.Stderr, "tokbench: warning:", err)
				}
			}
			return nil
		},
		Commands: []*cli.Command{runCommand(), sweepCommand(), loadCommand(), capacityCommand(), reportCommand(), compareCommand(), baselineCommand(),
			workerCommand(), synthCommand(), quantizeCommand(), devicesCommand(), probeCommand(), infoCommand(), doctorCommand(), profileCommand(), qualityCommand(), fleetCommand(), mergeCommand(), checkModelCommand()},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			var cmd *cli.Command
			if c != nil {
				cmd = c.Command
			}
			return usageErr(unknownFlag(cmd, os.Args, err))
		},
		ExitErrHandler: func(*cli.Context, error) {},
	}
	// Commands that only read and write results files end at the first
	// signal (exit 130), their half-written outputs removed; a database
	// append inside them stops in order, rolled back (halt.InOrder).
	for _, cmd := range app.Commands {
		switch cmd.Name {
		case "report", "compare", "merge", "baseline":
			atOnce(cmd)
		}
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = app.OnUsageError
	}
	withFlagChecks(app.Commands)
	return app
}

var errInterrupted = errors.New("interrupted")

func usageErr(err error) error { return &point.InputError{Err: err} }

func usagef(format string, a ...any) error { return usageErr(fmt.Errorf(format, a...)) }
