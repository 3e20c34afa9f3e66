package store

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// TestDecodeSamples: decodeSamples reads what encoding/json reads into
// []*float64 (null as NaN), refuses what it refuses, and reads back what
// encodeSamples writes.
func TestDecodeSamples(t *testing.T) {
	for _, text := range []string{
		"[]", " [ ] ", "[1]", "[1.5,2,3e-7,null,-0,0.25E+3,12345678901234567890]", "[ 1 ,\n\t2\r]", "[null]",
		"[", "]", "[1,]", "[,1]", "[01]", "[1.]", "[.5]", "[+1]", "[1e]", "[NaN]", "[Inf]", "[0x1p-2]", "[1_0]",
		"[1e400]", "[\"1\"]", "[[1]]", "[nul]", "[1 2]", "1", "", "{}",
	} {
		got, err := decodeSamples(text)
		var ps []*float64
		jerr := json.Unmarshal([]byte(text), &ps)
		if (err == nil) != (jerr == nil) {
			t.Errorf("%q: decodeSamples error %v, encoding/json's %v", text, err, jerr)
			continue
		}
		if err != nil {
			continue
		}
		want := make([]float64, len(ps))
		for i, p := range ps {
			want[i] = math.NaN()
			if p != nil {
				want[i] = *p
			}
		}
		if !slices.EqualFunc(got, want, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) || got == nil {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
	in := []float64{0.1, 1e-300, math.MaxFloat64, math.Inf(1), math.NaN(), -2.5, 3}
	got, err := decodeSamples(encodeSamples(in).(string))
	if err != nil || len(got) != len(in) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for i, v := range in {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			v = math.NaN()
		}
		if got[i] != v && !(math.IsNaN(got[i]) && math.IsNaN(v)) {
			t.Errorf("round trip: sample %d is %v, want %v", i, got[i], v)
		}
	}
}
