package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tree(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func byCheck(fs []Finding) map[string]Finding {
	m := map[string]Finding{}
	for _, f := range fs {
		m[f.Check] = f
	}
	return m
}

// A machine set up for benchmarking, and one that is not: each finding
// names what it saw, and a warning says what it does and how to fix it.
func TestHostFindings(t *testing.T) {
	good := tree(t, map[string]string{
		"proc/stat":    "cpu 1 2 3 4 5 6 7 8\ncpu0 1\ncpu1 1\ncpu2 1\ncpu3 1\n",
		"proc/loadavg": "0.10 0.20 0.30 1/100 4242\n",
		"proc/meminfo": "MemTotal: 33554432 kB\nMemAvailable: 30000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
		"sys/devices/system/cpu/smt/active":                    "0\n",
		"sys/kernel/mm/transparent_hugepage/enabled":           "always [madvise] never\n",
		"sys/devices/system/node/node0/cpulist":                "0-3\n",
	})
	for _, f := range Host(good, 4<<30, []process{}) {
		if f.Level == Warn {
			t.Errorf("good machine: %+v", f)
		}
	}
	bad := tree(t, map[string]string{
		"proc/stat":    "cpu 1 2 3 4 5 6 7 8\ncpu0 1\ncpu1 1\n",
		"proc/loadavg": "1.90 1.50 1.20 3/100 4242\n",
		"proc/meminfo": "MemTotal: 8388608 kB\nMemAvailable: 1048576 kB\nSwapTotal: 4194304 kB\nSwapFree: 1048576 kB\n",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave\n",
		"sys/devices/system/cpu/smt/active":                    "1\n",
		"sys/devices/system/cpu/intel_pstate/no_turbo":         "0\n",
		"sys/kernel/mm/transparent_hugepage/enabled":           "[always] madvise never\n",
		"sys/devices/system/node/node0/cpulist":                "0\n",
		"sys/devices/system/node/node1/cpulist":                "1\n",
	})
	got := byCheck(Host(bad, 4<<30, []process{{PID: 7, Name: "cc1plus", Pct: 98}}))
	for check, want := range map[string]string{
		"cpu governor": "powersave", "load average": "1.90 over the last minute on 2 CPUs", "swap": "3072 MiB of 4096 MiB",
		"memory": "needs about 4.00 GiB", "busy processes": "cc1plus (pid 7) 98%",
	} {
		f := got[check]
		if f.Level != Warn || !strings.Contains(f.Says, want) || f.Effect == "" || f.Fix == "" {
			t.Errorf("%s: %+v, want a warning saying %q with its effect and fix", check, f, want)
		}
	}
	for check, want := range map[string]string{"cpu boost": "turbo on", "smt": "on", "numa": "2 node(s)", "transparent huge pages": "always"} {
		if f := got[check]; f.Level != Info || !strings.Contains(f.Says, want) {
			t.Errorf("%s: %+v, want %q", check, f, want)
		}
	}
}
