package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func testJob() Job {
	return Job{Name: "tb", Spec: "/shared/sweep.yaml", SpecText: "synth: [tiny]\nn_gen: [8]\n", Shards: 4, Results: "/shared/results", Tokbench: "/opt/tokbench"}
}

// strict decodes one YAML document into a Kubernetes type, refusing any
// field the type does not have.
func strict(t *testing.T, doc any, into any) {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("not a valid %T: %v\n%s", into, err, b)
	}
}

func TestKubernetesManifest(t *testing.T) {
	var buf bytes.Buffer
	k := Kubernetes{Job: testJob(), Image: "registry/tokbench:1", Claim: "results", GPUs: 1, BackoffPerIndex: 2, Namespace: "bench"}
	k.Results = "/results"
	if err := k.Write(&buf); err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(&buf)
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents, want a ConfigMap and a Job", len(docs))
	}
	var cm corev1.ConfigMap
	var job batchv1.Job
	strict(t, docs[0], &cm)
	strict(t, docs[1], &job)
	if cm.Kind != "ConfigMap" || cm.Data["sweep.yaml"] != k.SpecText || cm.Namespace != "bench" {
		t.Errorf("ConfigMap %+v", cm)
	}
	s := job.Spec
	if job.Kind != "Job" || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 4 || *s.Parallelism != 4 || *s.BackoffLimitPerIndex != 2 {
		t.Errorf("Job spec %+v", s)
	}
	pod := s.Template.Spec
	c := pod.Containers[0]
	cmd := strings.Join(c.Command, " ")
	if pod.RestartPolicy != corev1.RestartPolicyNever || c.Image != "registry/tokbench:1" ||
		!strings.Contains(cmd, "--shard auto --shards 4 --out /results/shard-$(JOB_COMPLETION_INDEX).jsonl --resume") {
		t.Errorf("pod: restart %s, image %s, command %s", pod.RestartPolicy, c.Image, cmd)
	}
	if q := c.Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 {
		t.Errorf("GPU limit %v", q)
	}
	if pod.Volumes[0].ConfigMap.Name != "tb" || pod.Volumes[1].PersistentVolumeClaim.ClaimName != "results" || c.VolumeMounts[1].MountPath != "/results" {
		t.Errorf("volumes %+v mounts %+v", pod.Volumes, c.VolumeMounts)
	}
}

func TestSlurmScript(t *testing.T) {
	var buf bytes.Buffer
	j := testJob()
	j.Results = "/shared/my results"
	if err := (Slurm{Job: j, Partition: "gpu", Gres: "gpu:1", Time: "2:00:00", CPUs: 8}).Write(&buf); err != nil {
		t.Fatal(err)
	}
	script := buf.String()
	for _, want := range []string{"#SBATCH --array=0-3\n", "#SBATCH --requeue\n", "#SBATCH --gres=gpu:1\n", "#SBATCH --partition=gpu\n", "#SBATCH --cpus-per-task=8\n",
		`exec /opt/tokbench sweep --spec /shared/sweep.yaml --shard auto --shards 4 --out '/shared/my results'/shard-"$SLURM_ARRAY_TASK_ID".jsonl --resume`} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		p := filepath.Join(t.TempDir(), "s.sbatch")
		writeFile(t, p, script)
		if out, err := exec.Command(bash, "-n", p).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v %s", err, out)
		}
	}
}
