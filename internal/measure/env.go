package measure

import (
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/telemetry"
)

// Env is where tests run (plan.Env).
type Env = plan.Env

// DescribeEnv reads the environment (engine.Init first). What NVML says of
// the GPUs comes with it when NVML is there.
func DescribeEnv(version string) Env {
	env := Env{Version: version, Host: host.Read(), Devices: engine.Devices(), CPUFeatures: engine.CPUFeatures()}
	env.GPUs, _ = telemetry.ReadGPUs()
	env.CacheDir, _ = plan.CacheDir()
	return env
}

// free is the memory free now: on the GPUs llama.cpp sees and in the host.
func free() plan.Free {
	f := plan.Free{Host: int64(host.MemAvailable())}
	for _, d := range engine.GPUs() {
		f.GPUs, f.HasGPU = f.GPUs+int64(d.MemoryFree), true
	}
	return f
}
