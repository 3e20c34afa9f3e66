package tuning

import (
	"fmt"
	"math"
	"testing"
)

// TestFloor: the chance of a uniform sample holding a near point is the
// exact hypergeometric one, abandoned evaluations are not near, and
// points without a median (failed) count in the space.
func TestFloor(t *testing.T) {
	s := ReplayShape{Points: 20, Optimum: 100, Truth: map[string]float64{}, Full: map[string]bool{}}
	for i := range 16 { // 4 failed points: no truth
		p := fmt.Sprint(i)
		s.Truth[p] = 110 + float64(i)
		s.Full[p] = true
	}
	s.Truth["0"], s.Truth["1"], s.Truth["2"] = 100, 101.5, 101 // near, near, abandoned
	delete(s.Full, "2")
	f := Floor(s, 0.02)
	if f.Full != 15 || f.Near != 2 || f.NearAbandoned != 1 || f.Tenth != 2 || f.Budget != 8 {
		t.Fatalf("%+v", f)
	}
	// 1 − C(18,n)/C(20,n) = 1 − (20−n)(19−n)/(20·19)
	p := func(n float64) float64 { return 1 - (20-n)*(19-n)/380 }
	if math.Abs(f.PTenth-p(2)) > 1e-12 || math.Abs(f.PHit-p(8)) > 1e-12 {
		t.Errorf("PTenth %v PHit %v, want %v %v", f.PTenth, f.PHit, p(2), p(8))
	}
	if f.Half != 6 || p(5) >= 0.5 || p(6) < 0.5 {
		t.Errorf("half %d (p(5)=%v p(6)=%v)", f.Half, p(5), p(6))
	}
}
