package telemetry

import (
	"bytes"
	"os"
	"time"

	"github.com/tokbench/tokbench/gpu"
)

// hostReader samples this process's CPU use and RSS and the system's
// available memory from procfs, reusing its files and buffer so a sample
// allocates nothing. Elsewhere than Linux the host metrics are absent.
type hostReader struct {
	stat, statm, meminfo *os.File
	buf                  [8192]byte
	lastTicks            float64
	lastT                time.Duration
	haveLast             bool
	page                 float64
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func newHostReader() *hostReader {
	h := &hostReader{page: float64(os.Getpagesize())}
	h.stat, _ = os.Open("/proc/self/stat")
	h.statm, _ = os.Open("/proc/self/statm")
	h.meminfo, _ = os.Open("/proc/meminfo")
	return h
}

func (h *hostReader) readFile(f *os.File) []byte {
	if f == nil {
		return nil
	}
	n, _ := f.ReadAt(h.buf[:], 0)
	return h.buf[:n]
}

func (h *hostReader) read(smp *gpu.Sample, t time.Duration) {
	if b := h.readFile(h.stat); len(b) > 0 {
		// Fields after the command name (which may hold spaces) start
		// at field 3; utime and stime are fields 14 and 15.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			f := fields(b[i+2:], 13)
			ticks := float64(f[11] + f[12])
			if h.haveLast && t > h.lastT {
				smp.Set(gpu.HostCPU, 100*(ticks-h.lastTicks)/clockTicks/(t-h.lastT).Seconds())
			}
			h.lastTicks, h.lastT, h.haveLast = ticks, t, true
		}
	}
	if b := h.readFile(h.statm); len(b) > 0 {
		smp.Set(gpu.HostRSS, float64(fields(b, 2)[1])*h.page)
	}
	if b := h.readFile(h.meminfo); len(b) > 0 {
		if i := bytes.Index(b, []byte("MemAvailable:")); i >= 0 {
			smp.Set(gpu.HostMemAvail, float64(fields(b[i+len("MemAvailable:"):], 1)[0])*1024)
		}
	}
}

// fields parses the first n space-separated unsigned numbers of b (a
// non-numeric field reads as 0) into a fixed array.
func fields(b []byte, n int) [16]uint64 {
	var out [16]uint64
	k := 0
	in := false
	for _, c := range b {
		if c == ' ' || c == '\n' || c == '\t' {
			if in {
				k++
				in = false
				if k == n {
					break
				}
			}
			continue
		}
		in = true
		if c >= '0' && c <= '9' {
			out[k] = out[k]*10 + uint64(c-'0')
		}
	}
	return out
}
