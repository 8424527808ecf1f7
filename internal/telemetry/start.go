package telemetry

import (
	"fmt"
	"os"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// CheckRate says what is wrong with a sampling rate, if anything.
func CheckRate(hz int) error {
	if hz < minRate || hz > maxRate {
		return fmt.Errorf("--telemetry-rate %d: use %d to %d Hz", hz, minRate, maxRate)
	}
	return nil
}

// Start starts a sampler at hz: NVML's GPUs when the driver is there, the
// host always. Without NVML, note says why ("NVML unavailable: ..."), for
// the caller to print once. Stop shuts NVML down as well.
func Start(hz int) (s *Sampler, note string, err error) {
	if err := CheckRate(hz); err != nil {
		return nil, "", err
	}
	lib, nerr := OpenNVML()
	var devs []nvml.Device
	if nerr != nil {
		note, lib = nerr.Error(), nil
	} else if devs, err = devices(lib); err != nil {
		lib.Shutdown()
		note, lib, devs = err.Error(), nil, nil
	}
	// Half an hour of samples at this rate, within 256k samples.
	capacity := min(hz*(len(devs)+1)*1800, 1<<18)
	if s, err = NewSampler(lib, devs, hz, capacity); err != nil {
		if lib != nil {
			lib.Shutdown()
		}
		return nil, note, err
	}
	s.lib = lib
	s.Start()
	return s, note, nil
}

// WriteFile writes the samples of [from, to] to a JSONL file, appending
// to it or (appendTo false) replacing it.
func (s *Sampler) WriteFile(path string, from, to time.Time, appendTo bool) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if err := s.writeJSONL(f, from, to); err != nil {
		f.Close()
		return fmt.Errorf("telemetry %s: %w", path, err)
	}
	return f.Close()
}
