package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// merge, report (its table and HTML, a fleet's summed up), report
// --sqlite and baseline create keep what does not grow with a fleet's
// records: their peak memory at 2x10^5 records (a fleet's, from
// bench/scalegen: 10 classes and 3 builds running a sweep of 500 points in
// rounds) is within 1.5x of their peak at 2x10^4 (merge as it was, a map
// of every point, took 1.75x; report as it was, holding every record, 9x;
// baseline create holding every class's 50 runs a point, 2.7x from 10^5
// to 10^6).
func TestMemoryStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 400 MB of records")
	}
	dir := t.TempDir()
	gen := filepath.Join(dir, "scalegen")
	if out, err := exec.Command("go", "build", "-o", gen, "../../bench/scalegen").CombinedOutput(); err != nil {
		t.Fatalf("build scalegen: %v\n%s", err, out)
	}
	// The lower of two runs' peaks: a collection's timing moves one run's
	// by a tenth.
	peak := func(args func(run int) []string) int64 {
		t.Helper()
		var low int64
		for i := range 2 {
			cmd := exec.Command(binPath, args(i)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
			}
			if rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss; i == 0 || rss < low {
				low = rss
			}
		}
		return low
	}
	peaks := map[string][2]int64{}
	for i, n := range []int{20000, 200000} {
		shards, all := filepath.Join(dir, "shards"+strconv.Itoa(n)), filepath.Join(dir, "all"+strconv.Itoa(n)+".jsonl")
		// 10 classes: 2x10^4 records are every point of every class and
		// build (15,000) at least once, as 2x10^5 are, so that what grows
		// with the points (a fleet's summary) is the same at both.
		fleet := []string{"-n", strconv.Itoa(n), "-classes", "10"}
		for _, args := range [][]string{append(fleet, "-shards", "20", "-out", shards), append(fleet, "-out", all)} {
			if out, err := exec.Command(gen, args...).CombinedOutput(); err != nil {
				t.Fatalf("scalegen %v: %v\n%s", args, err, out)
			}
		}
		files, _ := filepath.Glob(filepath.Join(shards, "*.jsonl"))
		p := peaks["merge"]
		p[i] = peak(func(int) []string {
			return append(append([]string{"merge"}, files...), "--out", filepath.Join(dir, "merged.jsonl"))
		})
		peaks["merge"] = p
		p = peaks["report --sqlite"]
		p[i] = peak(func(run int) []string {
			return []string{"report", all, "--sqlite", filepath.Join(dir, strconv.Itoa(n*10+run)+".sqlite")} // a new database each
		})
		peaks["report --sqlite"] = p
		p = peaks["baseline create"]
		p[i] = peak(func(run int) []string {
			return []string{"baseline", "create", all, "--dir", filepath.Join(dir, "baselines"+strconv.Itoa(run))} // new baselines each
		})
		peaks["baseline create"] = p
		for _, format := range []string{"table", "html"} {
			p = peaks["report -o "+format]
			p[i] = peak(func(int) []string {
				return []string{"report", all, "-o", format, "--out", filepath.Join(dir, "r."+format)}
			})
			peaks["report -o "+format] = p
		}
		// What this size wrote goes before the next: 2x10^5 records and
		// their databases are a GB.
		dbs, _ := filepath.Glob(filepath.Join(dir, "*.sqlite"))
		bases, _ := filepath.Glob(filepath.Join(dir, "baselines*"))
		for _, f := range append(append(dbs, bases...), all, shards) {
			os.RemoveAll(f)
		}
	}
	for name, p := range peaks {
		t.Logf("%s: %d MB at 2x10^4 records, %d MB at 2x10^5", name, p[0]>>10, p[1]>>10)
		if float64(p[1]) > 1.5*float64(p[0]) {
			t.Errorf("%s: %d MB at 2x10^4 records, %d MB at 2x10^5: memory grows with the records", name, p[0]>>10, p[1]>>10)
		}
	}
}
