package lppool

import (
	"math"

	"github.com/gradtune/gradtune/kernels"
)

// geom is a shape's pooling geometry: rows = n·c rows of l elements, c of
// them per batch element (the kernels take n at run time and bake c).
type geom struct {
	rows, c, l, k, s, lout int
	ceil                   bool
	pm                     int     // p in thousandths
	p                      float64 // p
	lastC                  int     // elements of the last window (< k only when ceil mode clips it)
}

func geomOf(s Shape) geom {
	g := geom{rows: s.N * s.C, c: s.C, l: s.L, k: s.Window, s: s.Stride, ceil: s.Ceil == 1, pm: int(s.P), p: s.P.Float()}
	if g.s == 0 {
		g.s = g.k
	}
	g.lout = outLen(g.l, g.k, g.s, g.ceil)
	g.lastC = min(g.k, g.l-(g.lout-1)*g.s)
	return g
}

// outLen is PyTorch's pooling_output_shape with padding 0 and dilation 1:
// floor((l − k + (ceil ? s−1 : 0)) / s) + 1, and in ceil mode one less
// when the last window would start at or past the row's end.
func outLen(l, k, s int, ceil bool) int {
	num := l - k
	if ceil {
		num += s - 1
	}
	o := floorDiv(num, s) + 1
	if ceil && (o-1)*s >= l {
		o--
	}
	return o
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// ceilDiv rounds a/b up, for negative a too.
func ceilDiv(a, b int) int { return floorDiv(a+b-1, b) }

// intP returns p as an integer and whether it is one.
func (g geom) intP() (int, bool) { return g.pm / 1000, g.pm%1000 == 0 }

// scale is k/c_w, the factor of a window clipped to c_w elements.
func (g geom) scale(w int) float64 { return float64(g.k) / float64(min(g.k, g.l-w*g.s)) }

// partial reports whether the last window is clipped.
func (g geom) partial() bool { return g.lastC < g.k }

// ymax bounds y over the inputs: (k/c)·Σ_c |x|^p ≤ k·max|x|^p.
func (g geom) ymax() float64 { return inputMax * math.Pow(float64(g.k), 1/g.p) }

// forward is the forward in float64: y_w = ((k/c_w)·Σ|x_i|^p)^(1/p).
func forward(g geom, x []float64) []float64 {
	y := make([]float64, g.rows*g.lout)
	kernels.ParallelRows(g.rows, func(r int) {
		row := x[r*g.l : (r+1)*g.l]
		for w := 0; w < g.lout; w++ {
			var sum float64
			for i := w * g.s; i < min(w*g.s+g.k, g.l); i++ {
				sum += math.Pow(math.Abs(row[i]), g.p)
			}
			y[r*g.lout+w] = math.Pow(g.scale(w)*sum, 1/g.p)
		}
	})
	return y
}

// backward is the reference backward in float64:
// dx_i = Σ_{w ∋ i} dy_w·k/c_w · sgn(x_i)·(|x_i|/y_w)^(p−1), where windows
// with y_w = 0 and elements with x_i = 0 contribute 0.
func backward(g geom, x, dy, y []float64) []float64 {
	dx := make([]float64, len(x))
	kernels.ParallelRows(g.rows, func(r int) { // a row's windows touch its elements only
		for w := 0; w < g.lout; w++ {
			yw := y[r*g.lout+w]
			if yw == 0 {
				continue
			}
			gw := dy[r*g.lout+w] * g.scale(w)
			for i := r*g.l + w*g.s; i < r*g.l+min(w*g.s+g.k, g.l); i++ {
				if x[i] == 0 {
					continue
				}
				t := gw * math.Pow(math.Abs(x[i])/yw, g.p-1)
				if x[i] < 0 {
					t = -t
				}
				dx[i] += t
			}
		}
	})
	return dx
}
