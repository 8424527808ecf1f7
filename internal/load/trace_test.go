package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTrace(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTraceLayouts(t *testing.T) {
	for _, c := range []struct {
		name, body string
		speedup    float64
		at         []float64
		prompt     []int
		skipped    int
	}{
		{"azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,374,44\n2023-11-16 18:15:48.0,396,109\n2023-11-16 18:15:47.0,879,12\n",
			1, []float64{0, 0.5, 1.5}, []int{374, 879, 396}, 0},
		{"burst.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n7,GPT-4,1087,0,1087,Conversation log\n9,ChatGPT,300,20,320,API log\n",
			2, []float64{0, 2}, []int{472, 300}, 1},
		{"mooncake.jsonl", `{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [1, 2]}` + "\n" + `{"timestamp": 1500, "input_length": 40, "output_length": 5, "hash_ids": []}` + "\n",
			1, []float64{0, 1.5}, []int{6955, 40}, 0},
		{"mine.jsonl", `{"arrival_time": "10.0", "prompt_tokens": 12, "completion_tokens": 3}` + "\n\n" + `{"arrival_time": 10.25, "prompt_tokens": 0, "completion_tokens": 3}` + "\n",
			0.5, []float64{0, 0.5}, []int{12, 1}, 0},
	} {
		tr, err := ReadTrace(writeTrace(t, c.name, c.body), c.speedup)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(tr.Requests) != len(c.at) || tr.Skipped != c.skipped {
			t.Errorf("%s: %d requests, %d skipped: %+v", c.name, len(tr.Requests), tr.Skipped, tr.Requests)
			continue
		}
		for i, r := range tr.Requests {
			if d := r.At - c.at[i]; d > 1e-6 || d < -1e-6 || r.Prompt != c.prompt[i] || r.ID != i {
				t.Errorf("%s request %d: %+v, want at %g prompt %d", c.name, i, r, c.at[i], c.prompt[i])
			}
		}
	}
	for body, want := range map[string]string{
		"":                      "empty file",
		"time,foo,bar\n1,2,3\n": "need a time",
		"timestamp,input_tokens,output_tokens\nnoon,1,2\n": "give seconds",
		"timestamp,input_tokens,output_tokens\n1,a,2\n":    "not whole numbers",
		"timestamp,input_tokens,output_tokens\n1,1,0\n":    "no requests with output",
		`{"timestamp": 1, "input_tokens": 2}` + "\n":       "need a time",
		"{oops\n": "not a JSON object",
		"timestamp,input_tokens,output_tokens\nNaN,1,2\n":                                "out of range",
		"timestamp,input_tokens,output_tokens\ninf,1,2\n":                                "out of range",
		"timestamp,input_tokens,output_tokens\n-Inf,1,2\n":                               "out of range",
		"timestamp,input_tokens,output_tokens\n1e300,1,2\n":                              "out of range",
		`{"timestamp": 1e300, "input_tokens": 2, "output_tokens": 3}` + "\n":             "out of range",
		"timestamp,input_tokens,output_tokens\n1," + strings.Repeat("x", 1<<20) + ",2\n": "(1048576 bytes)",
	} {
		if _, err := ReadTrace(writeTrace(t, "bad", body), 1); err == nil || !strings.Contains(err.Error(), want) || len(err.Error()) > 600 {
			t.Errorf("%.80q: %.600v, want %q in a short message", body, err, want)
		}
	}
	if _, err := ReadTrace(writeTrace(t, "ok.csv", "timestamp,input_tokens,output_tokens\n1,1,1\n"), 0); err == nil {
		t.Error("--speedup 0 accepted")
	}
}

// A replayed trace's requests arrive at their recorded times, whatever
// the server is doing.
func TestTraceArrivesOnTime(t *testing.T) {
	tr, err := ReadTrace(writeTrace(t, "t.csv", "timestamp,input_tokens,output_tokens\n0,300,40\n0.01,20,4\n0.5,8,4\n2,8,4\n"), 1)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Spec{Workload: tr.Workload(), Requests: 100, Burstiness: 1, Trace: tr}.Scenarios()
	if err != nil || len(sc) != 1 || len(sc[0].Requests) != 4 {
		t.Fatalf("%v %+v", err, sc)
	}
	f := newFake(t)
	outs, _, _, err := simulate(f, sc[0].Requests, sc[0].Options)
	if err != nil {
		t.Fatal(err)
	}
	start := outs[0].arrived
	for i, o := range outs {
		if got := o.arrived.Sub(start).Seconds(); o.Status != StatusOK || got < tr.Requests[i].At-1e-9 || got > tr.Requests[i].At+1e-9 {
			t.Errorf("request %d arrived at %gs, recorded %gs (%s)", i, got, tr.Requests[i].At, o.Status)
		}
	}
	if _, err := (Spec{Workload: tr.Workload(), Requests: 4, Burstiness: 1, Concurrency: 8, Trace: tr}).Scenarios(); err == nil {
		t.Error("--trace with --concurrency accepted")
	}
}
