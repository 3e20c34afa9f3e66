package lppool

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// Inputs: x uniform in [−2, 2] (for p < 1 with |x| ≥ 0.25, so that
// (|x|/y)^(p−1) stays bounded) with exact zeros at every 37th element and
// in the whole first window of the second row (so y = 0 there), dy uniform
// in [−1, 1], and y the forward output of x in float64 rounded to the
// dtype.
func (def) Inputs(s Shape, seed uint64) map[string][]float64 {
	g := geomOf(s)
	dt, key := s.DType, variants.ShapeOf(s).Key()
	n := g.rows * g.l
	var x []float64
	if g.pm < 1000 {
		x = kernels.Uniform(dtype.F64, n, -(inputMax - inputMinLT), inputMax-inputMinLT, seed, key+"/x")
		for i, v := range x {
			x[i] = dt.Round(v + math.Copysign(inputMinLT, v))
		}
	} else {
		x = kernels.Uniform(dt, n, -inputMax, inputMax, seed, key+"/x")
	}
	for i := 5; i < n; i += 37 {
		x[i] = 0
	}
	zr := min(1, g.rows-1)
	for i := 0; i < min(g.k, g.l); i++ {
		x[zr*g.l+i] = 0
	}
	y := forward(g, x)
	for i := range y {
		y[i] = dt.Round(y[i])
	}
	return map[string][]float64{
		"x":  x,
		"dy": kernels.Uniform(dt, g.rows*g.lout, -1, 1, seed, key+"/dy"),
		"y":  y,
	}
}

func (def) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	return map[string][]float64{"dx": backward(geomOf(s), in["x"], in["dy"], in["y"])}
}

// Cost: x, dy and y read once, dx written once; two flops per (element,
// window) pair and one per element.
func (def) Cost(s Shape) kernels.Cost {
	g := geomOf(s)
	n, no := int64(g.rows)*int64(g.l), int64(g.rows)*int64(g.lout)
	return kernels.Cost{Bytes: (2*n + 2*no) * int64(s.DType.Size()), Flops: 2*no*int64(g.k) + n}
}

// Tolerance: a few units of the math type's precision times the bound of
// a dx element, ceil(k/s) terms of at most max|dy| · k/c_w ·
// (|x|/y)^(p−1), where |x|/y ≤ 1 for p ≥ 1 and ≤ ymax/0.25 for p < 1;
// 16-bit outputs add one rounding.
func (def) Tolerance(s Shape, _ string) kernels.Tolerance {
	g := geomOf(s)
	bound := float64(ceilDiv(g.k, g.s)) * float64(g.k) / float64(g.lastC)
	if g.pm < 1000 {
		bound *= math.Pow(g.ymax()/inputMinLT, 1-g.p)
	}
	switch s.DType {
	case dtype.F64:
		return kernels.Tolerance{Atol: 1e-12 * bound, Rtol: 1e-12}
	case dtype.F16, dtype.BF16:
		return kernels.Tolerance{Atol: 1e-5 * bound, Rtol: 2 * s.DType.Epsilon()}
	}
	return kernels.Tolerance{Atol: 1e-5 * bound, Rtol: 1e-5}
}
