// Package telemetry watches the hardware while a benchmark runs: NVIDIA
// GPUs through NVML (github.com/NVIDIA/go-nvml, loaded at run time) and
// the host through /proc, sampled at a fixed rate into a ring that taking
// a sample does not allocate in, with windows per phase (gpu.Window).
package telemetry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/tokbench/tokbench/gpu"
)

// Sampler reads GPU (NVML) and host metrics at a fixed rate into a
// preallocated ring, beside a measurement. Timestamps are offsets on Go's
// monotonic clock from the sampler's epoch, the clock the engine's timings
// use, so a phase's window is a time range.
type Sampler struct {
	rate  time.Duration
	epoch time.Time
	now   func() time.Time // time.Now; tests drive a fake clock
	lib   nvml.Interface   // shut down by Stop, when Start opened it
	devs  []nvml.Device
	gpm   []*gpmState
	host  *hostReader
	// hostEvery: the host is read every hostEvery-th tick (HostRate).
	hostEvery, ticks int

	mu   sync.Mutex
	ring []gpu.Sample
	n    int64 // samples written since start

	stop chan struct{}
	done chan struct{}
}

// Rates a sampler accepts, in Hz.
const (
	minRate     = 1
	maxRate     = 200
	DefaultRate = 20
	// hostRate is the most the host is read per second: what it reports
	// (RSS, available memory, CPU use) moves slowly, and on a small
	// machine each wake-up of the sampler takes a core from the
	// benchmark's threads. A host alone is sampled at this rate.
	hostRate = 2
)

// NewSampler samples the given NVML devices (none: host only) at hz,
// keeping the last capacity samples.
func NewSampler(lib nvml.Interface, devs []nvml.Device, hz, capacity int) (*Sampler, error) {
	if hz < minRate || hz > maxRate {
		return nil, fmt.Errorf("sample rate %d Hz: use %d to %d", hz, minRate, maxRate)
	}
	if len(devs) == 0 {
		hz = min(hz, hostRate)
	}
	s := &Sampler{
		rate:      time.Second / time.Duration(hz),
		epoch:     time.Now(),
		now:       time.Now,
		devs:      devs,
		host:      newHostReader(),
		hostEvery: max(1, hz/hostRate),
		ring:      make([]gpu.Sample, capacity),
	}
	for _, d := range devs {
		s.gpm = append(s.gpm, newGPM(lib, d))
	}
	return s, nil
}

// Start begins sampling in a goroutine.
func (s *Sampler) Start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.rate)
		defer t.Stop()
		s.SampleNow()
		for {
			select {
			case <-s.stop:
				s.SampleNow()
				return
			case <-t.C:
				s.tick()
			}
		}
	}()
}

// Stop ends sampling (after one last sample) and waits for it.
func (s *Sampler) Stop() {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	if s.lib != nil {
		s.lib.Shutdown()
		s.lib = nil
	}
}

// SampleNow takes one sample of every device and of the host.
func (s *Sampler) SampleNow() { s.sample(true) }

// tick samples the devices, and the host every hostEvery ticks.
func (s *Sampler) tick() {
	s.ticks++
	s.sample(s.ticks%s.hostEvery == 0)
}

func (s *Sampler) sample(host bool) {
	t := s.now().Sub(s.epoch).Nanoseconds()
	for i, d := range s.devs {
		var smp gpu.Sample
		smp.T, smp.Dev = t, int8(i)
		readDevice(d, s.gpm[i], &smp)
		s.put(&smp)
	}
	if !host {
		return
	}
	var h gpu.Sample
	h.T, h.Dev = t, -1
	s.host.read(&h, time.Duration(t))
	s.put(&h)
}

func (s *Sampler) put(smp *gpu.Sample) {
	s.mu.Lock()
	s.ring[s.n%int64(len(s.ring))] = *smp
	s.n++
	s.mu.Unlock()
}

