package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/record"
)

// fleetSpec is a small sweep of four tiny models: one per shard of four.
func fleetSpec(t *testing.T, nGen int, reps int) string {
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf("synth: [tiny]\ntypes: [f32, f16, q8_0, q4_0]\nn_prompt: [32]\nn_gen: [%d]\nn_depth: [0, 64]\nthreads: [1]\nrepetitions: %d\nkernels: false\n", nGen, reps)), 0o644)
	return p
}

// keys are the point keys of a results file's records, sorted.
func keys(t *testing.T, path string) []string {
	t.Helper()
	recs, _, _, err := record.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Key.String())
	}
	slices.Sort(out)
	return out
}

// The Kubernetes way without a cluster: each shard run as an Indexed
// Job's pod would be (JOB_COMPLETION_INDEX, --shard auto), then merged:
// the full grid, each point once, as an unsharded run has it.
func TestFleetShardsMerge(t *testing.T) {
	spec := fleetSpec(t, 8, 3)
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.jsonl")
	if r := tokbench(t, "sweep", "--spec", spec, "--out", whole); r.code != 0 {
		t.Fatalf("unsharded: %s", r.stderr)
	}
	if r := tokbench(t, "sweep", "--spec", spec, "--dry-run", "--shards", "4"); r.code != 0 || !strings.Contains(r.stdout, "3/4") || !strings.Contains(r.stdout, "16 points of 4 models in 4 shards") {
		t.Errorf("partition: %d %s%s", r.code, r.stdout, r.stderr)
	}
	var files []string
	for i := range 4 {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		files = append(files, out)
		cmd := exec.Command(binPath, "sweep", "--spec", spec, "--shard", "auto", "--shards", "4", "--out", out, "--resume")
		cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("shard %d: %v %s", i, err, b)
		}
		if recs, _, _, _ := record.Read(out); len(recs) != 4 || recs[0].Shard != fmt.Sprintf("%d/4", i) || recs[0].SpecSHA256 == "" {
			t.Fatalf("shard %d: %d records, shard %q", i, len(recs), recs[0].Shard)
		}
	}
	merged := filepath.Join(dir, "merged.jsonl")
	// A shard's file missing: its points are listed with the shard, exit 1.
	r := tokbench(t, "merge", "--out", merged, "--spec", spec, files[0], files[1], files[3])
	if r.code != 1 || !strings.Contains(r.stderr, "owed by shard 2/4") || strings.Count(r.stderr, "missing: ") != 4 {
		t.Errorf("three shards of four: exit %d\n%s", r.code, r.stderr)
	}
	r = tokbench(t, append([]string{"merge", "--out", merged, "--spec", spec}, files...)...)
	if r.code != 0 || !slices.Equal(keys(t, merged), keys(t, whole)) {
		t.Fatalf("merge: exit %d %s\nkeys %v\nwant %v", r.code, r.stderr, keys(t, merged), keys(t, whole))
	}
	// Twice, and with the merged file among its parts: nothing changes.
	before, _ := os.ReadFile(merged)
	r = tokbench(t, append([]string{"merge", "--out", merged, merged}, files...)...)
	if after, _ := os.ReadFile(merged); r.code != 0 || string(after) != string(before) || !strings.Contains(r.stderr, "16 duplicates dropped") {
		t.Errorf("merge again: exit %d, changed %v\n%s", r.code, string(after) != string(before), r.stderr)
	}
	// A shard run with other flags (another spec hash) is refused.
	odd := filepath.Join(dir, "odd.jsonl")
	if r := tokbench(t, "sweep", "--spec", spec, "--seed", "7", "--shard", "0/4", "--out", odd); r.code != 0 {
		t.Fatalf("odd shard: %s", r.stderr)
	}
	if r := tokbench(t, "merge", "--out", filepath.Join(dir, "x.jsonl"), files[1], odd); r.code != 2 || !strings.Contains(r.stderr, "different sweeps") {
		t.Errorf("mixed specs: exit %d %s", r.code, r.stderr)
	}
	// Two writers of one shard file: the second is refused.
	w, err := record.CreateLocked(files[2], func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	r = tokbench(t, "sweep", "--spec", spec, "--shard", "2/4", "--out", files[2], "--resume")
	w.Close()
	if r.code == 0 || !strings.Contains(r.stderr, "being written by another tokbench") {
		t.Errorf("second writer: exit %d %s", r.code, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "k8s", "--spec", spec, "--shards", "4"}, "--image"},
		{[]string{"fleet", "slurm", "--spec", spec, "--shards", "0"}, "--shards N"},
		{[]string{"fleet", "slurm", "--shards", "2"}, "--spec"},
		{[]string{"merge", files[0]}, "--out"},
		{[]string{"sweep", "--spec", spec, "--shard", "4/4"}, "0 <= I < N"},
		{[]string{"sweep", "--spec", spec, "--shard", "auto"}, "JOB_COMPLETION_INDEX"},
		{[]string{"sweep", "--spec", spec, "--shard", "0/2", "--quality"}, "tokbench quality after the merge"},
	} {
		if r := tokbench(t, c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d %s; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	// A refused value makes no results folder.
	none := filepath.Join(dir, "never-made")
	if r := tokbench(t, "fleet", "slurm", "--spec", spec, "--shards", "2", "--results", none, "--partition", "a b;rm"); r.code != 2 {
		t.Errorf("a refused partition: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(none); err == nil {
		t.Errorf("fleet slurm made %s for a job it refused", none)
	}
	// Two hardware classes in one file: side by side in the report, one
	// baseline each.
	data, _ := os.ReadFile(whole)
	other := strings.ReplaceAll(string(data), `"cpu_info":"`, `"cpu_info":"Other `)
	fleetFile := filepath.Join(dir, "fleet.jsonl")
	os.WriteFile(fleetFile, append(before, other...), 0o644)
	r = tokbench(t, "report", fleetFile)
	if r.code != 0 || !strings.Contains(r.stdout, "2 hardware classes side by side") || !strings.Contains(r.stdout, "cpu-other-amd-epyc-1t / ") && !strings.Contains(r.stdout, "cpu-other") {
		t.Errorf("fleet report: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bdir := filepath.Join(dir, "baselines")
	if r := tokbench(t, "baseline", "create", "--dir", bdir, fleetFile); r.code != 0 || strings.Count(r.stderr, "16 points") != 2 {
		t.Errorf("baseline per class: %d %s", r.code, r.stderr)
	}
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// slurmCluster starts munge and a one-node Slurm cluster as root in dir
// (proctrack/linuxproc, task/none) and returns the environment its
// clients need; the daemons are stopped when the test ends.
func slurmCluster(t *testing.T, dir string) []string {
	t.Helper()
	for _, b := range []string{"munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("Slurm is not installed here (%s missing): .ci/run installs slurm-wlm and munge", b)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("a Slurm cluster of one node runs its daemons as root")
	}
	sock := filepath.Join(dir, "munge.sock")
	key := filepath.Join(dir, "munge.key")
	if b, err := exec.Command("mungekey", "-c", "-k", key).CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v %s", err, b)
	}
	munged := exec.Command("munged", "-F", "--force", "-S", sock, "--key-file", key, "--pid-file", filepath.Join(dir, "munged.pid"),
		"--log-file", filepath.Join(dir, "munged.log"), "--seed-file", filepath.Join(dir, "munge.seed"))
	start := func(c *exec.Cmd) {
		if err := c.Start(); err != nil {
			t.Fatalf("%s: %v", c.Path, err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	start(munged)
	host, _ := os.Hostname()
	host = strings.Split(host, ".")[0]
	conf := filepath.Join(dir, "slurm.conf")
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	os.MkdirAll(filepath.Join(dir, "spool"), 0o755)
	os.WriteFile(conf, []byte(fmt.Sprintf(`ClusterName=tokbench
SlurmctldHost=%[1]s
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[2]s
CredType=cred/munge
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd.pid
SlurmctldPort=%[4]d
SlurmdPort=%[5]d
SlurmctldLogFile=%[3]s/slurmctld.log
SlurmdLogFile=%[3]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
KillWait=5
NodeName=%[1]s CPUs=%[6]d RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, sock, dir, freePort(t), freePort(t), max(2, numCPU()))), 0o644)
	env := append(os.Environ(), "SLURM_CONF="+conf, "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
	for _, d := range []string{"slurmctld", "slurmd"} {
		args := []string{"-D", "-f", conf}
		if d == "slurmctld" {
			args = append(args, "-c", "-i")
		}
		c := exec.Command(d, args...)
		c.Env = env // their logs are files in dir
		start(c)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := slurm(env, "sinfo", "-h", "-o", "%T")
		if strings.Contains(out, "idle") {
			return env
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "slurmctld.log"))
			t.Fatalf("the Slurm node did not come up (sinfo: %q):\n%s", out, log)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func numCPU() int {
	out, err := exec.Command("nproc").Output()
	n := 0
	if err == nil {
		fmt.Sscan(string(out), &n)
	}
	return n
}

func slurm(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, name, args...)
	c.Env = env
	b, err := c.CombinedOutput()
	return string(b), err
}

// The Slurm way, on a real Slurm: the generated job array sweeps in four
// tasks; one task is requeued while it measures (Slurm kills it and runs
// it again), resumes its own file, and the merge has every point once, as
// an unsharded run.
func TestSlurmFleet(t *testing.T) {
	dir := t.TempDir()
	env := slurmCluster(t, dir)
	spec := fleetSpec(t, 96, 8)
	results := filepath.Join(dir, "results")
	r := tokbench(t, "fleet", "slurm", "--spec", spec, "--shards", "4", "--results", results, "--tokbench", binPath, "--time", "30:00")
	if r.code != 0 {
		t.Fatalf("fleet slurm: %s", r.stderr)
	}
	script := filepath.Join(dir, "sweep.sbatch")
	os.WriteFile(script, []byte(r.stdout), 0o755)
	out, err := slurm(env, "sbatch", "--parsable", script)
	if err != nil {
		t.Fatalf("sbatch: %v %s", err, out)
	}
	job := strings.TrimSpace(strings.Split(out, ";")[0])
	t0 := time.Now()
	t.Cleanup(func() { slurm(env, "scancel", job) })
	// Requeue task 1 once it has written a record and before it is done.
	shard1 := filepath.Join(results, "shard-1.jsonl")
	requeued, requeuedAt := false, time.Time{}
	deadline := time.Now().Add(5 * time.Minute)
	for !requeued && time.Now().Before(deadline) {
		if n := lines(shard1); n >= 1 && n < 4 {
			if out, err := slurm(env, "scontrol", "requeue", job+"_1"); err != nil {
				t.Fatalf("requeue: %v %s", err, out)
			}
			requeued, requeuedAt = true, time.Now()
			t.Logf("requeued task 1 after %s", time.Since(t0).Round(time.Millisecond))
			break
		} else if n >= 4 {
			t.Fatal("task 1 finished before it could be requeued: make its share longer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Wait for the array, task 1's second run included. Slurm holds a
	// requeued job back for two minutes (BeginTime): let it go, but not
	// within the second of the requeue: slurmd revokes the first run's
	// credential with a timestamp in whole seconds, and refuses a second
	// run started in that same second ("Job credential revoked").
	for time.Now().Before(deadline) {
		out, _ := slurm(env, "squeue", "-h", "-j", job)
		if strings.TrimSpace(out) == "" && lines(shard1) >= 4 {
			break
		}
		if time.Since(requeuedAt) < 2500*time.Millisecond {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if st, _ := slurm(env, "squeue", "-h", "-j", job+"_1", "-o", "%T %r"); strings.Contains(st, "PENDING") {
			slurm(env, "scontrol", "release", job+"_1")
			slurm(env, "scontrol", "update", "JobId="+job+"_1", "StartTime=now")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the array finished after %s", time.Since(t0).Round(time.Millisecond))
	if out, _ := slurm(env, "squeue", "-h", "-j", job); strings.TrimSpace(out) != "" || lines(shard1) < 4 {
		show, _ := slurm(env, "scontrol", "show", "job", job+"_1")
		log, _ := os.ReadFile(filepath.Join(dir, "slurmctld.log"))
		t.Fatalf("the array did not finish in 5 minutes: %s\n%s\n%s", out, show, log)
	}
	if out, _ := slurm(env, "scontrol", "show", "job", job+"_1"); !requeued || !strings.Contains(out, "Restarts=1") {
		t.Errorf("task 1 was not restarted: %s", out)
	}
	merged := filepath.Join(dir, "merged.jsonl")
	files, _ := filepath.Glob(filepath.Join(results, "shard-*.jsonl"))
	r = tokbench(t, append([]string{"merge", "--out", merged, "--spec", spec}, files...)...)
	if r.code != 0 {
		logs, _ := filepath.Glob(filepath.Join(results, "*.log"))
		var b strings.Builder
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			fmt.Fprintf(&b, "== %s\n%s", l, data)
		}
		t.Fatalf("merge: exit %d %s\n%s", r.code, r.stderr, b.String())
	}
	whole := filepath.Join(dir, "whole.jsonl")
	if r := tokbench(t, "sweep", "--spec", spec, "--out", whole); r.code != 0 {
		t.Fatalf("unsharded: %s", r.stderr)
	}
	t.Logf("unsharded done after %s", time.Since(t0).Round(time.Millisecond))
	if got, want := keys(t, merged), keys(t, whole); !slices.Equal(got, want) {
		t.Errorf("merged keys %v\nwant %v", got, want)
	}
}

// lines counts a file's complete lines (0 if absent).
func lines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}
