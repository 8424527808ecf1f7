package telemetry

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/tokbench/tokbench/gpu"
)

// fakeClock advances only when told; the energy counter follows it.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

const watts = 300.0

// equip sets the mock functions a sampler and a profile call on one
// device. Setters (clocks, power limits, MIG) stay unset: calling one
// would panic, which is how these tests prove tokbench never does.
func equip(d *server.Device, clk *fakeClock, epoch *time.Time, hopper bool) {
	notSup := nvml.ERROR_NOT_SUPPORTED
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: 80, Memory: 60}, nvml.SUCCESS
	}
	d.GetClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		if t == nvml.CLOCK_SM {
			return 1980, nvml.SUCCESS
		}
		return 2619, nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(watts * 1000), nvml.SUCCESS }
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 61, nvml.SUCCESS }
	d.GetPcieThroughputFunc = func(nvml.PcieUtilCounter) (uint32, nvml.Return) { return 0, notSup }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		// mJ: 300 W since the epoch, plus an offset.
		return 5_000_000 + uint64(watts*float64(clk.t.Sub(*epoch).Milliseconds())), nvml.SUCCESS
	}
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		return nvml.ClocksEventReasonSwPowerCap | 0x40, nvml.SUCCESS // 0x40: hw thermal slowdown
	}
	d.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
		if hopper {
			return nvml.GpmSupport{IsSupportedDevice: 1}, nvml.SUCCESS
		}
		return nvml.GpmSupport{}, nvml.SUCCESS
	}
	d.GetAttributesFunc = func() (nvml.DeviceAttributes, nvml.Return) {
		return nvml.DeviceAttributes{MultiprocessorCount: 132}, nvml.SUCCESS
	}
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	if hopper {
		d.GetMemoryBusWidthFunc = func() (uint32, nvml.Return) { return 6144, nvml.SUCCESS }
		d.GetMaxClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
			if t == nvml.CLOCK_MEM {
				return 3201, nvml.SUCCESS
			}
			return 1980, nvml.SUCCESS
		}
	} else {
		d.GetMemoryBusWidthFunc = func() (uint32, nvml.Return) { return 0, notSup }
		d.GetMaxClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 0, notSup }
	}
}

func gpmLib(s *server.Server) {
	newSample := func() nvml.GpmSample {
		return &mock.GpmSample{GetFunc: func(nvml.Device) nvml.Return { return nvml.SUCCESS }}
	}
	s.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) { return newSample(), nvml.SUCCESS }
	s.GpmMetricsGetFunc = func(req *nvml.GpmMetricsGetType) nvml.Return {
		vals := map[uint32]float64{uint32(nvml.GPM_METRIC_DRAM_BW_UTIL): 55, uint32(nvml.GPM_METRIC_SM_UTIL): 70,
			uint32(nvml.GPM_METRIC_SM_OCCUPANCY): 40, uint32(nvml.GPM_METRIC_ANY_TENSOR_UTIL): 20}
		for i := uint32(0); i < req.NumMetrics; i++ {
			req.Metrics[i].Value = vals[req.Metrics[i].MetricId]
			req.Metrics[i].NvmlReturn = uint32(nvml.SUCCESS)
		}
		return nvml.SUCCESS
	}
}

