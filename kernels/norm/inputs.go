package norm

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/rows"
	"github.com/gradtune/gradtune/variants"
)

// Inputs: dy uniform in [−1, 1], γ uniform in [0.5, 1.5]; each row of x is
// uniform noise scaled to a row RMS (rmsnorm) or standard deviation around
// a row mean uniform in [−1, 1] (layernorm) uniform in [0.5, 2], rounded
// to the dtype; rstd (and mean) are computed from the rounded x in float64
// and rounded to f32, as the forward saves them.
func (f *family) Inputs(s rows.Shape, seed uint64) map[string][]float64 {
	m, n, dt := s.M, s.N, s.DType
	key := variants.ShapeOf(s).Key() + "/"
	raw := kernels.Uniform(dtype.F64, m*n, -2, 2, seed, key+"x")
	scale := kernels.Uniform(dtype.F64, m, 0.5, 2, seed, key+"scale")
	center := kernels.Uniform(dtype.F64, m, -1, 1, seed, key+"center")
	x := make([]float64, m*n)
	rstd := make([]float64, m)
	mean := make([]float64, m)
	for r := 0; r < m; r++ {
		row := raw[r*n : (r+1)*n]
		mu, ss := f.moments(row)
		sd := math.Sqrt(ss / float64(n))
		for i, v := range row {
			switch {
			case f.layer && sd == 0:
				x[r*n+i] = dt.Round(center[r])
			case f.layer:
				x[r*n+i] = dt.Round(center[r] + scale[r]*(v-mu)/sd)
			case sd == 0:
				x[r*n+i] = dt.Round(scale[r])
			default:
				x[r*n+i] = dt.Round(scale[r] * v / sd)
			}
		}
		xm, xv := f.moments(x[r*n : (r+1)*n])
		mean[r] = dtype.F32.Round(xm)
		rstd[r] = dtype.F32.Round(1 / math.Sqrt(xv/float64(n)+f.eps))
	}
	in := map[string][]float64{
		"dy":    kernels.Uniform(dt, m*n, -1, 1, seed, key+"dy"),
		"x":     x,
		"gamma": kernels.Uniform(dt, n, 0.5, 1.5, seed, key+"gamma"),
		"rstd":  rstd,
	}
	if f.layer {
		in["mean"] = mean
	}
	return in
}

// moments returns a row's mean (layernorm; 0 for rmsnorm, which does not
// center) and the sum of squared deviations from it, in float64.
func (f *family) moments(row []float64) (mu, ss float64) {
	if f.layer {
		for _, v := range row {
			mu += v
		}
		mu /= float64(len(row))
	}
	for _, v := range row {
		ss += (v - mu) * (v - mu)
	}
	return mu, ss
}

// Reference computes dx, dγ (and dβ) in float64 from the saved rstd (and
// mean) as given.
func (f *family) Reference(s rows.Shape, in map[string][]float64) map[string][]float64 {
	m, n := s.M, s.N
	dy, x, gamma, rstd := in["dy"], in["x"], in["gamma"], in["rstd"]
	dx := make([]float64, m*n)
	dg := make([]float64, n)
	db := make([]float64, n)
	xh := make([]float64, n)
	for r := 0; r < m; r++ {
		var mu float64
		if f.layer {
			mu = in["mean"][r]
		}
		var s1, s2 float64
		for i := 0; i < n; i++ {
			xh[i] = (x[r*n+i] - mu) * rstd[r]
			g := gamma[i] * dy[r*n+i]
			s1 += g
			s2 += g * xh[i]
			dg[i] += dy[r*n+i] * xh[i]
			db[i] += dy[r*n+i]
		}
		s1, s2 = s1/float64(n), s2/float64(n)
		if !f.layer {
			s1 = 0
		}
		for i := 0; i < n; i++ {
			dx[r*n+i] = rstd[r] * (gamma[i]*dy[r*n+i] - s1 - xh[i]*s2)
		}
	}
	out := map[string][]float64{"dx": dx, "dgamma": dg}
	if f.layer {
		out["dbeta"] = db
	}
	return out
}
