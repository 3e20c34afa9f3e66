package attn

import (
	"math"
)

// The tolerance (the package doc states it; TestErrors logs each
// output's error against it). With u the dtype's unit roundoff, the
// kernel's error on top of rounding its outputs (kernels.StoreTol) comes
// from rounding P and dS to the dtype to feed mma.sync: relative errors
// |δ| ≤ u per element, which for a sum Σ δ_i·t_i of n terms we take as
// independent and of mean zero, so that by Hoeffding's inequality at a
// failure probability of 10⁻¹⁵ an element, |Σ δ_i·t_i| ≤ λ·u·√(Σ t_i²),
// λ = √(2·ln(2·10¹⁵)) ≈ 8.4. The terms' sizes are those of the random
// inputs (q, k, v, dO uniform in [−1, 1): mean square 1/3; dP = dO·v a
// sum of d products of variance 1/9; scores S·scale of standard
// deviation 1/3, so that P_ij lies within a factor ρ = e of 1/n_i, n_i
// the keys query i sees): that is a model of these inputs, not a bound
// for every input.
//
//	dV_j = Σ_{g,i} P_ij·dO_i:      Σ t² ≤ ρ²·G·Z/3
//	dK_j = scale·Σ_{g,i} dS_ij·q_i: Σ t² ≤ scale²·ρ²·G·Z·σ²/3
//	dQ_i = scale·Σ_j dS_ij·k_j:     Σ t² ≤ scale²·ρ²·σ²/3
//
// with G = hq/hk, Z = Σ_i 1/n_i² over the queries that see key j
// (π²/6 causal, 1/s otherwise; at most 1 for dQ's row), σ² = 4·d/9 the
// mean square of dP − D (D is a P-weighted mean of dP). Each adds the f32
// accumulation: (⌈L/16⌉ + 8)·2⁻²³ of the sum of the terms' magnitudes
// (one rounding per k16 step of the L-long sum, 8 for the red.add
// partials, D, the exponent and the scale), that sum taken as
// ρ·G·H (H = 1 + ln s causal, 1 otherwise) times |dO|, scale·σ·|q| or
// scale·σ·|k| ≤ 1.
const (
	lambda = 8.4
	rho    = math.E
)

func atol(s Shape, buffer string) float64 {
	u := s.DType.Epsilon()
	g := float64(s.HQ / s.HK)
	n := float64(s.S)
	z, h := 1/n, 1.0
	if s.Causal == 1 {
		z, h = math.Pi*math.Pi/6, 1+math.Log(n)
	}
	scale := 1 / math.Sqrt(float64(s.D))
	sigma := math.Sqrt(4 * float64(s.D) / 9)
	gamma := func(l float64) float64 { return (math.Ceil(l/16) + 8) * 0x1p-23 }
	var rss, abs float64
	switch buffer {
	case "dv":
		rss = rho * math.Sqrt(g*z/3)
		abs = gamma(g*n) * rho * g * h
	case "dk":
		rss = scale * rho * sigma * math.Sqrt(g*z/3)
		abs = gamma(g*n) * rho * g * h * scale * sigma
	default: // dq
		rss = scale * rho * sigma / math.Sqrt(3)
		abs = gamma(n) * rho * h * scale * sigma
	}
	return lambda*u*rss + abs
}
