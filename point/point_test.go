package point

import (
	"strings"
	"testing"
	"time"
)

func TestKeyText(t *testing.T) {
	p := Defaults(4)
	p.Model, p.ModelID, p.NGen, p.NDepth, p.Parallel, p.Sampling, p.FlashAttn, p.TypeV = "/m/a.gguf", "synth:tiny:q8_0", 0, 1024, 4, "", FlashOn, "q8_0"
	k := p.Key()
	want := "synth:tiny:q8_0|p=512|n=0|d=1024|np=4|b=2048|ub=512|t=4|ngl=99|sm=layer|mg=0|mmap=true|fa=on|ctk=f16|ctv=q8_0|sampling=off|r=5|warmup=true|seed=42"
	if k.String() != want {
		t.Fatalf("key\n%s\nwant\n%s", k, want)
	}
	var back Key
	if err := back.UnmarshalText([]byte(want)); err != nil || back != k {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, back, k)
	}
	for _, bad := range []string{"model-only", "m|p=x", "m|p=1|zz=3"} {
		if err := back.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// Without a name, the path identifies the model.
	p.ModelID = ""
	if p.Key().Model != "/m/a.gguf" {
		t.Error(p.Key().Model)
	}
}

func TestValidate(t *testing.T) {
	ok := Defaults(2)
	ok.Model = "m.gguf"
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*Point){
		"no model":          func(p *Point) { p.Model = "" },
		"nothing":           func(p *Point) { p.NPrompt, p.NGen = 0, 0 },
		"negative":          func(p *Point) { p.NDepth = -1 },
		"must be 1 to 256":  func(p *Point) { p.Parallel = 257 },
		"needs flash":       func(p *Point) { p.TypeV, p.FlashAttn = "q4_0", FlashOff },
		"KV cache type":     func(p *Point) { p.TypeK = "q3_k" },
		"use off, greedy":   func(p *Point) { p.Sampling = "beam" },
		"repetitions must":  func(p *Point) { p.Reps = -1 },
		"--target-ci":       func(p *Point) { p.Reps, p.TargetCI = AutoReps, 0 },
		"--max-reps":        func(p *Point) { p.Reps, p.MaxReps = AutoReps, 2 },
		"threads must be 1": func(p *Point) { p.Threads = 0 },
	}
	for want, mod := range cases {
		p := ok
		mod(&p)
		err := p.Validate()
		var ie *InputError
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		} else if !asInput(err, &ie) {
			t.Errorf("%s: not an InputError", want)
		}
	}
}

func asInput(err error, ie **InputError) bool {
	e, ok := err.(*InputError)
	*ie = e
	return ok
}

func TestTests(t *testing.T) {
	p := Defaults(2)
	p.Model, p.Sampling = "m", SamplingTypical
	var names []string
	for _, tt := range p.Tests() {
		names = append(names, tt.TestName()+":"+string(tt.SamplingName()))
	}
	if got := strings.Join(names, " "); got != "pp512:off tg128:off tg128:typical" {
		t.Error(got)
	}
	if TestName(0, 64, 512, 4) != "tg64@d512x4" || TestName(32, 0, 0, 1) != "pp32" {
		t.Error("test names")
	}
	if p.ContextKey() == (Point{Model: "m"}).ContextKey() || p.ModelKey() != (Point{Shape: Shape{NGPULayers: 99}, Model: "m", Split: SplitLayer}).ModelKey() {
		t.Error("model and context keys")
	}
}

// Adaptive repetitions stop at the target, at the cap, or at half the
// point's time; a fixed count stops at the count and is always "met".
func TestEnough(t *testing.T) {
	p := Defaults(2)
	p.Reps, p.TargetCI, p.MaxReps, p.Timeout = AutoReps, 0.02, 6, time.Minute
	quiet := []float64{100, 100.5, 99.5}
	if done, met := p.Enough(quiet[:2], time.Second); done || met {
		t.Error("fewer than 3 repetitions are never enough")
	}
	if done, met := p.Enough(quiet, time.Second); !done || !met {
		t.Error("3 quiet repetitions meet 2%")
	}
	noisy := []float64{100, 150, 60, 120, 80}
	if done, _ := p.Enough(noisy, time.Second); done {
		t.Error("noisy and under the cap: go on")
	}
	if done, met := p.Enough(append(noisy, 90), time.Second); !done || met {
		t.Error("at the cap: stop, target missed")
	}
	if done, met := p.Enough(noisy[:3], 25*time.Second); !done || met {
		t.Error("a fourth repetition would pass half the timeout: stop")
	}
	p.Reps = 5
	if done, met := p.Enough(noisy[:4], 0); done || !met {
		t.Error("fixed count: 4 of 5")
	}
	if done, _ := p.Enough(noisy, 0); !done {
		t.Error("fixed count: 5 of 5")
	}
	if r, err := parseReps("auto"); err != nil || r != AutoReps || RepsName(r) != "auto" {
		t.Error("auto")
	}
	if _, err := parseReps("0"); err == nil {
		t.Error("-r 0 accepted")
	}
}
