// Package host describes the machine's CPU side, from /proc and /sys in
// plain Go: its CPU, cores and memory (Read), and what else the machine
// did while a test was measured (CPU counters before and after, and the
// Noise between them). Package gpu describes the GPUs.
package host

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Host is the static description of the machine's CPU side.
type Host struct {
	CPUModel     string `json:"cpu_model"`
	Cores        int    `json:"cores"`   // physical cores
	Threads      int    `json:"threads"` // logical CPUs
	NUMANodes    int    `json:"numa_nodes"`
	MemTotal     uint64 `json:"mem_total"`
	MemAvailable uint64 `json:"mem_available"`
	CacheL2      string `json:"cache_l2,omitempty"`
	CacheL3      string `json:"cache_l3,omitempty"`
	OS           string `json:"os"`
	Arch         string `json:"arch"`
	Name         string `json:"hostname,omitempty"`
}

// Read reads the host description from /proc and /sys (Linux); other
// systems get what the Go runtime knows.
func Read() Host {
	h := Host{Threads: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	h.Name, _ = os.Hostname()
	h.CPUModel, h.Cores = cpuinfo("/proc/cpuinfo")
	if h.Cores == 0 {
		h.Cores = h.Threads
	}
	if h.CPUModel == "" {
		h.CPUModel = runtime.GOARCH
	}
	h.MemTotal, h.MemAvailable = meminfo("/proc/meminfo")
	nodes, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	h.NUMANodes = max(1, len(nodes))
	h.CacheL2 = readTrim("/sys/devices/system/cpu/cpu0/cache/index2/size")
	h.CacheL3 = readTrim("/sys/devices/system/cpu/cpu0/cache/index3/size")
	return h
}

// MemAvailable is the memory the kernel says can be used without swapping,
// read fresh (for the pre-load memory check); 0 if unknown.
func MemAvailable() uint64 {
	_, avail := meminfo("/proc/meminfo")
	return avail
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// cpuinfo returns the model name and the number of distinct physical cores.
func cpuinfo(path string) (model string, cores int) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0
	}
	defer f.Close()
	seen := map[string]bool{}
	var phys, core string
	flush := func() {
		if core != "" {
			seen[phys+"/"+core] = true
		}
		phys, core = "", ""
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name", "Model", "cpu model":
			if model == "" {
				model = v
			}
		case "physical id":
			phys = v
		case "core id":
			core = v
		}
	}
	flush()
	return model, len(seen)
}

func meminfo(path string) (total, avail uint64) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		n, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			total = n * 1024
		case "MemAvailable:":
			avail = n * 1024
		}
	}
	return total, avail
}

// String is a one-line summary.
func (h Host) String() string {
	s := fmt.Sprintf("%s, %d cores / %d threads, %.1f GiB RAM (%.1f GiB available)",
		h.CPUModel, h.Cores, h.Threads, float64(h.MemTotal)/(1<<30), float64(h.MemAvailable)/(1<<30))
	if h.NUMANodes > 1 {
		s += fmt.Sprintf(", %d NUMA nodes", h.NUMANodes)
	}
	if h.CacheL3 != "" {
		s += ", L3 " + h.CacheL3
	}
	return s
}
