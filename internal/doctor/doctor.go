// Package doctor checks, read-only, whether a machine is fit to benchmark
// on, as pyperf's "system show" does: CPU governor and boost, SMT, load
// and busy processes, swap, memory free against a model, NUMA, huge
// pages. (The NVIDIA GPUs' checks read NVML: telemetry.Checks.) Each
// finding says what it does to results and how to fix it; tokbench never
// changes any of it.
package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/host"
)

// level says how much a finding matters to results.
type level string

// Levels.
const (
	OK   level = "ok"
	Info level = "info" // worth knowing when comparing results
	Warn level = "warn" // makes results slower or noisier than the machine gives
)

// Finding is one check's result.
type Finding struct {
	Check  string `json:"check"`
	Level  level  `json:"level"`
	Says   string `json:"says"`             // what was found
	Effect string `json:"effect,omitempty"` // what it does to results
	Fix    string `json:"fix,omitempty"`    // how to fix it (tokbench does not)
}

// Host checks the CPU side of the machine whose /proc and /sys are under
// root ("/" live; a fixture tree in tests). need is the memory a
// benchmark will need (0: not asked); busy lists the processes that used
// CPU while the checks ran (nil: not sampled).
func Host(root string, need uint64, busy []process) []Finding {
	var out []Finding
	cpu := filepath.Join(root, "sys", "devices", "system", "cpu")
	out = append(out, governor(cpu), boost(cpu), smt(cpu), load(root), swap(root), memory(root, need), numa(root), hugePages(root))
	if busy != nil {
		out = append(out, processes(busy))
	}
	return out
}

func read(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func governor(cpu string) Finding {
	f := Finding{Check: "cpu governor"}
	g := read(filepath.Join(cpu, "cpu0", "cpufreq", "scaling_governor"))
	switch g {
	case "":
		f.Level, f.Says = Info, "no frequency scaling exposed (a VM, or the firmware decides)"
	case "performance":
		f.Level, f.Says = OK, "performance"
	default:
		f.Level, f.Says = Warn, g
		f.Effect = "clocks rise and fall with load: short tests run slower and vary more"
		f.Fix = "cpupower frequency-set -g performance (as root)"
	}
	return f
}

func boost(cpu string) Finding {
	f := Finding{Check: "cpu boost"}
	if v := read(filepath.Join(cpu, "intel_pstate", "no_turbo")); v != "" {
		f.Says = "turbo " + map[string]string{"0": "on", "1": "off"}[v]
	} else if v := read(filepath.Join(cpu, "cpufreq", "boost")); v != "" {
		f.Says = "boost " + map[string]string{"1": "on", "0": "off"}[v]
	}
	if f.Says == "" {
		f.Level, f.Says = Info, "not exposed"
		return f
	}
	f.Level = Info
	if strings.HasSuffix(f.Says, "on") {
		f.Effect = "boost clocks depend on temperature and how many cores are busy: results vary with the room and the load"
		f.Fix = "for repeatable numbers turn it off (echo 1 > .../intel_pstate/no_turbo, or 0 > .../cpufreq/boost); compare like with like"
	}
	return f
}

func smt(cpu string) Finding {
	f := Finding{Check: "smt"}
	switch read(filepath.Join(cpu, "smt", "active")) {
	case "1":
		f.Level, f.Says = Info, "on: two threads share each core"
		f.Effect = "-t above the physical cores makes threads compete for a core's units"
		f.Fix = "keep -t at the physical cores (tokbench's default)"
	case "0":
		f.Level, f.Says = OK, "off"
	default:
		f.Level, f.Says = Info, "not exposed"
	}
	return f
}

func load(root string) Finding {
	f := Finding{Check: "load average", Level: OK}
	fields := strings.Fields(read(filepath.Join(root, "proc", "loadavg")))
	cpus := countCPUs(root)
	if len(fields) == 0 || cpus == 0 {
		f.Level, f.Says = Info, "unknown"
		return f
	}
	l1, _ := strconv.ParseFloat(fields[0], 64)
	f.Says = fmt.Sprintf("%.2f over the last minute on %d CPUs", l1, cpus)
	if l1 > 0.25*float64(cpus) {
		f.Level = Warn
		f.Effect = "other work competes for the CPUs: t/s drops and varies"
		f.Fix = "stop the other work (see busy processes), or benchmark on a quiet machine"
	}
	return f
}

func countCPUs(root string) int {
	n := 0
	for _, line := range strings.Split(read(filepath.Join(root, "proc", "stat")), "\n") {
		if strings.HasPrefix(line, "cpu") && !strings.HasPrefix(line, "cpu ") {
			n++
		}
	}
	return n
}

// meminfo reads /proc/meminfo's values in bytes.
func meminfo(root string) map[string]uint64 {
	m := map[string]uint64{}
	for _, line := range strings.Split(read(filepath.Join(root, "proc", "meminfo")), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) > 0 {
			n, _ := strconv.ParseUint(f[0], 10, 64)
			m[k] = n * 1024
		}
	}
	return m
}

