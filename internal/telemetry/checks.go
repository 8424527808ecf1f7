package telemetry

import (
	"fmt"
	"os"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/internal/doctor"
)

// Checks checks each NVIDIA GPU through NVML, for tokbench doctor: it only reads (no clock,
// power, persistence or MIG setting is ever changed).
func Checks(lib nvml.Interface) []doctor.Finding {
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return []doctor.Finding{{Check: "gpus", Level: doctor.Info, Says: "NVML lists no devices: " + ret.Error()}}
	}
	var out []doctor.Finding
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		name, _ := d.GetName()
		tag := fmt.Sprintf("gpu %d (%s)", i, name)
		out = append(out, persistence(tag, d), appClocks(tag, d), ecc(tag, d), mig(tag, d), gpuProcesses(tag, d), clockEvents(tag, d))
	}
	return out
}

func persistence(tag string, d nvml.Device) doctor.Finding {
	f := doctor.Finding{Check: tag + " persistence mode"}
	m, ret := d.GetPersistenceMode()
	switch {
	case ret != nvml.SUCCESS:
		f.Level, f.Says = doctor.Info, "not reported"
	case m == nvml.FEATURE_ENABLED:
		f.Level, f.Says = doctor.OK, "on"
	default:
		f.Level, f.Says = doctor.Warn, "off"
		f.Effect = "the driver unloads between processes: each run pays for initialisation, and the first clocks after it are low"
		f.Fix = "nvidia-smi -pm 1 (as root), or run nvidia-persistenced"
	}
	return f
}

func appClocks(tag string, d nvml.Device) doctor.Finding {
	f := doctor.Finding{Check: tag + " application clocks", Level: doctor.Info, Says: "not reported"}
	app, r1 := d.GetApplicationsClock(nvml.CLOCK_SM)
	top, r2 := d.GetMaxClockInfo(nvml.CLOCK_SM)
	if r1 != nvml.SUCCESS || r2 != nvml.SUCCESS || top == 0 {
		return f
	}
	f.Says = fmt.Sprintf("SM %d MHz of %d MHz max", app, top)
	f.Level = doctor.OK
	if float64(app) < 0.9*float64(top) {
		f.Level = doctor.Warn
		f.Effect = "the SMs are held below their top clock: compute-bound tests (prefill) run slower than the part can"
		f.Fix = "nvidia-smi -rac (reset application clocks, as root) if nobody set them on purpose; compare only with runs at the same clocks"
	}
	return f
}

func ecc(tag string, d nvml.Device) doctor.Finding {
	f := doctor.Finding{Check: tag + " ecc", Level: doctor.Info, Says: "not reported"}
	cur, pending, ret := d.GetEccMode()
	if ret != nvml.SUCCESS {
		return f
	}
	f.Says = map[bool]string{true: "on", false: "off"}[cur == nvml.FEATURE_ENABLED]
	if pending != cur {
		f.Says += ", changes at the next reset"
	}
	f.Effect = "ECC costs a few percent of memory bandwidth: compare only with GPUs of the same setting"
	return f
}

func mig(tag string, d nvml.Device) doctor.Finding {
	f := doctor.Finding{Check: tag + " mig", Level: doctor.OK, Says: "off"}
	cur, _, ret := d.GetMigMode()
	switch {
	case ret != nvml.SUCCESS:
		f.Level, f.Says = doctor.Info, "not supported"
	case cur == nvml.DEVICE_MIG_ENABLE:
		f.Level, f.Says = doctor.Warn, "on: the GPU is split into instances"
		f.Effect = "a benchmark sees one instance's share of the SMs and memory bandwidth, not the whole GPU"
		f.Fix = "benchmark the instance knowingly (its class is not the whole GPU's), or ask the owner to turn MIG off"
	}
	return f
}

func gpuProcesses(tag string, d nvml.Device) doctor.Finding {
	f := doctor.Finding{Check: tag + " processes", Level: doctor.OK, Says: "none"}
	procs, ret := d.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		f.Level, f.Says = doctor.Info, "not reported"
		return f
	}
	self := uint32(os.Getpid())
	var others []string
	for _, p := range procs {
		if p.Pid != self {
			others = append(others, fmt.Sprintf("pid %d (%.0f MiB)", p.Pid, float64(p.UsedGpuMemory)/(1<<20)))
		}
	}
	if len(others) > 0 {
		f.Level, f.Says = doctor.Warn, strings.Join(others, ", ")
		f.Effect = "they share the GPU's SMs, memory and bandwidth with the benchmark"
		f.Fix = "stop them, or benchmark on an idle GPU"
	}
	return f
}

func clockEvents(tag string, d nvml.Device) doctor.Finding {
	f := doctor.Finding{Check: tag + " clock events", Level: doctor.OK, Says: "none"}
	mask, ret := d.GetCurrentClocksEventReasons()
	if ret != nvml.SUCCESS {
		f.Level, f.Says = doctor.Info, "not reported"
		return f
	}
	if reasons := gpu.ThrottleReasons(mask); len(reasons) > 0 {
		f.Says = strings.Join(reasons, ", ")
		if mask&gpu.Slowing != 0 {
			f.Level = doctor.Warn
			f.Effect = "power or thermal limits hold the clocks down now: results will be below the part's"
			f.Fix = "let the GPU cool, check its cooling and power limit (nvidia-smi -q -d PERFORMANCE)"
		}
	}
	return f
}
