package main

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/fleet"
	"github.com/tokbench/tokbench/internal/infile"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/sweep"
	"github.com/urfave/cli/v2"
)

func fleetCommand() *cli.Command {
	common := func(results string) []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "spec", Usage: "the sweep's YAML spec (examples/sweep.yaml)"},
			&cli.IntFlag{Name: "shards", Usage: "shards: one task (pod) each"},
			&cli.StringFlag{Name: "name", Value: "tokbench-sweep", Usage: "job name"},
			&cli.StringFlag{Name: "results", Value: results, Usage: "folder of the shards' results files"},
			&cli.StringSliceFlag{Name: "arg", Usage: "one more argument for every shard's tokbench sweep (repeatable), e.g. --arg=--telemetry-rate --arg=10"},
		}
	}
	return &cli.Command{
		Name:  "fleet",
		Usage: "write the job file that runs a sweep's shards on a cluster: a Slurm job array or a Kubernetes Indexed Job",
		Subcommands: []*cli.Command{
			{
				Name:      "slurm",
				Usage:     "an sbatch script: one array task per shard, each writing (and on requeue resuming) results/shard-N.jsonl",
				UsageText: "tokbench fleet slurm --spec sweep.yaml --shards N [--partition P] [--gres gpu:1] [--time 4:00:00] [--cpus 8] > sweep.sbatch",
				Flags: append(common("results"),
					&cli.StringFlag{Name: "partition", Usage: "Slurm partition"},
					&cli.StringFlag{Name: "gres", Usage: "generic resources per task, e.g. gpu:1"},
					&cli.StringFlag{Name: "time", Usage: "time limit per task, e.g. 4:00:00"},
					&cli.IntFlag{Name: "cpus", Usage: "CPUs per task"},
					&cli.StringFlag{Name: "tokbench", Usage: "tokbench's path on the nodes (default: this binary's)"}),
				Action: doFleetSlurm,
			},
			{
				Name:      "k8s",
				Usage:     "a ConfigMap with the spec and an Indexed Job: one pod per shard, results on a persistent volume",
				UsageText: "tokbench fleet k8s --spec sweep.yaml --shards N --image IMAGE [--gpus 1] [--claim tokbench-results] [--namespace NS] > job.yaml",
				Flags: append(common("/results"),
					&cli.StringFlag{Name: "image", Usage: "container image with tokbench (and the models the spec names, or a volume with them)"},
					&cli.IntFlag{Name: "gpus", Value: 1, Usage: "nvidia.com/gpu per pod (0: none)"},
					&cli.StringFlag{Name: "claim", Value: "tokbench-results", Usage: "PersistentVolumeClaim the results go to"},
					&cli.StringFlag{Name: "namespace", Usage: "namespace"},
					&cli.IntFlag{Name: "backoff-per-index", Value: 2, Usage: "retries of a failed shard (its file is resumed)"},
					&cli.StringFlag{Name: "tokbench", Value: "tokbench", Usage: "tokbench's path in the image"}),
				Action: doFleetK8s,
			},
		},
	}
}

// fleetJob reads what both job files need, checking the spec parses.
func fleetJob(c *cli.Context) (fleet.Job, error) {
	if c.NArg() > 0 {
		return fleet.Job{}, usagef("unexpected argument %q: fleet takes flags only", c.Args().First())
	}
	spec, n := c.String("spec"), c.Int("shards")
	if spec == "" || n < 1 || n > 4096 {
		return fleet.Job{}, usagef("give --spec FILE.yaml and --shards N (1 to 4096)")
	}
	if _, err := sweep.LoadSpec(spec, host.Read().Cores); err != nil {
		return fleet.Job{}, err
	}
	text, err := infile.ReadFile(spec)
	if err != nil {
		return fleet.Job{}, usageErr(err)
	}
	abs, _ := filepath.Abs(spec)
	return fleet.Job{Name: c.String("name"), Spec: abs, SpecText: string(text), Shards: n, Results: c.String("results"), Args: c.StringSlice("arg")}, nil
}

func doFleetSlurm(c *cli.Context) error {
	j, err := fleetJob(c)
	if err != nil {
		return err
	}
	if j.Results, err = filepath.Abs(j.Results); err != nil {
		return err
	}
	if j.Tokbench = c.String("tokbench"); j.Tokbench == "" {
		if j.Tokbench, err = os.Executable(); err != nil {
			return err
		}
	}
	// The script is made (and its values checked) first; then the
	// folder, which Slurm opens each task's log in before the script runs
	// (on the shared file system, at submission): a refused value makes
	// nothing.
	var script bytes.Buffer
	if err := (fleet.Slurm{Job: j, Partition: c.String("partition"), Gres: c.String("gres"), Time: c.String("time"), CPUs: c.Int("cpus")}).Write(&script); err != nil {
		return err
	}
	if err := os.MkdirAll(j.Results, 0o755); err != nil {
		return fmt.Errorf("results folder: %w", err)
	}
	_, err = script.WriteTo(os.Stdout)
	return err
}

