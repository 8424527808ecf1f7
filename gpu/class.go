package gpu

import (
	"fmt"
	"strings"
)

// slug is s in lower case, each run of anything but a-z and 0-9 one
// "-", none at either end. (Written out, not a regexp: a fleet's report
// names a million records' classes, and the regexp was a fifth of its
// time.)
func slug(s string) string {
	s = strings.ToLower(s)
	b := make([]byte, 0, len(s))
	dash := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && len(b) > 0 {
				b = append(b, '-')
			}
			b, dash = append(b, c), false
		} else {
			dash = true
		}
	}
	return string(b)
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
