// Package norm is the rmsnorm_bwd and layernorm_bwd families: the
// backward of y = x̂·γ (+ β) over [m tokens × n hidden], from dy, x, γ [n]
// and the forward's saved per-row rstd (and mean) [m] (f32):
//
//	rmsnorm:   x̂ = x·rstd,          dx = rstd·(g − x̂·mean_row(g⊙x̂))
//	layernorm: x̂ = (x − mean)·rstd, dx = rstd·(g − mean_row(g) − x̂·mean_row(g⊙x̂))
//	g = γ⊙dy,  dγ = Σ_rows dy⊙x̂,  dβ = Σ_rows dy (layernorm)
//
// Rules:
//   - dx has the storage dtype; dγ and dβ are f32 whatever it is (a
//     column sum over thousands of rows, kept as an f32 master gradient).
//   - Shapes: from a preset, [Tokens × Hidden]; specs name m and n. A row
//     must fit one tile of package rows (1024 threads holding at most 32
//     elements each: n ≤ 32768 when 4 or 8 divides it).
//   - The row count m is taken at run time (package rows): one program
//     computes every m; n is fixed. Everything per CTA follows the row
//     kernel's grid expression ⌈m/(rows·rpg)⌉: the partials buffer has
//     that many rows, and the finalize takes it as its last parameter
//     (ctas); the ticket and atomic1 counters wrap at the CTAs launched
//     (%nctaid.x).
//   - The work split, row storage and reduction are package rows' (row
//     groups of whole warps, 2 to 8 rows per group); layernorm reduces
//     two row sums (Σg and Σg⊙x̂) together.
//   - Each thread keeps its columns' share of dγ (and dβ) in registers
//     across its rows; the row groups of a CTA are added in shared
//     memory, so a CTA contributes one value per column. Axis dgamma
//     says how those become dγ:
//     atomic: red.add into dγ, which a first launch (a zeroing kernel)
//     clears; partial: each CTA stores its sums in the Scratch buffer
//     partials [CTAs × na·n] and a second launch (finalize: 32 slices of
//     the partial rows per 32 columns, eight rows at a time unguarded, the
//     rest guarded) adds them;
//     ticket: one launch; CTAs red.add into the State buffer colsum, then
//     take a ticket (atom.inc on word 0 of the State buffer ticket); the
//     CTA that draws G−1 copies colsum to dγ and clears it; atomic1 (with
//     store=async only): one launch; the CTA that draws start ticket 0
//     (ticket word 0) zeroes dγ behind its first rows' copies and raises
//     a flag (ticket word 1), which every other CTA waits for before its
//     vector red.adds. Counters wrap at G−1 and G, so every run leaves
//     colsum and ticket zero, as the State role requires.
//   - A program declares only the buffers its strategy uses, in
//     Program.Buffers: partials (sized for that variant's CTAs),
//     colsum and ticket (one word for ticket, two for atomic1).
//     Family Buffers are the shape's data: dy, x, γ, (mean,) rstd, dx, dγ
//     (, dβ); dγ and dβ are Output under every strategy, so validation's
//     NaN poison checks the zeroing launch, the ticket copy and atomic1's
//     zeroing too.
//   - Axis pdl (sm_90): the second launch (atomic: the row kernel;
//     partial: the finalize) is a dependent launch that waits in
//     griddepcontrol.wait before it touches what the first launch writes;
//     pdl=1 programs target sm_90 and add column sums with vector
//     red.adds. Ticket and atomic1 have one launch and no pdl.
//   - Tolerance, per output: dx within rmax·gmax·u·(x̂max·(K+8) + K + 13)
//     plus 4u relative (u = 2⁻²⁴, K = min(n, 32) + 40), plus the rounding
//     of the stored dx; dγ within (G+24)·u·(4.8·√(m/3) + x̂max) plus 8u
//     relative, G ≤ ⌈m/2⌉; dβ likewise with terms |dy| ≤ 1.
//
// The byte floor, the targets, why each strategy exists, the H200
// measurements behind the choices and the tolerance's derivation are in
// docs/kernels/rows.md.
package norm
