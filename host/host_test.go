package host

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUInfoCountsPhysicalCores(t *testing.T) {
	// Two sockets, two cores each, hyper-threaded: 8 logical, 4 physical.
	var s string
	for cpu := 0; cpu < 8; cpu++ {
		s += "processor\t: " + string(rune('0'+cpu)) + "\nmodel name\t: Test CPU 9000\n" +
			"physical id\t: " + string(rune('0'+cpu/4)) + "\ncore id\t\t: " + string(rune('0'+cpu%2)) + "\n\n"
	}
	p := filepath.Join(t.TempDir(), "cpuinfo")
	os.WriteFile(p, []byte(s), 0o644)
	model, cores := cpuinfo(p)
	if model != "Test CPU 9000" || cores != 4 {
		t.Errorf("got %q, %d cores; want Test CPU 9000, 4", model, cores)
	}
}

func TestMeminfo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(p, []byte("MemTotal:       16384 kB\nMemFree:  100 kB\nMemAvailable:    8192 kB\n"), 0o644)
	total, avail := meminfo(p)
	if total != 16384*1024 || avail != 8192*1024 {
		t.Errorf("total %d avail %d", total, avail)
	}
}

func TestReadHost(t *testing.T) {
	h := Read()
	if h.Threads < 1 || h.Cores < 1 || h.Cores > h.Threads {
		t.Errorf("implausible host %+v", h)
	}
	if _, err := os.Stat("/proc/meminfo"); err == nil && (h.MemTotal == 0 || h.MemAvailable > h.MemTotal) {
		t.Errorf("memory %d/%d", h.MemAvailable, h.MemTotal)
	}
}