// readDevice fills a sample from NVML; unsupported calls leave their
// metric absent.
func readDevice(d nvml.Device, g *gpmState, smp *gpu.Sample) {
	if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
		smp.Set(gpu.GPUUtil, float64(u.Gpu))
		smp.Set(gpu.MemUtil, float64(u.Memory))
	}
	if c, ret := d.GetClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		smp.Set(gpu.SMClock, float64(c))
	}
	if c, ret := d.GetClockInfo(nvml.CLOCK_MEM); ret == nvml.SUCCESS {
		smp.Set(gpu.MemClock, float64(c))
	}
	if p, ret := d.GetPowerUsage(); ret == nvml.SUCCESS {
		smp.Set(gpu.Power, float64(p)/1000)
	}
	if t, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		smp.Set(gpu.Temp, float64(t))
	}
	if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		smp.Set(gpu.MemUsed, float64(m.Used))
	}
	if v, ret := d.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES); ret == nvml.SUCCESS {
		smp.Set(gpu.PCIeTx, float64(v))
	}
	if v, ret := d.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); ret == nvml.SUCCESS {
		smp.Set(gpu.PCIeRx, float64(v))
	}
	if e, ret := d.GetTotalEnergyConsumption(); ret == nvml.SUCCESS {
		smp.Energy, smp.HasE = e, true
	}
	if r, ret := d.GetCurrentClocksEventReasons(); ret == nvml.SUCCESS {
		smp.Throttle, smp.HasThr = r, true
	}
	g.read(smp)
}

// Samples returns the samples taken between from and to (the ring's
// capacity bounds how far back), oldest first. The ring is in time order,
// so the scan walks back from the newest and stops at from.
func (s *Sampler) Samples(from, to time.Time) []gpu.Sample {
	a, b := from.Sub(s.epoch).Nanoseconds(), to.Sub(s.epoch).Nanoseconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	first := max(int64(0), s.n-int64(len(s.ring)))
	i := s.n - 1
	for ; i >= first && s.ring[i%int64(len(s.ring))].T >= a; i-- {
	}
	var out []gpu.Sample
	for i++; i < s.n; i++ {
		smp := s.ring[i%int64(len(s.ring))]
		if smp.T > b {
			break
		}
		out = append(out, smp)
	}
	return out
}

// Recent returns the samples of the last d on the sampler's clock (oldest
// first): what a live exporter shows at scrape time.
func (s *Sampler) Recent(d time.Duration) []gpu.Sample {
	now := s.now()
	return s.Samples(now.Add(-d), now)
}

// writeJSONL writes the samples between from and to, one JSON object per
// line (t in seconds from the sampler's start, unix in seconds since 1970,
// dev -1 for the host, present metrics by name), for plotting.
func (s *Sampler) writeJSONL(w io.Writer, from, to time.Time) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, smp := range s.Samples(from, to) {
		// t counts from this sampler's start; unix places samples of
		// several processes (a sweep's workers) on one time line.
		m := map[string]any{"t": float64(smp.T) / 1e9, "unix": float64(s.epoch.UnixNano()+smp.T) / 1e9, "dev": smp.Dev}
		for k := gpu.Metric(0); k < gpu.NumMetrics; k++ {
			if smp.Has(k) {
				m[k.String()] = smp.V[k]
			}
		}
		if smp.HasE {
			m["energy_mj"] = smp.Energy
		}
		if smp.HasThr {
			m["clock_event_reasons"] = gpu.ThrottleReasons(smp.Throttle)
		}
		if err := enc.Encode(m); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Window summarizes the samples of [start, end].
func (s *Sampler) Window(start, end time.Time) gpu.Window {
	// One sample either side as well: energy is interpolated between the
	// readings that bracket the window.
	pad := 2 * s.rate
	all := s.Samples(start.Add(-pad), end.Add(pad))
	return gpu.Summarize(all, start.Sub(s.epoch).Nanoseconds(), end.Sub(s.epoch).Nanoseconds())
}

// OtherProcesses lists the compute processes other than this one on the
// sampled GPUs ("pid P on GPU i (M MiB)"), where the driver says: another
// process on the GPU shares its SMs and memory bandwidth with the
// benchmark.
func (s *Sampler) OtherProcesses() []string {
	self := uint32(os.Getpid())
	var out []string
	for i, d := range s.devs {
		procs, ret := d.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS {
			continue
		}
		for _, p := range procs {
			if p.Pid != self {
				out = append(out, fmt.Sprintf("pid %d on GPU %d (%.0f MiB)", p.Pid, i, float64(p.UsedGpuMemory)/(1<<20)))
			}
		}
	}
	return out
}
