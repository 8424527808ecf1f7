package main

import (
	"os"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/isolate"
	"github.com/urfave/cli/v2"
)

// checkModel loads a model once in a child process before this one hands
// it to llama.cpp, so that a file llama.cpp aborts on is one clear error.
// The check runs on the CPU alone, so the child loads no GPU backend (a
// backend folder with none in it): starting CUDA there would cost seconds
// and check nothing more.
func checkModel(c *cli.Context, path string) error {
	// The validator's error, without a child to start.
	if _, _, err := gguf.Inspect(path); err != nil {
		return err
	}
	self, err := isolate.Self("--backend-dir", os.DevNull)
	if err != nil {
		return err
	}
	return self.CheckModel(c.Context, path)
}

func checkModelCommand() *cli.Command {
	return &cli.Command{
		Name:      isolate.CheckCommand,
		Hidden:    true,
		Usage:     "load a model with llama.cpp on the CPU and make a small context (started by other commands as a child)",
		UsageText: "tokbench check-model MODEL.gguf",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("check-model takes one model file")
			}
			return engine.CheckLoad(c.Args().First())
		},
	}
}
