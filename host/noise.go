package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPUCounters are the machine's CPU counters at one instant, read from
// /proc and /sys below a root ("/" on a live machine; a fixture tree in
// tests). A counter the kernel does not expose is zero (frequencies) or
// empty (the governor).
type CPUCounters struct {
	CPUs      int
	Busy      uint64 // jiffies all CPUs spent running (user, nice, system, irq, softirq)
	Idle      uint64 // jiffies idle or waiting for I/O
	Steal     uint64 // jiffies a hypervisor gave to other guests
	Self      uint64 // jiffies this process ran (utime + stime, all threads)
	MajFaults uint64 // this process's major page faults: pages read from disk
	CurKHz    uint64 // sum over CPUs of the current frequency
	MaxKHz    uint64 // sum over the same CPUs of the maximum frequency
	Throttles uint64 // thermal throttle events so far, cores and packages
	Governor  string // cpu0's frequency governor
	At        time.Time
}

// jiffiesPerSecond is USER_HZ, 100 on every Linux architecture tokbench
// runs on.
const jiffiesPerSecond = 100

// ReadCPUCounters reads the counters under root; self is the process
// whose CPU time is ours ("self" for this one).
func ReadCPUCounters(root, self string) CPUCounters {
	c := CPUCounters{At: time.Now()}
	if b, err := os.ReadFile(filepath.Join(root, "proc", "stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) > 8 && f[0] == "cpu":
				v := make([]uint64, 8)
				for i := range v {
					v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
				}
				// user nice system idle iowait irq softirq steal
				c.Busy, c.Idle, c.Steal = v[0]+v[1]+v[2]+v[5]+v[6], v[3]+v[4], v[7]
			case strings.HasPrefix(f0(f), "cpu"):
				c.CPUs++
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc", self, "stat")); err == nil {
		_, _, c.Self, _ = ParseProcStat(string(b))
		c.MajFaults = majorFaults(string(b))
	}
	cpus, _ := filepath.Glob(filepath.Join(root, "sys", "devices", "system", "cpu", "cpu[0-9]*"))
	for _, d := range cpus {
		cur, max := readUint(filepath.Join(d, "cpufreq", "scaling_cur_freq")), readUint(filepath.Join(d, "cpufreq", "cpuinfo_max_freq"))
		if cur > 0 && max > 0 {
			c.CurKHz, c.MaxKHz = c.CurKHz+cur, c.MaxKHz+max
		}
		c.Throttles += readUint(filepath.Join(d, "thermal_throttle", "core_throttle_count")) +
			readUint(filepath.Join(d, "thermal_throttle", "package_throttle_count"))
	}
	c.Governor = readTrim(filepath.Join(root, "sys", "devices", "system", "cpu", "cpu0", "cpufreq", "scaling_governor"))
	return c
}

// ParseProcStat reads a /proc/PID/stat line: the process's id, its
// command name and the CPU time it used (utime + stime, all threads), in
// jiffies. The name may hold spaces and parentheses: the fields after it
// count from its last ")".
func ParseProcStat(line string) (pid int, name string, jiffies uint64, ok bool) {
	i, j := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if i < 0 || j < i {
		return 0, "", 0, false
	}
	f := strings.Fields(line[j+1:])
	if len(f) < 13 {
		return 0, "", 0, false
	}
	pid, _ = strconv.Atoi(strings.TrimSpace(line[:i]))
	u, _ := strconv.ParseUint(f[11], 10, 64)
	s, _ := strconv.ParseUint(f[12], 10, 64)
	return pid, line[i+1 : j], u + s, true
}

// majorFaults is a /proc/PID/stat line's majflt (field 12), 0 if absent.
func majorFaults(line string) uint64 {
	f := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
	if len(f) < 10 {
		return 0
	}
	v, _ := strconv.ParseUint(f[9], 10, 64)
	return v
}

func f0(f []string) string {
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func readUint(path string) uint64 {
	v, _ := strconv.ParseUint(readTrim(path), 10, 64)
	return v
}

// Noise is what else the machine did while a test was measured, and
// whether the test's figures can be vouched for.
type Noise struct {
	// OtherCPUPct is the CPU other processes used, in percent of one core
	// (the machine's busy time less this process's).
	OtherCPUPct float64 `json:"other_cpu_pct"`
	// StealPct is the time a hypervisor gave to other guests, in percent
	// of the machine's CPU time.
	StealPct float64 `json:"steal_pct"`
	// FreqPct is the CPUs' mean frequency as a percent of their maximum,
	// at the end of the window, where the kernel says.
	FreqPct  *float64 `json:"freq_pct,omitempty"`
	Governor string   `json:"governor,omitempty"`
	// GPUProcesses are other compute processes on the GPUs at the end of
	// the test, as NVML lists them (with telemetry on).
	GPUProcesses   []string `json:"gpu_processes,omitempty"`
	ThrottleEvents uint64   `json:"thermal_throttle_events,omitempty"`
	// MajorFaults are this process's major page faults in the window:
	// pages of a mapped model read from disk while it was measured.
	MajorFaults uint64 `json:"major_faults,omitempty"`
	// Outliers are the repetitions more than 3 robust sigmas from the
	// median (their indices in samples_ts); OutliersDropped says whether
	// --drop-outliers took them out of the figures.
	Outliers        []int `json:"outliers,omitempty"`
	OutliersDropped bool  `json:"outliers_dropped,omitempty"`
	Quiet           bool  `json:"quiet"`
	// Warnings say what was not quiet, what it does to the figures and
	// what to do.
	Warnings []string `json:"warnings,omitempty"`
}

// Limits above which a machine is not quiet.
const (
	MaxOtherCPUPct = 25 // of one core
	MaxStealPct    = 2
	MinFreqPct     = 90
	// MaxMajorFaults is how many pages may be read from disk in a test
	// (a few, e.g. a first touch) before its figures are not the memory's.
	MaxMajorFaults = 100
)

// NoiseBetween is the noise of the window between two readings.
func NoiseBetween(a, b CPUCounters) Noise {
	var n Noise
	wall := b.At.Sub(a.At).Seconds()
	if total := float64((b.Busy + b.Idle + b.Steal) - (a.Busy + a.Idle + a.Steal)); total > 0 {
		n.StealPct = 100 * float64(b.Steal-a.Steal) / total
	}
	if wall > 0 && b.Busy >= a.Busy {
		// Less two ticks: the counters move in whole ticks (10 ms), so
		// a test of a few milliseconds would otherwise see a tick of its
		// own as hundreds of percent of another's.
		other := float64(b.Busy-a.Busy) - float64(b.Self-a.Self) - 2
		n.OtherCPUPct = max(0, 100*other/jiffiesPerSecond/wall)
	}
	if b.MaxKHz > 0 {
		f := 100 * float64(b.CurKHz) / float64(b.MaxKHz)
		n.FreqPct = &f
	}
	n.Governor, n.ThrottleEvents = b.Governor, b.Throttles-min(a.Throttles, b.Throttles)
	if n.OtherCPUPct > MaxOtherCPUPct {
		n.Warnings = append(n.Warnings, fmt.Sprintf("other processes used %.0f%% CPU (of one core) during this test: its t/s is lower and noisier than this machine gives; rerun on a quiet machine", n.OtherCPUPct))
	}
	if n.StealPct > MaxStealPct {
		n.Warnings = append(n.Warnings, fmt.Sprintf("the hypervisor gave %.1f%% of the CPU time to other guests: a shared VM; rerun on dedicated cores", n.StealPct))
	}
	if n.FreqPct != nil && *n.FreqPct < MinFreqPct {
		n.Warnings = append(n.Warnings, fmt.Sprintf("the CPUs ran at %.0f%% of their maximum frequency (governor %s): set the performance governor, or compare only with runs at the same clocks", *n.FreqPct, orNone(n.Governor)))
	}
	if b.MajFaults >= a.MajFaults {
		n.MajorFaults = b.MajFaults - a.MajFaults
	}
	if n.MajorFaults > MaxMajorFaults {
		n.Warnings = append(n.Warnings, fmt.Sprintf("%d major page faults: the mapped model's pages were read from disk while it was measured (evicted by memory pressure or the kernel's reclaim), so its t/s is the disk's: rerun with --no-mmap, or free memory", n.MajorFaults))
	}
	if n.ThrottleEvents > 0 {
		n.Warnings = append(n.Warnings, fmt.Sprintf("%d thermal throttle events: the CPU slowed down to cool; cool the machine or lower its load", n.ThrottleEvents))
	}
	n.Quiet = len(n.Warnings) == 0
	return n
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
