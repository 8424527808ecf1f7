package fleet

import (
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Job is what a fleet job file runs: the sweep spec, the shards, where
// their results go, and tokbench itself.
type Job struct {
	Name     string // job name
	Spec     string // the spec file (its path on the cluster's shared file system, for Slurm)
	SpecText string // its content (Kubernetes carries it in a ConfigMap)
	Shards   int
	Results  string // folder of the shards' files (Slurm); the volume's mount (Kubernetes)
	Tokbench string // the binary (its path on the nodes; "tokbench" in an image)
	Args     []string
}

// shardFile is a shard's results file under dir, the index given by var.
func shardFile(dir, index string) string {
	return strings.TrimSuffix(dir, "/") + "/shard-" + index + ".jsonl"
}

// sweepArgs are the shard's command line after the binary.
func (j Job) sweepArgs(spec, out string) []string {
	return append([]string{"sweep", "--spec", spec, "--shard", "auto", "--shards", fmt.Sprint(j.Shards), "--out", out, "--resume", "-o", "jsonl"}, j.Args...)
}

// Slurm is a Slurm job array for a sweep: one task a shard.
type Slurm struct {
	Job
	Partition, Gres, Time string
	CPUs                  int
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-=:,@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Write writes the sbatch script. Each task writes its own results file
// and resumes it: a task requeued after a preemption (--requeue) measures
// only what its file lacks. tokbench is exec'd so that Slurm's SIGTERM
// reaches it: it stops after the current repetition with every record
// already written kept.
func (s Slurm) Write(w io.Writer) error {
	if err := s.Check(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# A tokbench sweep in %d shards, one Slurm array task each (tokbench fleet slurm).\n", s.Shards)
	// Quoted as the command lines are: a user pastes this one.
	fmt.Fprintf(&b, "# Submit: sbatch THIS; then: tokbench merge %s/shard-*.jsonl --out merged.jsonl --spec %s\n",
		shellQuote(strings.TrimSuffix(s.Results, "/")), shellQuote(s.Spec))
	logs := strings.TrimSuffix(s.Results, "/") + "/shard-%a.log"
	if strings.ContainsAny(logs, " \t") {
		logs = `"` + logs + `"` // sbatch reads a quoted #SBATCH value whole
	}
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n#SBATCH --array=0-%d\n#SBATCH --requeue\n#SBATCH --output=%s\n", s.Name, s.Shards-1, logs)
	for _, o := range [][2]string{{"partition", s.Partition}, {"gres", s.Gres}, {"time", s.Time}} {
		if o[1] != "" {
			fmt.Fprintf(&b, "#SBATCH --%s=%s\n", o[0], o[1])
		}
	}
	if s.CPUs > 0 {
		fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", s.CPUs)
	}
	b.WriteString("set -euo pipefail\n")
	fmt.Fprintf(&b, "mkdir -p %s\n", shellQuote(s.Results))
	args := []string{shellQuote(s.Tokbench)}
	for _, a := range s.sweepArgs(s.Spec, "\x00") {
		if a == "\x00" {
			a = shellQuote(strings.TrimSuffix(s.Results, "/")) + `/shard-"$SLURM_ARRAY_TASK_ID".jsonl`
		} else {
			a = shellQuote(a)
		}
		args = append(args, a)
	}
	fmt.Fprintf(&b, "exec %s\n", strings.Join(args, " "))
	_, err := io.WriteString(w, b.String())
	return err
}

// Kubernetes is an Indexed Job for a sweep: one pod a shard, the spec in a
// ConfigMap, the results on a persistent volume.
type Kubernetes struct {
	Job
	Image, Namespace, Claim string
	GPUs                    int
	BackoffPerIndex         int
}

// Write writes the ConfigMap and the Job as one YAML stream.
func (k Kubernetes) Write(w io.Writer) error {
	if err := k.Check(); err != nil {
		return err
	}
	meta := map[string]any{"name": k.Name}
	if k.Namespace != "" {
		meta["namespace"] = k.Namespace
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
		"data": map[string]any{"sweep.yaml": k.SpecText}}
	container := map[string]any{
		"name":    "tokbench",
		"image":   k.Image,
		"command": append([]string{k.Tokbench}, k.sweepArgs("/spec/sweep.yaml", shardFile(k.Results, "$(JOB_COMPLETION_INDEX)"))...),
		// The Job controller sets it too; declared here, $(...) above is
		// expanded from it in every Kubernetes version.
		"env": []any{map[string]any{"name": "JOB_COMPLETION_INDEX", "valueFrom": map[string]any{
			"fieldRef": map[string]any{"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}},
		"volumeMounts": []any{
			map[string]any{"name": "spec", "mountPath": "/spec", "readOnly": true},
			map[string]any{"name": "results", "mountPath": k.Results},
		},
	}
	if k.GPUs > 0 {
		container["resources"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": k.GPUs}}
	}
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
		"spec": map[string]any{
			"completionMode":       "Indexed",
			"completions":          k.Shards,
			"parallelism":          k.Shards,
			"backoffLimitPerIndex": k.BackoffPerIndex,
			"maxFailedIndexes":     k.Shards,
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": k.Name}},
				"spec": map[string]any{
					"restartPolicy": "Never",
					"containers":    []any{container},
					"volumes": []any{
						map[string]any{"name": "spec", "configMap": map[string]any{"name": k.Name}},
						map[string]any{"name": "results", "persistentVolumeClaim": map[string]any{"claimName": k.Claim}},
					},
				},
			},
		}}
	fmt.Fprintf(w, "# A tokbench sweep in %d shards, one pod of an Indexed Job each (tokbench fleet k8s).\n# kubectl apply -f THIS; then merge %s from the %s volume with tokbench merge.\n", k.Shards, shardFile(k.Results, "*"), k.Claim)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(cm); err != nil {
		return err
	}
	if err := enc.Encode(job); err != nil {
		return err
	}
	return enc.Close()
}
