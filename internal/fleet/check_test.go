package fleet

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/point"
)

// A newline (or any control character) in a value never reaches the
// script: the job file is refused, naming the flag, and nothing is
// written.
func TestSlurmRefusesInjection(t *testing.T) {
	inject := "x\nrm -rf ~\n#"
	for _, c := range []struct {
		flag string
		set  func(*Slurm)
	}{
		{"name", func(s *Slurm) { s.Name = inject }},
		{"partition", func(s *Slurm) { s.Partition = inject }},
		{"gres", func(s *Slurm) { s.Gres = "gpu:1 --wrap=x" }},
		{"time", func(s *Slurm) { s.Time = "1:00\r" }},
		{"spec", func(s *Slurm) { s.Spec = inject }},
		{"results", func(s *Slurm) { s.Results = inject }},
		{"results", func(s *Slurm) { s.Results = `/a"b` }},
		{"arg", func(s *Slurm) { s.Args = []string{"--x", inject} }},
	} {
		s := Slurm{Job: testJob()}
		c.set(&s)
		var buf bytes.Buffer
		err := s.Write(&buf)
		var ie *point.InputError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "--"+c.flag) || buf.Len() > 0 {
			t.Errorf("--%s: %v, %d bytes written", c.flag, err, buf.Len())
		}
	}
}

// Kubernetes names follow Kubernetes' rules; a newline in the claim or
// the results breaks out of nothing.
func TestKubernetesRefusesInjection(t *testing.T) {
	for _, c := range []struct {
		flag string
		set  func(*Kubernetes)
	}{
		{"name", func(k *Kubernetes) { k.Name = "Tb_Sweep" }},
		{"name", func(k *Kubernetes) { k.Name = strings.Repeat("a", 64) }},
		{"namespace", func(k *Kubernetes) { k.Namespace = "ns\n---\nkind: Pod" }},
		{"claim", func(k *Kubernetes) { k.Claim = "c\n---\napiVersion: v1\nkind: Pod" }},
		{"results", func(k *Kubernetes) { k.Results = "/r\n---\nkind: Pod" }},
		{"results", func(k *Kubernetes) { k.Results = "relative" }},
		{"image", func(k *Kubernetes) { k.Image = "img\nkind: Pod" }},
	} {
		k := Kubernetes{Job: testJob(), Image: "img:1", Claim: "tb-results", GPUs: 1}
		c.set(&k)
		var buf bytes.Buffer
		err := k.Write(&buf)
		if err == nil || !strings.Contains(err.Error(), "--"+c.flag) || buf.Len() > 0 {
			t.Errorf("--%s: %v, %d bytes written", c.flag, err, buf.Len())
		}
	}
	k := Kubernetes{Job: testJob(), Image: "registry.example/tb:1", Claim: "tb.results", Namespace: "bench-1"}
	if err := k.Write(&bytes.Buffer{}); err != nil {
		t.Errorf("good names refused: %v", err)
	}
}
