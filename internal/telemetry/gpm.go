package telemetry

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/tokbench/tokbench/gpu"
)

// gpmState reads GPU Performance Monitoring metrics (Hopper and newer):
// each is a rate between two GPM samples, so the previous one is kept.
type gpmState struct {
	ok        bool
	prev, cur nvml.GpmSample
	havePrev  bool
	lib       nvml.Interface
	dev       nvml.Device
	req       nvml.GpmMetricsGetType
}

var gpmMetrics = []struct {
	id nvml.GpmMetricId
	m  gpu.Metric
}{
	{nvml.GPM_METRIC_DRAM_BW_UTIL, gpu.DRAMBW},
	{nvml.GPM_METRIC_SM_UTIL, gpu.SMActive},
	{nvml.GPM_METRIC_SM_OCCUPANCY, gpu.SMOccupancy},
	{nvml.GPM_METRIC_ANY_TENSOR_UTIL, gpu.TensorActive},
}

func newGPM(lib nvml.Interface, d nvml.Device) *gpmState {
	g := &gpmState{lib: lib, dev: d}
	if lib == nil {
		return g
	}
	if sup, ret := d.GpmQueryDeviceSupport(); ret != nvml.SUCCESS || sup.IsSupportedDevice == 0 {
		return g
	}
	var ret nvml.Return
	if g.prev, ret = lib.GpmSampleAlloc(); ret != nvml.SUCCESS {
		return g
	}
	if g.cur, ret = lib.GpmSampleAlloc(); ret != nvml.SUCCESS {
		return g
	}
	g.ok = true
	g.req.Version = nvml.GPM_METRICS_GET_VERSION
	g.req.NumMetrics = uint32(len(gpmMetrics))
	for i, gm := range gpmMetrics {
		g.req.Metrics[i].MetricId = uint32(gm.id)
	}
	return g
}

func (g *gpmState) read(smp *gpu.Sample) {
	if !g.ok {
		return
	}
	if ret := g.cur.Get(g.dev); ret != nvml.SUCCESS {
		return
	}
	if g.havePrev {
		g.req.Sample1, g.req.Sample2 = g.prev, g.cur
		if ret := g.lib.GpmMetricsGet(&g.req); ret == nvml.SUCCESS {
			for i, gm := range gpmMetrics {
				if g.req.Metrics[i].NvmlReturn == uint32(nvml.SUCCESS) {
					smp.Set(gm.m, g.req.Metrics[i].Value)
				}
			}
		}
	}
	g.prev, g.cur = g.cur, g.prev
	g.havePrev = true
}
