package point

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseInts(t *testing.T) {
	good := map[string][]int{
		"512":        {512},
		"512,1024":   {512, 1024},
		"1-8+1":      {1, 2, 3, 4, 5, 6, 7, 8},
		"1-8+3":      {1, 4, 7},
		"0-4096*2":   {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096},
		"128-1024*2": {128, 256, 512, 1024},
		"-1":         {-1},
		"0, 2-4":     {0, 2, 3, 4},
	}
	for in, want := range good {
		got, err := ParseInts(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseInts(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "1,,2", "8-1", "1-8*1", "1-8+0", "1-x", "0-100000000+1"} {
		if _, err := ParseInts(bad); err == nil {
			t.Errorf("ParseInts(%q) accepted", bad)
		}
	}
}

// A range near the 64-bit limit ends at its end, never wraps around; a
// number past 64 bits says so.
func TestRangeNearTheLimit(t *testing.T) {
	max := "9223372036854775807"
	for in, n := range map[string]int{"1-" + max + "*2": 63, max + "-" + max: 1, "9223372036854775800-" + max + "+5": 2, "0-" + max + "*1000000000000": 3} {
		if v, err := ParseInts(in); err != nil || len(v) != n || v[len(v)-1] < 0 {
			t.Errorf("%s: %v %v", in, v, err)
		}
	}
	if _, err := ParseInts("1-99999999999999999999"); err == nil || !strings.Contains(err.Error(), "64 bits") {
		t.Errorf("past 64 bits: %v", err)
	}
}