func TestProfileH200(t *testing.T) {
	s := dgxh200.New()
	clk := &fakeClock{time.Now()}
	for _, d := range s.Devices {
		equip(d.(*server.Device), clk, &clk.t, true)
	}
	gpus, err := profiles(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 8 {
		t.Fatalf("%d GPUs, want 8", len(gpus))
	}
	g := gpus[0]
	if !strings.Contains(g.Name, "H200") || g.Compute != "9.0" || g.Driver != "550.54.15" || g.CUDADriver != "12.4" ||
		g.SMs != 132 || g.MemoryTotal != 144384<<20 || g.PowerLimitW != 700 || g.PCIeGen != 5 || g.UUID == "" {
		t.Errorf("profile %+v", g)
	}
	// 6144-bit bus (768 B) x 3201 MHz x 2 = 4916.7 GB/s; the datasheet says 4.8 TB/s.
	if g.BWSource != "nvml" || math.Abs(g.PeakBWGBs-4916.7) > 0.1 || g.Part == nil || math.Abs(g.PeakBWGBs/g.Part.BWGBs-1) > 0.03 {
		t.Errorf("peak bandwidth %.1f GB/s from %s, datasheet %+v", g.PeakBWGBs, g.BWSource, g.Part)
	}
}

func TestProfileFallsBackToDatasheet(t *testing.T) {
	s := dgxa100.New()
	clk := &fakeClock{time.Now()}
	for _, d := range s.Devices {
		equip(d.(*server.Device), clk, &clk.t, false)
	}
	gpus, err := profiles(s)
	if err != nil {
		t.Fatal(err)
	}
	g := gpus[0]
	if g.BusWidthBits != 0 || g.BWSource != "datasheet" || g.PeakBWGBs != 1555 || g.Part.BF16 != 312 {
		t.Errorf("A100 without bus width: %+v (datasheet %+v)", g, g.Part)
	}
}

func samplerFor(t *testing.T, s *server.Server, hopper bool) (*Sampler, *fakeClock) {
	d := s.Devices[0].(*server.Device)
	clk := &fakeClock{}
	var epoch time.Time
	equip(d, clk, &epoch, hopper)
	smp, err := NewSampler(s, []nvml.Device{d}, 20, 1024)
	if err != nil {
		t.Fatal(err)
	}
	epoch, clk.t = smp.epoch, smp.epoch
	smp.now = clk.now
	return smp, clk
}

func TestSamplerWindowH200(t *testing.T) {
	s := dgxh200.New()
	gpmLib(s)
	smp, clk := samplerFor(t, s, true)
	for i := 0; i < 21; i++ { // 0 .. 1 s, every 50 ms
		smp.SampleNow()
		clk.t = clk.t.Add(50 * time.Millisecond)
	}
	start, end := smp.epoch.Add(200*time.Millisecond), smp.epoch.Add(725*time.Millisecond)
	w := smp.Window(start, end)
	var dev *gpu.DeviceWindow
	for i := range w.Devices {
		if w.Devices[i].Dev == 0 {
			dev = &w.Devices[i]
		}
	}
	if dev == nil {
		t.Fatalf("no gpu.GPU in window %+v", w)
	}
	m := dev.Metrics
	if m["gpu_util"].Mean != 80 || m["mem_util"].Max != 60 || m["power_w"].Mean != watts || m["sm_clock_mhz"].Mean != 1980 || m["temp_c"].Max != 61 {
		t.Errorf("metrics %+v", m)
	}
	if m["dram_bw_util"].Mean != 55 || m["tensor_active"].Mean != 20 || m["sm_occupancy"].Mean != 40 {
		t.Errorf("GPM metrics missing: %+v", m)
	}
	if _, ok := m["pcie_tx_kbs"]; ok {
		t.Error("unsupported PCIe throughput reported")
	}
	// 300 W over 0.525 s, interpolated between the bracketing samples.
	if dev.EnergyJ == nil || math.Abs(*dev.EnergyJ-watts*0.525) > 0.01 {
		t.Errorf("energy %v J, want %.3f", dev.EnergyJ, watts*0.525)
	}
	if !dev.Throttled || strings.Join(dev.Throttle, ",") != "sw_power_cap,hw_thermal_slowdown" {
		t.Errorf("throttle %v %v", dev.Throttled, dev.Throttle)
	}
	if j, ok := w.EnergyJ(); !ok || j != *dev.EnergyJ {
		t.Errorf("window energy %v %v", j, ok)
	}
}

func TestSamplerA100HasNoGPM(t *testing.T) {
	s := dgxa100.New()
	smp, clk := samplerFor(t, s, false)
	for i := 0; i < 5; i++ {
		smp.SampleNow()
		clk.t = clk.t.Add(50 * time.Millisecond)
	}
	w := smp.Window(smp.epoch, clk.t)
	for _, d := range w.Devices {
		if d.Dev != 0 {
			continue
		}
		for _, k := range []string{"dram_bw_util", "sm_active", "tensor_active"} {
			if _, ok := d.Metrics[k]; ok {
				t.Errorf("A100 reported GPM metric %s", k)
			}
		}
		if d.Metrics["gpu_util"].Mean != 80 {
			t.Errorf("metrics %+v", d.Metrics)
		}
	}
}

func TestSampleAllocatesNothing(t *testing.T) {
	s := dgxh200.New()
	gpmLib(s)
	smp, clk := samplerFor(t, s, true)
	smp.SampleNow()
	allocs := testing.AllocsPerRun(200, func() {
		clk.t = clk.t.Add(50 * time.Millisecond)
		smp.SampleNow()
	})
	if allocs != 0 {
		t.Errorf("a sample allocates %.1f times", allocs)
	}
}

func TestThrottleReasons(t *testing.T) {
	got := gpu.ThrottleReasons(0x1 | 0x4 | 0x40 | 0x4000)
	if strings.Join(got, ",") != "gpu_idle,sw_power_cap,hw_thermal_slowdown,reason_0x4000" {
		t.Errorf("%v", got)
	}
	if len(gpu.ThrottleReasons(0)) != 0 {
		t.Error("no reasons expected for 0")
	}
}

// A host alone is sampled at HostRate however fast the rate asked.
func TestHostOnlySampler(t *testing.T) {
	smp, err := NewSampler(nil, nil, 200, 64)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	smp.Start()
	// Keep a core busy until the sampler's goroutine has taken 3 samples,
	// however slowly a loaded machine lets it run (at most 30 s).
	x := 0
	for len(smp.Samples(start, time.Now())) < 3 && time.Since(start) < 30*time.Second {
		for range 1 << 16 {
			x++
		}
	}
	took := time.Since(start)
	smp.Stop()
	if took < time.Second*2/hostRate*9/10 {
		t.Errorf("3 host samples in %v: faster than %d Hz", took, hostRate)
	}
	w := smp.Window(start, time.Now())
	if len(w.Devices) != 1 || w.Devices[0].Dev != -1 || w.Devices[0].Samples < 3 {
		t.Fatalf("window %+v", w)
	}
	m := w.Devices[0].Metrics
	if m["rss"].Mean <= 0 || m["mem_available"].Mean <= 0 || m["cpu_pct"].Max <= 10 {
		t.Errorf("host metrics %+v", m)
	}
	if _, err := NewSampler(nil, nil, 500, 8); err == nil {
		t.Error("500 Hz accepted")
	}
}

func TestNVMLUnavailableIsAnError(t *testing.T) {
	lib, err := OpenNVML()
	if err == nil {
		lib.Shutdown()
		t.Skip("this machine has NVML")
	}
	if !strings.HasPrefix(err.Error(), "NVML unavailable: ") {
		t.Errorf("error %q", err)
	}
}

// Other compute processes on a sampled GPU are named; this process is not.
func TestOtherProcesses(t *testing.T) {
	s := dgxh200.New()
	clk, epoch := &fakeClock{}, time.Time{}
	var devs []nvml.Device
	for i, d := range s.Devices[:3] {
		equip(d.(*server.Device), clk, &epoch, false)
		devs = append(devs, d)
		d.(*server.Device).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			switch i {
			case 1:
				return []nvml.ProcessInfo{{Pid: uint32(os.Getpid())}, {Pid: 4242, UsedGpuMemory: 2 << 30}}, nvml.SUCCESS
			case 2:
				return nil, nvml.ERROR_NOT_SUPPORTED
			}
			return []nvml.ProcessInfo{{Pid: uint32(os.Getpid()), UsedGpuMemory: 1 << 30}}, nvml.SUCCESS
		}
	}
	smp, err := NewSampler(s, devs, 20, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got := smp.OtherProcesses(); len(got) != 1 || got[0] != "pid 4242 on GPU 1 (2048 MiB)" {
		t.Errorf("others %v", got)
	}
}
