package lora

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/variants"
)

// The scale s of the random inputs lies in [sMin, sMax).
const sMin, sMax = 0.5, 2

// Inputs: dY, x, h, A and B uniform in [−1, 1) rounded to the dtype; the
// scale uniform in [0.5, 2) rounded to f32.
func (family) Inputs(s Shape, seed uint64) map[string][]float64 {
	key := variants.ShapeOf(s).Key() + "/"
	u := func(name string, n int) []float64 { return kernels.Uniform(s.DType, n, -1, 1, seed, key+name) }
	in := map[string][]float64{
		"dy": u("dy", s.T*s.Out), "x": u("x", s.T*s.In), "h": u("h", s.T*s.R),
		"b":     u("b", s.Out*s.R),
		"scale": kernels.Uniform(dtype.F32, 1, sMin, sMax, seed, key+"scale"),
	}
	if s.dx() {
		in["a"] = u("a", s.R*s.In)
	}
	return in
}

// Reference, in float64: dh = s·dY·B, dB = s·dYᵀ·h, dA = dhᵀ·x and
// dX = dh·A, with dh unrounded (the kernels carry it in f32).
func (family) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	dy, x, h, a, b, sc := in["dy"], in["x"], in["h"], in["a"], in["b"], in["scale"][0]
	r := s.R
	dh, db := make([]float64, s.T*r), make([]float64, s.Out*r)
	da, dx := make([]float64, r*s.In), make([]float64, s.T*s.In)
	kernels.ParallelRows(s.T, func(t int) {
		row := dh[t*r : (t+1)*r]
		for o, g := range dy[t*s.Out : (t+1)*s.Out] {
			for j, w := range b[o*r : (o+1)*r] {
				row[j] += g * w
			}
		}
		for j := range row {
			row[j] *= sc
		}
	})
	kernels.ParallelRows(s.Out, func(o int) {
		row := db[o*r : (o+1)*r]
		for t := range s.T {
			g := dy[t*s.Out+o]
			for j, v := range h[t*r : (t+1)*r] {
				row[j] += g * v
			}
		}
		for j := range row {
			row[j] *= sc
		}
	})
	kernels.ParallelRows(r, func(j int) {
		row := da[j*s.In : (j+1)*s.In]
		for t := range s.T {
			c := dh[t*r+j]
			for i, v := range x[t*s.In : (t+1)*s.In] {
				row[i] += c * v
			}
		}
	})
	if !s.dx() {
		return map[string][]float64{"dh": dh, "db": db, "da": da}
	}
	kernels.ParallelRows(s.T, func(t int) {
		row := dx[t*s.In : (t+1)*s.In]
		for j, c := range dh[t*r : (t+1)*r] {
			for i, v := range a[j*s.In : (j+1)*s.In] {
				row[i] += c * v
			}
		}
	})
	return map[string][]float64{"dh": dh, "db": db, "da": da, "dx": dx}
}

// Tolerance (the package doc derives it): with γ(L, c) = (c·⌈L/16⌉ +
// 18)·2⁻²³, H a Bernstein bound on |dh| (failure probability 10⁻¹⁵ an
// element) and e the error of dh in f32,
//
//	dh  Atol = e = γ(out, 2)·2·out
//	dB  Atol = γ(t, 3)·2·t
//	dA  Atol = t·ε + γ(t, 5)·t·(H + ε),  ε = e + δ·H (+ 2⁻²⁴ for f16)
//	dX  Atol = r·ε + γ(r, 4)·r·(H + ε)
//
// δ the relative error of dh as hi + lo (2⁻¹⁷ bf16, 2⁻²² f16); each
// widened by the output's rounding (kernels.StoreTol).
func (family) Tolerance(s Shape, buffer string) kernels.Tolerance {
	e := gamma(s.Out, 2) * sMax * float64(s.Out)
	var atol float64
	switch buffer {
	case "dh":
		atol = e
	case "db":
		atol = gamma(s.T, 3) * sMax * float64(s.T)
	default:
		hb := sMax * math.Min(float64(s.Out), bernstein(s.Out))
		delta, abs := 0x1p-17, 0.0
		if s.DType == dtype.F16 {
			delta, abs = 0x1p-22, 0x1p-24
		}
		eps := e + delta*hb + abs
		n, c := s.T, 5
		if buffer == "dx" {
			n, c = s.R, 4
		}
		atol = float64(n)*eps + gamma(n, c)*float64(n)*(hb+eps)
	}
	return kernels.StoreTol(kernels.Tolerance{Atol: atol}, s.DType)
}

// gamma is (c·⌈l/16⌉ + 18)·2⁻²³: the relative error, against the sum of
// the terms' magnitudes, of an f32 sum of l exact products taken c
// roundings per k16 step (a step's block sum and its addition, two more
// for dh's lo half, one for a partial's red.add), plus 18 for the partials
// of splits, the scale and the finalize.
func gamma(l, c int) float64 { return float64(c*((l+15)/16)+18) * 0x1p-23 }

// bernstein bounds |Σ| of l independent terms of mean 0, variance 1/9 and
// magnitude at most 1 (products of two values uniform in [−1, 1)) but for
// a probability of 10⁻¹⁵: a with 2·exp(−a²/(2·(l/9 + a/3))) = 10⁻¹⁵.
func bernstein(l int) float64 {
	lambda := 2 * math.Log(2/1e-15)
	v := float64(l) / 9
	return (lambda/3 + math.Sqrt(lambda*lambda/9+4*lambda*v)) / 2
}

// ExactInputs (kernels.Exacter): nonzero integers from ±1..±v, a scale s
// of 1, 2, 4 or 8, and x zero but where t ≡ i (mod D): of the (v, s) that
// keep every sum exact, the one with the largest bound on |dh|, s·out·v²
// (so that dh passes 256 and its lo half matters), and the fewest classes
// D that keep dA's sums exact. false where none does (f16 at the model's
// shapes: dX passes f16's 65504).
func (family) ExactInputs(s Shape, seed uint64) (map[string][]float64, bool) {
	lim := float64(1 << 23) // half f32's integers: room for hi·A, lo·A partials
	if s.DType == dtype.F16 {
		lim = 65504
	}
	best, bv, bs := 0.0, 0, 0.0
	for v := 3; v >= 1; v-- {
		for _, sc := range []float64{8, 4, 2, 1} {
			fv := float64(v)
			hmax := sc * float64(s.Out) * fv * fv
			if hmax > 1<<15 || sc*float64(s.T)*fv*fv > lim || float64(s.R)*hmax*fv > lim || hmax*fv > lim || hmax <= best {
				continue
			}
			best, bv, bs = hmax, v, sc
		}
	}
	if bv == 0 {
		return nil, false
	}
	d := 1
	for float64((s.T+d-1)/d)*best*float64(bv) > lim {
		d++
	}
	if d > s.In {
		return nil, false
	}
	key := "lora_bwd/exact/"
	x := gemm.ExactValues(bv, s.T*s.In, seed, key+"x")
	for t := range s.T {
		for i := range s.In {
			if (t-i)%d != 0 {
				x[t*s.In+i] = 0
			}
		}
	}
	in := map[string][]float64{
		"dy": gemm.ExactValues(bv, s.T*s.Out, seed, key+"dy"), "x": x,
		"h": gemm.ExactValues(bv, s.T*s.R, seed, key+"h"),
		"b": gemm.ExactValues(bv, s.Out*s.R, seed, key+"b"), "scale": {bs},
	}
	if s.dx() {
		in["a"] = gemm.ExactValues(bv, s.R*s.In, seed, key+"a")
	}
	return in, true
}
