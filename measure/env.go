package measure

import (
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/plan"
	"github.com/tokbench/tokbench/telemetry"
)

// Env is where tests run (plan.Env).
type Env = plan.Env

// DescribeEnv reads the environment (engine.Init first). The GPU profile
// comes from NVML when it is there; without it the profile is empty.
func DescribeEnv(version string) Env {
	env := Env{Version: version, Host: gpu.ReadHost(), Devices: engine.Devices(), CPUFeatures: engine.CPUFeatures()}
	env.GPUs, _ = telemetry.ReadProfiles()
	env.CacheDir, _ = plan.CacheDir()
	return env
}

// free is the memory free now: on the GPUs llama.cpp sees and in the host.
func free() plan.Free {
	f := plan.Free{Host: int64(gpu.MemAvailable())}
	for _, d := range engine.GPUs() {
		f.GPUs, f.HasGPU = f.GPUs+int64(d.MemoryFree), true
	}
	return f
}
