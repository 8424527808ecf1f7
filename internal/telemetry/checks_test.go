package telemetry

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/tokbench/tokbench/internal/doctor"
)

func byCheck(fs []doctor.Finding) map[string]doctor.Finding {
	m := map[string]doctor.Finding{}
	for _, f := range fs {
		m[f.Check] = f
	}
	return m
}

// Only what a test sets may be called: the mock server panics on any
// other method, so this also proves doctor changes nothing.
func TestChecks(t *testing.T) {
	s := dgxh200.New()
	for i, dv := range s.Devices {
		d := dv.(*server.Device)
		d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) {
			return map[bool]nvml.EnableState{true: nvml.FEATURE_DISABLED, false: nvml.FEATURE_ENABLED}[i == 0], nvml.SUCCESS
		}
		d.GetApplicationsClockFunc = func(nvml.ClockType) (uint32, nvml.Return) { return uint32(1980 - 1000*b2i(i == 1)), nvml.SUCCESS }
		d.GetMaxClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
			return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			if i == 2 {
				return []nvml.ProcessInfo{{Pid: 999, UsedGpuMemory: 8 << 30}}, nvml.SUCCESS
			}
			return nil, nvml.SUCCESS
		}
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
			if i == 3 {
				return 0x40, nvml.SUCCESS // hw thermal slowdown
			}
			return 0, nvml.SUCCESS
		}
	}
	got := byCheck(Checks(s))
	name := "NVIDIA H200 141GB HBM3e"
	for check, want := range map[string]string{
		"gpu 0 (" + name + ") persistence mode":   "off",
		"gpu 1 (" + name + ") application clocks": "SM 980 MHz of 1980 MHz",
		"gpu 2 (" + name + ") processes":          "pid 999 (8192 MiB)",
		"gpu 3 (" + name + ") clock events":       "hw_thermal_slowdown",
	} {
		if f := got[check]; f.Level != doctor.Warn || !strings.Contains(f.Says, want) || f.Fix == "" {
			t.Errorf("%s: %+v, want a warning %q", check, f, want)
		}
	}
	if f := got["gpu 4 ("+name+") persistence mode"]; f.Level != doctor.OK {
		t.Errorf("a set-up GPU: %+v", f)
	}
	if f := got["gpu 0 ("+name+") mig"]; f.Says == "" {
		t.Errorf("mig: %+v", f)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
