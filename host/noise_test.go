package host

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// machine writes a fixture /proc and /sys: the machine's CPU counters,
// this process's (the "self" entry), each CPU's clocks and throttle count.
func machine(t *testing.T, stat, self string, cur, max, throttles []string, governor string) string {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/stat", stat)
	write("proc/self/stat", self)
	for i := range cur {
		cpu := filepath.Join("sys/devices/system/cpu", "cpu"+string(rune('0'+i)))
		write(filepath.Join(cpu, "cpufreq/scaling_cur_freq"), cur[i]+"\n")
		write(filepath.Join(cpu, "cpufreq/cpuinfo_max_freq"), max[i]+"\n")
		write(filepath.Join(cpu, "thermal_throttle/core_throttle_count"), throttles[i]+"\n")
	}
	write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", governor+"\n")
	return root
}

// A 2-CPU machine over 10 s: 1500 jiffies busy (15 s of CPU), of which
// this process ran 600: other processes used 900 jiffies, 90% of a core;
// 50 of 2000 jiffies stolen (2.5%); clocks at 1.5 of 3 GHz; one throttle.
func TestNoiseFromProcAndSys(t *testing.T) {
	selfLine := func(u, s, majflt int) string {
		f := make([]string, 20)
		for i := range f {
			f[i] = "0"
		}
		f[9], f[11], f[12] = strconv.Itoa(majflt), strconv.Itoa(u), strconv.Itoa(s)
		return "4242 (tok bench) R " + strings.Join(f[1:], " ") + "\n"
	}
	a := ReadCPUCounters(machine(t, "cpu  1000 0 500 8000 100 0 0 100 0 0\ncpu0 1 2 3 4 5 6 7 8\ncpu1 1 2 3 4 5 6 7 8\nintr 1\n",
		selfLine(300, 100, 7), []string{"3000000", "3000000"}, []string{"3000000", "3000000"}, []string{"5", "0"}, "performance"), "self")
	b := ReadCPUCounters(machine(t, "cpu  2200 0 800 8400 150 0 0 150 0 0\ncpu0 1\ncpu1 1\n",
		selfLine(750, 250, 5007), []string{"1500000", "1500000"}, []string{"3000000", "3000000"}, []string{"6", "0"}, "powersave"), "self")
	if a.CPUs != 2 || a.Busy != 1500 || a.Self != 400 || a.Governor != "performance" || b.Throttles != 6 {
		t.Fatalf("counters %+v", a)
	}
	b.At = a.At.Add(10 * time.Second)
	n := NoiseBetween(a, b)
	// busy: 3000-1500 = 1500 jiffies; self: 1000-400 = 600; other 900,
	// less the two ticks a reading may be off by: 8.98 s in 10 s.
	if math.Abs(n.OtherCPUPct-89.8) > 1e-9 || n.StealPct != 2.5 || n.FreqPct == nil || *n.FreqPct != 50 || n.ThrottleEvents != 1 || n.Governor != "powersave" || n.Quiet ||
		n.MajorFaults != 5000 {
		t.Errorf("noise %+v", n)
	}
	all := strings.Join(n.Warnings, "\n")
	for _, want := range []string{"other processes used 90% CPU", "hypervisor gave 2.5%", "50% of their maximum frequency (governor powersave)", "1 thermal throttle", "5000 major page faults"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in\n%s", want, all)
		}
	}
	// The same machine, idle but for this process: 5 jiffies of others in
	// 10 s, 0.3% of a core past the ticks' slack: quiet.
	c := a
	c.Busy, c.Self, c.Idle, c.At = a.Busy+200, a.Self+195, a.Idle+1800, a.At.Add(10*time.Second)
	c.CurKHz = c.MaxKHz
	if n := NoiseBetween(a, c); !n.Quiet || math.Abs(n.OtherCPUPct-0.3) > 1e-9 {
		t.Errorf("quiet machine: %+v", n)
	}
	// A test of 5 ms that saw one tick of another process's: no noise to
	// speak of, not 200% of a core.
	d := a
	d.Busy, d.At = a.Busy+1, a.At.Add(5*time.Millisecond)
	if n := NoiseBetween(a, d); !n.Quiet || n.OtherCPUPct != 0 {
		t.Errorf("quiet machine: %+v", n)
	}
	// A kernel that says nothing (no cpufreq, no throttle counters) is not
	// taken for a slow one.
	empty := ReadCPUCounters(t.TempDir(), "self")
	if n := NoiseBetween(empty, empty); n.FreqPct != nil || !n.Quiet {
		t.Errorf("nothing known: %+v", n)
	}
}

// The noise probe reads /proc and /sys twice per test, before its first
// repetition and after its last: outside the timing, at this cost.
func BenchmarkReadCPUCounters(b *testing.B) {
	for b.Loop() {
		ReadCPUCounters("/", "self")
	}
}

func TestParseProcStat(t *testing.T) {
	pid, name, j, ok := ParseProcStat("77 (my (odd) proc) S 1 2 3 4 5 6 7 8 9 10 120 30 0 0\n")
	if !ok || pid != 77 || name != "my (odd) proc" || j != 150 {
		t.Errorf("%d %q %d %v", pid, name, j, ok)
	}
	if _, _, _, ok := ParseProcStat("77 (short) S 1 2"); ok {
		t.Error("a short line parsed")
	}
}
