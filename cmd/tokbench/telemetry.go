package main

import (
	"fmt"
	"os"
	"time"

	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/urfave/cli/v2"
)

func telemetryFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "telemetry-rate", Value: telemetry.DefaultRate, Usage: "GPU sampling rate in Hz (1 to 200); the host is read at most 2 Hz"},
		&cli.StringFlag{Name: "telemetry-out", Usage: "write the raw telemetry samples to this JSONL file"},
		&cli.BoolFlag{Name: "no-telemetry", Usage: "do not sample the GPU and host while measuring"},
	}
}

// telemetryRate is the sampling rate the flags ask for, 0 with
// --no-telemetry.
func telemetryRate(c *cli.Context) (int, error) {
	if c.Bool("no-telemetry") {
		return 0, nil
	}
	if err := telemetry.CheckRate(c.Int("telemetry-rate")); err != nil {
		return 0, usageErr(err)
	}
	return c.Int("telemetry-rate"), nil
}

// startSampling starts the sampler the flags ask for (nil with
// --no-telemetry) and says once when NVML is not there; stop stops it and
// writes its raw samples to --telemetry-out, if given.
func startSampling(c *cli.Context) (s *telemetry.Sampler, stop func() error, err error) {
	none := func() error { return nil }
	rate, err := telemetryRate(c)
	if err != nil || rate == 0 {
		return nil, none, err
	}
	s, note, err := telemetry.Start(rate)
	// Said on every run of a machine without NVML: only when asked
	// (devices and doctor say it always).
	if note != "" && c.Bool("verbose") {
		fmt.Fprintln(os.Stderr, note+"; sampling the host only")
	}
	if err != nil {
		return nil, none, err
	}
	start := time.Now()
	return s, func() error {
		s.Stop()
		if p := c.String("telemetry-out"); p != "" {
			return s.WriteFile(p, start, time.Now(), false)
		}
		return nil
	}, nil
}

// warn runs f and prints its error: for what must not hide the result
// (a telemetry file that could not be written).
func warn(f func() error) {
	if err := f(); err != nil {
		fmt.Fprintln(os.Stderr, "tokbench:", err)
	}
}
