package gpu

import (
	"math/bits"
	"strings"
)

// Metric is one quantity a sampler reads.
type Metric int

// GPU metrics, then host metrics. A sample says which it holds (Have):
// a metric the device does not support is absent, never zero.
const (
	GPUUtil      Metric = iota // % of time a kernel ran
	MemUtil                    // % of time the memory controller was busy
	SMClock                    // MHz
	MemClock                   // MHz
	Power                      // W
	Temp                       // °C
	MemUsed                    // bytes
	PCIeTx                     // KB/s
	PCIeRx                     // KB/s
	DRAMBW                     // % of peak DRAM bandwidth (GPM, Hopper+)
	SMActive                   // % (GPM)
	SMOccupancy                // % (GPM)
	TensorActive               // % (GPM)
	HostCPU                    // % of one core used by this process
	HostRSS                    // bytes
	HostMemAvail               // bytes
	numMetrics
)

// NumMetrics is how many metrics there are (Metric(0) to NumMetrics-1).
const NumMetrics = numMetrics

var metricNames = [numMetrics]string{"gpu_util", "mem_util", "sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c", "mem_used",
	"pcie_tx_kbs", "pcie_rx_kbs", "dram_bw_util", "sm_active", "sm_occupancy", "tensor_active", "cpu_pct", "rss", "mem_available"}

func (m Metric) String() string { return metricNames[m] }

// Sample is one reading of one device (Dev >= 0) or of the host (Dev -1).
// It is a flat value: the ring holds them without pointers, and taking one
// allocates nothing.
type Sample struct {
	T        int64 // ns since the sampler's epoch (monotonic clock)
	Dev      int8
	Have     uint32 // bit m set: V[m] holds metric m
	V        [numMetrics]float64
	Energy   uint64 // mJ since driver load (NVML's counter); valid if HaveEnergy
	HasE     bool
	Throttle uint64 // NVML clock event reasons bitmask
	HasThr   bool
}

func (s *Sample) Set(m Metric, v float64) {
	s.V[m] = v
	s.Have |= 1 << m
}

// Has reports whether the sample holds metric m.
func (s *Sample) Has(m Metric) bool { return s.Have&(1<<m) != 0 }

// throttleNames are NVML's clock event reasons (nvmlClocksEventReason*).
var throttleNames = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// ThrottleReasons names the bits of an NVML clock event reasons mask.
func ThrottleReasons(mask uint64) []string {
	var out []string
	for _, t := range throttleNames {
		if mask&t.bit != 0 {
			out = append(out, t.name)
			mask &^= t.bit
		}
	}
	for mask != 0 {
		b := uint64(1) << bits.TrailingZeros64(mask)
		out = append(out, "reason_0x"+strings.TrimLeft(hex(b), "0"))
		mask &^= b
	}
	return out
}

// Slowing are the reasons that mean the clocks were held down by power or
// heat (not idleness or settings): a throttled measurement.
const Slowing = 0x4 | 0x8 | 0x20 | 0x40 | 0x80

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}
