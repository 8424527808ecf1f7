package gpu

import (
	"fmt"
	"regexp"
	"strings"
)

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// Class names a class of hardware whose numbers are comparable: on a GPU
// the backend, device model, memory size and driver major version; on the
// CPU the CPU model. Baselines and probe results are kept per class (a
// CPU's per thread count within it: a thread count is a setting of the
// test, as a batch size is, not another machine).
func Class(backend, device string, memBytes uint64, driver, cpuModel string) string {
	if strings.EqualFold(backend, "cpu") || device == "" {
		return "cpu-" + slug(cpuModel)
	}
	major, _, _ := strings.Cut(driver, ".")
	c := slug(backend) + "-" + slug(device)
	if memBytes > 0 {
		c += fmt.Sprintf("-%dg", (memBytes+(1<<29))>>30)
	}
	if major != "" {
		c += "-drv" + slug(major)
	}
	return c
}

// ClassOf is the class of the device that did the work: the CPU (backend
// CPU or none), else the GPU named gpuName or, better, described by
// profile (its memory and driver count too).
func ClassOf(backend, gpuName string, profile *GPU, cpuModel string) string {
	if strings.EqualFold(backend, "cpu") || backend == "" {
		return Class("cpu", "", 0, "", cpuModel)
	}
	if profile != nil {
		return Class(backend, profile.Name, profile.MemoryTotal, profile.Driver, cpuModel)
	}
	dev, _, _ := strings.Cut(gpuName, ",")
	return Class(backend, dev, 0, "", cpuModel)
}
