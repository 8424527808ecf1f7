package exporter

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/internal/telemetry"
)

// samples exposes a sampler's latest reading of each device at scrape
// time: tokbench_<metric>{device="0"|"host"} (gpu_util, power_w, ...), and
// the GPUs' energy counter.
type samples struct{ s *telemetry.Sampler }

// WatchSampler adds the sampler's latest readings to the metrics.
func (e *Exporter) WatchSampler(s *telemetry.Sampler) {
	e.reg.MustRegister(samples{s})
}

// Describe sends nothing: the metrics depend on what the devices support
// (an unchecked collector).
func (samples) Describe(chan<- *prometheus.Desc) {}

// Collect reads the last sample of each device from the last two seconds.
func (t samples) Collect(ch chan<- prometheus.Metric) {
	last := map[int8]gpu.Sample{}
	var order []int8
	for _, smp := range t.s.Recent(2 * time.Second) {
		if _, ok := last[smp.Dev]; !ok {
			order = append(order, smp.Dev)
		}
		last[smp.Dev] = smp
	}
	for _, dev := range order {
		smp := last[dev]
		name := "host"
		if dev >= 0 {
			name = strconv.Itoa(int(dev))
		}
		for m := gpu.Metric(0); m < gpu.NumMetrics; m++ {
			if smp.Has(m) {
				d := prometheus.NewDesc("tokbench_"+m.String(), "Telemetry: "+m.String()+" (latest sample).", []string{"device"}, nil)
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, smp.V[m], name)
			}
		}
		if smp.HasE {
			d := prometheus.NewDesc("tokbench_gpu_energy_joules_total", "The GPU's energy counter since the driver loaded.", []string{"device"}, nil)
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(smp.Energy)/1000, name)
		}
	}
}
