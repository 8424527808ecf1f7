package sweep

import (
	"fmt"
	"os"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/tokbench/tokbench/gpu"
)

// StartTelemetry starts a sampler at hz: NVML's GPUs when the driver is
// there, the host always. Without NVML, note says why ("NVML unavailable:
// ..."), for the caller to print once.
func StartTelemetry(hz int) (s *gpu.Sampler, note string, err error) {
	lib, nerr := gpu.OpenNVML()
	var devs []nvml.Device
	if nerr != nil {
		note = nerr.Error()
		lib = nil
	} else if devs, err = gpu.Devices(lib); err != nil {
		note, lib, devs = err.Error(), nil, nil
	}
	// Half an hour of samples at this rate, within 256k samples.
	capacity := min(hz*(len(devs)+1)*1800, 1<<18)
	if s, err = gpu.NewSampler(lib, devs, hz, capacity); err != nil {
		return nil, note, &InputError{err}
	}
	s.Start()
	return s, note, nil
}

// appendSamples writes the samples of [a, b] to a JSONL file (appending).
func appendSamples(s *gpu.Sampler, path string, a, b time.Time) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if err := s.WriteJSONL(f, a, b); err != nil {
		f.Close()
		return fmt.Errorf("telemetry %s: %w", path, err)
	}
	return f.Close()
}
