package point

import (
	"strings"
	"testing"
	"time"
)

func TestKnobsKeyRoundTrip(t *testing.T) {
	p := Defaults(4)
	p.Model = "m.gguf"
	old := p.Key().String()
	if strings.Contains(old, "ot=") {
		t.Errorf("unset knobs in the key: %s", old)
	}
	p.Placement = Placement{Devices: "CUDA0/CUDA1", TensorSplit: "3/1", Overrides: `blk\.(1|2)\.ffn_up_exps=CPU;exps=CUDA0`, NCPUMoE: 2}
	p.Threading = Threading{Poll: "0", CPUMask: "0xF", CPUStrict: true, Prio: 2}
	p.NoKVOffload = true
	k := p.Key()
	var back Key
	if err := back.UnmarshalText([]byte(k.String())); err != nil || back != k {
		t.Fatalf("%v\n%s\n%+v\n%+v", err, k, back, k)
	}
	var o Key
	if err := o.UnmarshalText([]byte(old)); err != nil || o.Placement != (Placement{}) || o.Threading != (Threading{}) {
		t.Errorf("a key without knobs: %v %+v", err, o)
	}
	if p.ModelKey() == Defaults(4).ModelKey() || p.ContextKey().Threading != p.Threading {
		t.Error("the knobs are not in the model and context keys")
	}
}

func TestKnobsTestsAndChecks(t *testing.T) {
	p := Defaults(4)
	p.Model, p.NPrompt, p.NGen, p.NDepth, p.PG = "m", 64, 16, 8, [2]int{32, 8}
	tests := p.Tests()
	plain := p
	plain.PG = [2]int{}
	if len(tests) != 3 || !tests[2].Combined || tests[0].Key() != plain.Tests()[0].Key() || tests[2].TestName() != "pp32+tg8@d8" || tests[2].PerSeqCtx() != 8+32+8 || tests[0].Combined {
		t.Fatalf("%+v", tests)
	}
	if p.PerSeqCtx() != 8+64 {
		t.Errorf("parent context %d", p.PerSeqCtx())
	}
	for _, c := range []struct {
		set  func(*Point)
		want string
	}{
		{func(p *Point) { p.Overrides = "exps" }, "PATTERN=BUFFER_TYPE"},
		{func(p *Point) { p.TensorSplit = "3/x" }, "-ts"},
		{func(p *Point) { p.TensorSplit = "0/0" }, "nothing"},
		{func(p *Point) { p.TensorSplit = "3,1" }, "e.g. 3/1"},
		{func(p *Point) { p.CPUMask = "0xG" }, "hex digit"},
		{func(p *Point) { p.CPUMask = "0x0" }, "no CPU"},
		{func(p *Point) { p.CPUStrict, p.Poll = true, NoPool }, "--poll none runs no thread pool"},
		{func(p *Point) { p.Poll = "101" }, "--poll"},
		{func(p *Point) { p.Poll = "x" }, "--poll"},
		{func(p *Point) { p.Prio = 4 }, "--prio"},
		{func(p *Point) { p.NCPUMoE = -1 }, "-ncmoe"},
		{func(p *Point) { p.Delay = -time.Second }, "--delay"},
		{func(p *Point) { p.PG = [2]int{5, 0} }, "-pg"},
	} {
		q := p
		c.set(&q)
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", q.Placement, err, c.want)
		}
	}
	// --cpu-strict without -C is llama-bench's: taken (llama.cpp pins
	// only within a mask).
	q := p
	q.CPUStrict = true
	if err := q.Validate(); err != nil {
		t.Errorf("--cpu-strict alone: %v", err)
	}
	mask, err := ParseCPUMask("0x12")
	if err != nil || len(mask) != 8 || !mask[1] || !mask[4] || mask[0] || mask[5] {
		t.Errorf("mask %v %v", mask, err)
	}
	if o, err := ParseOverrides(`blk\.[0-9]{1,2}\.exps=CPU;x=CUDA0`); err != nil || len(o) != 2 || o[0].Pattern != `blk\.[0-9]{1,2}\.exps` {
		t.Errorf("-ot with a comma in its pattern: %+v %v", o, err)
	}
	if o := MoEOverrides(2); len(o) != 2 || o[1].Pattern != `blk\.1\.ffn_(up|down|gate)_exps` || o[1].BufferType != "CPU" {
		t.Errorf("%+v", o)
	}
	if d := ParseDevices("none"); d == nil || len(d) != 0 {
		t.Errorf("none: %#v", d)
	}
	if pg, err := parsePG("512,128"); err != nil || pg != [2]int{512, 128} {
		t.Errorf("pg %v %v", pg, err)
	}
}

// llama-bench's pool is the default (poll 50, written "" so that it keys
// as the default); NoPool attaches none, is written -1, and refuses the
// knobs that only a pool has.
func TestThreadingDefaults(t *testing.T) {
	if pollOf(" 50 ") != "" || pollOf("0") != "0" || pollOf(NoPool) != NoPool {
		t.Error("PollOf")
	}
	var def Threading
	if !def.Pool() || def.PollLevel() != 50 {
		t.Errorf("default: pool %v, poll %d", def.Pool(), def.PollLevel())
	}
	none := Threading{Poll: NoPool}
	if none.Pool() || none.PollLevel() != -1 {
		t.Errorf("none: pool %v, poll %d", none.Pool(), none.PollLevel())
	}
	p := Defaults(2)
	p.Threading = Threading{Poll: NoPool, CPUMask: "0x3"}
	if err := p.CheckKnobs(); err == nil || !strings.Contains(err.Error(), "no thread pool") {
		t.Errorf("none with -C: %v", err)
	}
	p.Threading = Threading{Poll: "-1"}
	if err := p.CheckKnobs(); err == nil || !strings.Contains(err.Error(), "--poll none") {
		t.Errorf("-1: %v", err)
	}
}

// -ts is written as llama-bench writes it, so that the script's key meets.
func TestLlamaBenchSplit(t *testing.T) {
	for in, want := range map[string]string{"": "0.00", "3/1": "3.00/1.00", "1/0": "1.00", "0.5/0.25/0": "0.50/0.25", "x": "x"} {
		if got := LlamaBenchSplit(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// A share that is not a finite proportion is refused, however spelled.
func TestTensorSplitFinite(t *testing.T) {
	for _, s := range []string{"nan/1", "inf/1", "+Inf/1", "1/-Inf", "NaN", "1e39/1", "2e6/1", "-1/2", "1//2"} {
		if _, err := ParseTensorSplit(s); err == nil {
			t.Errorf("-ts %s accepted", s)
		}
	}
	if v, err := ParseTensorSplit("3/1"); err != nil || len(v) != 2 {
		t.Errorf("3/1: %v %v", v, err)
	}
}
