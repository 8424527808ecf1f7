package point

import (
	"reflect"
	"testing"
)

func TestOrder(t *testing.T) {
	mk := func(model string, np, d, pp, tg int, smp Sampling) Point {
		return Point{Model: model, Parallel: np, NDepth: d, NPrompt: pp, NGen: tg, Sampling: smp, FlashAttn: FlashAuto}
	}
	in := []Point{
		mk("a", 1, 512, 64, 0, "off"), mk("b", 1, 0, 0, 16, "off"), mk("a", 2, 0, 0, 16, "off"),
		mk("a", 1, 0, 0, 16, "typical"), mk("a", 1, 0, 64, 0, "off"), mk("a", 1, 0, 0, 16, "off"), mk("a", 1, 512, 0, 16, "off"),
	}
	var got []string
	for _, p := range Order(in) {
		got = append(got, p.Model+"/"+p.TestName()+"/"+string(p.SamplingName()))
	}
	want := []string{
		"a/tg16/off", "a/tg16/typical", "a/pp64/off", "a/tg16@d512/off", "a/pp64@d512/off", // model a, np 1: depth up, tg before pp
		"a/tg16x2/off", // model a, np 2: another context
		"b/tg16/off",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order\n got %v\nwant %v", got, want)
	}
}
