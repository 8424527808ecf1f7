package gpu

import (
	"cmp"
	"slices"
)

// Stat is the mean and maximum of a metric over a window.
type Stat struct {
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// DeviceWindow summarizes one device (or the host) over a window. Metrics
// the device did not report are absent from Metrics.
type DeviceWindow struct {
	Dev      int             `json:"dev"` // -1: host
	Samples  int             `json:"samples"`
	Metrics  map[string]Stat `json:"metrics,omitempty"`
	EnergyJ  *float64        `json:"energy_j,omitempty"`
	Throttle []string        `json:"clock_event_reasons,omitempty"`
	// Throttled: power or thermal limits held the clocks down (not
	// idleness or settings).
	Throttled bool `json:"throttled,omitempty"`
}

// Window is what the hardware did during one phase of a measurement.
type Window struct {
	Seconds float64        `json:"seconds"`
	Devices []DeviceWindow `json:"devices"`
}

// EnergyJ is the GPUs' energy over the window, summed; ok is false when
// no device reported energy or power.
func (w *Window) EnergyJ() (j float64, ok bool) {
	for _, d := range w.Devices {
		if d.EnergyJ != nil {
			j += *d.EnergyJ
			ok = true
		}
	}
	return j, ok
}

// Summarize makes the window [a, b] (nanoseconds on the samples' clock)
// of samples, which may reach a little beyond it on either side.
func Summarize(all []Sample, a, b int64) Window {
	w := Window{Seconds: float64(b-a) / 1e9}
	byDev := map[int8][]Sample{}
	var order []int8
	for _, smp := range all {
		if _, ok := byDev[smp.Dev]; !ok {
			order = append(order, smp.Dev)
		}
		byDev[smp.Dev] = append(byDev[smp.Dev], smp)
	}
	for _, dev := range order {
		w.Devices = append(w.Devices, summarizeDevice(dev, byDev[dev], a, b))
	}
	return w
}

func summarizeDevice(dev int8, smps []Sample, a, b int64) DeviceWindow {
	dw := DeviceWindow{Dev: int(dev)}
	var sum, mx [numMetrics]float64
	var cnt [numMetrics]int
	var reasons uint64
	inside := func(s Sample) bool { return s.T >= a && s.T <= b }
	if !slices.ContainsFunc(smps, inside) && len(smps) > 0 {
		// A window shorter than the sampling period (a short test, the
		// host read at 2 Hz) takes the reading nearest its middle.
		mid := (a + b) / 2
		near := slices.MinFunc(smps, func(x, y Sample) int { return cmp.Compare(abs(x.T-mid), abs(y.T-mid)) })
		inside = func(s Sample) bool { return s.T == near.T }
	}
	for _, s := range smps {
		if !inside(s) {
			continue
		}
		dw.Samples++
		for m := Metric(0); m < numMetrics; m++ {
			if s.Has(m) {
				if cnt[m] == 0 || s.V[m] > mx[m] {
					mx[m] = s.V[m]
				}
				sum[m] += s.V[m]
				cnt[m]++
			}
		}
		if s.HasThr {
			reasons |= s.Throttle
		}
	}
	for m := Metric(0); m < numMetrics; m++ {
		if cnt[m] > 0 {
			if dw.Metrics == nil {
				dw.Metrics = map[string]Stat{}
			}
			dw.Metrics[m.String()] = Stat{Mean: sum[m] / float64(cnt[m]), Max: mx[m]}
		}
	}
	dw.Throttle = ThrottleReasons(reasons)
	dw.Throttled = reasons&Slowing != 0
	if e, ok := energy(smps, a, b); ok {
		dw.EnergyJ = &e
	} else if st, ok := dw.Metrics[Power.String()]; ok {
		e := st.Mean * float64(b-a) / 1e9
		dw.EnergyJ = &e
	}
	return dw
}

// energy reads the energy counter at a and b, interpolating between the
// samples that bracket each end.
func energy(smps []Sample, a, b int64) (float64, bool) {
	at := func(t int64) (float64, bool) {
		var lo, hi *Sample
		for i := range smps {
			s := &smps[i]
			if !s.HasE {
				continue
			}
			if s.T <= t {
				lo = s
			}
			if s.T >= t && hi == nil {
				hi = s
			}
		}
		switch {
		case lo == nil || hi == nil:
			return 0, false
		case lo.T == hi.T:
			return float64(lo.Energy), true
		}
		f := float64(t-lo.T) / float64(hi.T-lo.T)
		return float64(lo.Energy) + f*(float64(hi.Energy)-float64(lo.Energy)), true
	}
	ea, ok1 := at(a)
	eb, ok2 := at(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	return (eb - ea) / 1000, true
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