func doFleetK8s(c *cli.Context) error {
	j, err := fleetJob(c)
	if err != nil {
		return err
	}
	if c.String("image") == "" {
		return usagef("give --image: a container image with tokbench in it")
	}
	j.Tokbench = c.String("tokbench")
	return fleet.Kubernetes{Job: j, Image: c.String("image"), Namespace: c.String("namespace"), Claim: c.String("claim"),
		GPUs: c.Int("gpus"), BackoffPerIndex: c.Int("backoff-per-index")}.Write(os.Stdout)
}

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "join the results files of a sweep's shards (or machines) into one: each point once, and what is missing",
		UsageText: "tokbench merge results/shard-*.jsonl --out merged.jsonl [--spec sweep.yaml]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "the merged results file (may be one of the inputs)"},
			&cli.StringFlag{Name: "spec", Usage: "the sweep's spec: list the points no file measured, with the shard that owed each (exit 1 if any)"},
		},
		Action: doMerge,
	}
}

func doMerge(c *cli.Context) error {
	if c.NArg() == 0 || c.String("out") == "" {
		return usagef("give the results files and --out FILE: tokbench merge results/shard-*.jsonl --out merged.jsonl")
	}
	// Refused before anything is read: a writer's later lines would go
	// to the file replaced.
	if err := record.Busy(c.String("out")); err != nil {
		return usageErr(fmt.Errorf("merge --out: %w", err))
	}
	paths := c.Args().Slice()
	for _, p := range paths {
		if err := record.Busy(p); err != nil {
			fmt.Fprintf(os.Stderr, "warning: %v; merging the lines written so far\n", err)
		}
	}
	// An unusable file: exit 1, as in report and baseline.
	streamingGC()
	m, err := fleet.Merge(paths)
	if err != nil {
		return err
	}
	defer m.Close()
	for i, torn := range m.Torn {
		if torn {
			fmt.Fprintf(os.Stderr, "%s: ignoring a torn last line\n", paths[i])
		}
	}
	for _, d := range m.Duplicates {
		fmt.Fprintf(os.Stderr, "duplicate %s: kept the one in %s, dropped the one in %s\n", d.Point, d.Kept, d.Drop)
	}
	if err := m.Write(c.String("out")); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: %d records and %d quality blocks from %d files, %d duplicates dropped; classes: %s\n",
		c.String("out"), m.Records, len(m.Quality), len(paths), len(m.Duplicates), cmp.Or(strings.Join(m.Classes, ", "), "none"))
	spec := c.String("spec")
	if spec == "" {
		return nil
	}
	text, err := infile.ReadFile(spec)
	if err != nil {
		return usageErr(err)
	}
	if h := sweep.GivenHash(text, nil); m.SpecHash != "" && m.SpecHash != h {
		return usagef("the files were measured with another spec than %s (or with spec flags besides it): merge without --spec, or give the spec the shards ran", spec)
	}
	missing, err := missingPoints(spec, m)
	if err != nil {
		return err
	}
	for _, ms := range missing {
		what := "missing"
		if ms.Status != "" {
			what = fmt.Sprintf("%s (%s)", ms.Status, ms.Reason)
		}
		fmt.Fprintf(os.Stderr, "%s: %s %s, owed by shard %s\n", what, cmp.Or(ms.Class, "every class"), ms.Owed.Key, cmp.Or(ms.Owed.Shard, "?"))
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d point(s) of %s not measured: run their shards again (each resumes its own file), then merge again", len(missing), c.String("spec"))
	}
	return nil
}

// missingPoints lays out the spec's points for each class of the merged
// records (threads, when the spec leaves them to each machine, as that
// class's records ran) and lists those without a measurement, with the
// shard that owed each.
func missingPoints(specPath string, m *fleet.Merged) ([]fleet.Missing, error) {
	dir, err := plan.CacheDir()
	if err != nil {
		return nil, err
	}
	missing, err := m.Check(func(class string) ([]fleet.Owed, error) {
		threads := cmp.Or(m.Threads(class), host.Read().Cores)
		s, err := sweep.LoadSpec(specPath, threads)
		if err != nil {
			return nil, err
		}
		refs, err := sweep.Refs(s, dir, false)
		if err != nil {
			return nil, err
		}
		points, _, err := s.Points(refs)
		if err != nil {
			return nil, err
		}
		var of map[string]int
		n := m.ShardCount()
		if n > 0 {
			if of, _, err = sweep.Partition(points, refs, n); err != nil {
				return nil, err
			}
		}
		var owed []fleet.Owed
		for _, p := range points {
			o := fleet.Owed{Key: p.Key()}
			if n > 0 {
				o.Shard = sweep.Shard{Index: of[p.ModelID], Count: n}.String()
			}
			owed = append(owed, o)
		}
		return owed, nil
	})
	fleet.SortMissing(missing)
	return missing, err
}

// streamingGC lets the heap of a command that streams a file (merge,
// report --sqlite, baseline create) grow to four times what it holds
// before collecting, not twice: what it holds is small and does not grow
// with the records (tens of MB), while decoding a million of them makes
// garbage fast, and a heap kept at twice tens of MB is collected
// thousands of times (merge of 10^6 records: 1,881 collections, 30 s; at
// four times: 26 s, 93 MB; baseline create's reading, 20.0 s and 74 MB
// at the default, 16.7 s and 118 MB at four times). It returns what sets
// the collector back, for work that holds more.
func streamingGC() (restore func()) {
	old := debug.SetGCPercent(300)
	return func() { debug.SetGCPercent(old) }
}