func swap(root string) Finding {
	m := meminfo(root)
	f := Finding{Check: "swap", Level: OK}
	used := m["SwapTotal"] - min(m["SwapFree"], m["SwapTotal"])
	f.Says = fmt.Sprintf("%.0f MiB of %.0f MiB in use", mib(used), mib(m["SwapTotal"]))
	if used > 64<<20 {
		f.Level = Warn
		f.Effect = "pages of the model or the KV cache may be swapped out: decode stalls on disk"
		f.Fix = "free memory (or swapoff -a; swapon -a to bring pages back) before benchmarking"
	}
	return f
}

func memory(root string, need uint64) Finding {
	m := meminfo(root)
	f := Finding{Check: "memory", Level: OK, Says: fmt.Sprintf("%.1f GiB available of %.1f GiB", gib(m["MemAvailable"]), gib(m["MemTotal"]))}
	if need > 0 {
		f.Says += fmt.Sprintf("; the model needs about %.2f GiB", gib(need))
		if need > m["MemAvailable"] {
			f.Level = Warn
			f.Effect = "the model will not fit: tokbench refuses the point, or the OS pages it from disk"
			f.Fix = "free memory, use a smaller quantization or offload layers to a GPU (-ngl)"
		}
	}
	return f
}

func numa(root string) Finding {
	nodes, _ := filepath.Glob(filepath.Join(root, "sys", "devices", "system", "node", "node[0-9]*"))
	f := Finding{Check: "numa", Level: OK, Says: fmt.Sprintf("%d node(s)", max(1, len(nodes)))}
	if len(nodes) > 1 {
		f.Level = Info
		f.Effect = "threads on one node reading weights placed on another go through the interconnect: slower, and dependent on where the pages landed"
		f.Fix = "pin with numactl --cpunodebind=N --membind=N tokbench ..., and compare runs pinned alike"
	}
	return f
}

func hugePages(root string) Finding {
	v := read(filepath.Join(root, "sys", "kernel", "mm", "transparent_hugepage", "enabled"))
	f := Finding{Check: "transparent huge pages", Level: Info, Says: "not exposed"}
	if i, j := strings.Index(v, "["), strings.Index(v, "]"); i >= 0 && j > i {
		f.Says = v[i+1 : j]
		f.Level = OK
		if f.Says == "always" {
			f.Level = Info
			f.Effect = "khugepaged compacts memory in the background: rare stalls while measuring"
			f.Fix = "madvise is the quieter setting (echo madvise > /sys/kernel/mm/transparent_hugepage/enabled)"
		}
	}
	return f
}

// process is one process's CPU use over a short window.
type process struct {
	PID  int
	Name string
	Pct  float64 // of one core
}

// Busy samples every process's CPU time twice, interval apart, and lists
// those that used more than 5% of a core, busiest first (self left out).
func Busy(root string, interval time.Duration) []process {
	a := processTimes(root)
	time.Sleep(interval)
	b := processTimes(root)
	self := os.Getpid()
	out := []process{}
	for pid, tb := range b {
		ta, ok := a[pid]
		if !ok || pid == self {
			continue
		}
		pct := 100 * float64(tb.jiffies-ta.jiffies) / 100 / interval.Seconds()
		if pct > 5 {
			out = append(out, process{PID: pid, Name: tb.name, Pct: pct})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pct > out[j].Pct })
	return out
}

type procTime struct {
	name    string
	jiffies uint64
}

func processTimes(root string) map[int]procTime {
	out := map[int]procTime{}
	stats, _ := filepath.Glob(filepath.Join(root, "proc", "[0-9]*", "stat"))
	for _, p := range stats {
		if pid, name, jiffies, ok := host.ParseProcStat(read(p)); ok {
			out[pid] = procTime{name: name, jiffies: jiffies}
		}
	}
	return out
}

func processes(busy []process) Finding {
	f := Finding{Check: "busy processes", Level: OK, Says: "none above 5% of a core"}
	if len(busy) == 0 {
		return f
	}
	var names []string
	for _, p := range busy[:min(len(busy), 5)] {
		names = append(names, fmt.Sprintf("%s (pid %d) %.0f%%", p.Name, p.PID, p.Pct))
	}
	f.Level, f.Says = Warn, strings.Join(names, ", ")
	f.Effect = "they take CPU time and memory bandwidth from the benchmark"
	f.Fix = "stop them, or benchmark on a quiet machine"
	return f
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
func gib(b uint64) float64 { return float64(b) / (1 << 30) }
