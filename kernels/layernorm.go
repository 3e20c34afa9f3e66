package kernels

// layernorm_bwd: the backward of y = x̂·γ + β with x̂ = (x − mean)·rstd
// over [m tokens × n hidden], from dy, x, γ [n] and the forward's saved
// per-row mean and rstd [m] (f32), as PyTorch's native_layer_norm_backward:
//
//	g = γ⊙dy
//	dx = rstd·(g − mean_row(g) − x̂·mean_row(g⊙x̂))
//	dγ = Σ_rows dy⊙x̂,  dβ = Σ_rows dy
//
// It shares rmsnorm_bwd's generator (rmsnorm.go), with two row sums (Σg
// and Σg⊙x̂, reduced together: the butterflies interleave) and two column
// sums (dγ and dβ, f32, added in the same shared-memory pass and the same
// atomics or partials: the partials buffer is [CTAs × 2n] and finalize
// treats dγ and dβ as 2n columns).
//
// Byte floor at [2048 × 1536]: as rmsnorm's plus the saved mean and dβ,
// 37.7 MB in f32 (8.9 µs at 4.25 TB/s) and 18.9 MB in bf16 (4.4 µs),
// against PyTorch eager's 48.3 and 91.1 µs: the 3× and 5× targets are
// 16.1 and 18.2 µs with launches and events.
//
// Inputs: each row of x is a mean uniform in [−1, 1] plus noise scaled to
// a standard deviation uniform in [0.5, 2] (a row of one element is its
// mean alone), eps = 1e-5 (PyTorch's default); the rest as rmsnorm's.

var layerNormBwd = &normBwd{
	cfg: rowCfg{name: "layernorm_bwd", minTPR: 32, rowsVals: []int{1, 2, 4}, rpgVals: []int{2, 4, 8},
		blockMax: 1024, sums: 2, cols: 2, async: true},
	name:  "layernorm_bwd",
	doc:   "LayerNorm backward over rows: dx, dγ and dβ from dy, x, γ and the saved mean and rstd",
	layer: true,
	eps:   1e-5,
}
