package telemetry

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/tokbench/tokbench/gpu"
)

// OpenNVML loads and initialises NVML. Without a driver it returns an
// error that says so ("NVML unavailable: ..."); callers go on without GPU
// telemetry.
func OpenNVML() (nvml.Interface, error) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML unavailable: %s", ret.Error())
	}
	return lib, nil
}

// devices returns NVML's device handles.
func devices(lib nvml.Interface) ([]nvml.Device, error) {
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %s", ret.Error())
	}
	devs := make([]nvml.Device, 0, n)
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d: %s", i, ret.Error())
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// profiles describes every GPU NVML sees. It only reads: it never changes
// clocks, power limits, persistence or MIG mode.
func profiles(lib nvml.Interface) ([]gpu.GPU, error) {
	devs, err := devices(lib)
	if err != nil {
		return nil, err
	}
	driver, _ := lib.SystemGetDriverVersion()
	var cuda string
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		cuda = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	out := make([]gpu.GPU, 0, len(devs))
	for i, d := range devs {
		g := gpu.GPU{Index: i, Driver: driver, CUDADriver: cuda}
		g.Name, _ = d.GetName()
		g.UUID, _ = d.GetUUID()
		if maj, min, ret := d.GetCudaComputeCapability(); ret == nvml.SUCCESS {
			g.Compute = fmt.Sprintf("%d.%d", maj, min)
		}
		if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemoryTotal = m.Total
		}
		if a, ret := d.GetAttributes(); ret == nvml.SUCCESS {
			g.SMs = int(a.MultiprocessorCount)
		}
		if w, ret := d.GetMemoryBusWidth(); ret == nvml.SUCCESS {
			g.BusWidthBits = int(w)
		}
		if c, ret := d.GetMaxClockInfo(nvml.CLOCK_MEM); ret == nvml.SUCCESS {
			g.MaxMemClockMHz = int(c)
		}
		if c, ret := d.GetMaxClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
			g.MaxSMClockMHz = int(c)
		}
		if p, ret := d.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
			g.PowerLimitW = float64(p) / 1000
		}
		if v, ret := d.GetCurrPcieLinkGeneration(); ret == nvml.SUCCESS {
			g.PCIeGen = v
		}
		if v, ret := d.GetCurrPcieLinkWidth(); ret == nvml.SUCCESS {
			g.PCIeWidth = v
		}
		if p, ok := gpu.LookupPart(g.Name); ok {
			g.Part = &p
		}
		switch {
		case g.BusWidthBits > 0 && g.MaxMemClockMHz > 0:
			g.PeakBWGBs = float64(g.BusWidthBits) / 8 * float64(g.MaxMemClockMHz) * 1e6 * 2 / 1e9
			g.BWSource = "nvml"
		case g.Part != nil:
			g.PeakBWGBs, g.BWSource = g.Part.BWGBs, "datasheet"
		}
		out = append(out, g)
	}
	return out, nil
}

// ReadGPUs reads every NVIDIA GPU's static description and shuts NVML down
// again; without NVML the error says why ("NVML unavailable: ...").
func ReadGPUs() ([]gpu.GPU, error) {
	lib, err := OpenNVML()
	if err != nil {
		return nil, err
	}
	defer lib.Shutdown()
	return profiles(lib)
}
