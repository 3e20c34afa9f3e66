package linxent

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRefMath: the blocked products equal plain loops (within float64
// rounding) at an odd class count and a row count that is not a multiple
// of four, from a row past the first.
func TestRefMath(t *testing.T) {
	const h, v, rows, r0, n = 24, 7, 9, 2, 6
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(k int) []float64 {
		out := make([]float64, k)
		for i := range out {
			out[i] = rng.Float64()*2 - 1
		}
		return out
	}
	x, w, coef := fill(rows*h), fill(v*h), fill(n*v)
	z := make([]float64, n*v)
	logitsOf(x, w, z, h, v, r0, n)
	dx, want := fill(rows*h), make([]float64, rows*h)
	copy(want, dx)
	addGrads(dx, w, coef, h, v, r0, n)
	for i := range n {
		for c := range v {
			s := 0.0
			for j := range h {
				s += x[(r0+i)*h+j] * w[c*h+j]
				want[(r0+i)*h+j] += coef[i*v+c] * w[c*h+j]
			}
			if math.Abs(z[i*v+c]-s) > 1e-12 {
				t.Errorf("z[%d][%d] = %g, want %g", i, c, z[i*v+c], s)
			}
		}
	}
	for i := range dx {
		if math.Abs(dx[i]-want[i]) > 1e-12 {
			t.Errorf("dx[%d] = %g, want %g (row %d)", i, dx[i], want[i], i/h)
		}
	}
}
