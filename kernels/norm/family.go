package norm

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/rows"
	"github.com/gradtune/gradtune/variants"
)

// Families are rmsnorm_bwd and layernorm_bwd.
func Families() []kernels.Family {
	return []kernels.Family{kernels.Define(rmsNorm), kernels.Define(layerNorm)}
}

// DGamma is how the CTAs' column sums become dγ (and dβ).
type DGamma string

// The column-sum strategies (see the package doc).
const (
	DGammaAtomic  DGamma = "atomic"  // red.add into dγ zeroed by a first launch
	DGammaPartial DGamma = "partial" // per-CTA partials added by a second launch
	DGammaTicket  DGamma = "ticket"  // red.add into colsum; the last CTA copies and clears it
	DGammaAtomic1 DGamma = "atomic1" // red.add into dγ zeroed by the CTA that starts first
)

// Params is one variant: the row axes (see package rows), the column-sum
// strategy, a register cap and whether the second launch is dependent.
type Params struct {
	Vec      int        `axis:"vec" doc:"elements per vector access: the widest dividing n (softmax: or half that, with store=regs)"`
	VPT      int        `axis:"vpt" values:"1,2,3,4,6,8,12,16" doc:"vector accesses per thread per row tile; threads per row = ⌈n/vec/vpt⌉ rounded to a power of two ≤ 32 or to whole warps"`
	Rows     int        `axis:"rows" values:"1,2,4" doc:"row groups per CTA (rows handled side by side)"`
	RPG      int        `axis:"rpg" values:"2,4,8" doc:"rows each row group handles one after another (CTAs = ⌈m/(rows·rpg)⌉)"`
	Unroll   int        `axis:"unroll" values:"1,2" doc:"rows loaded together before any arithmetic (store=regs)"`
	Prefetch bool       `axis:"prefetch" values:"0,1" doc:"1: load the group's next row before reducing this one (store=regs, software pipelined)"`
	Store    rows.Store `axis:"store" values:"regs,reread,smem,async" doc:"row kept in registers, re-read from global memory, or stashed in shared memory between the reduction and the output pass; or every row of the group copied to shared memory with cp.async as the kernel starts, all in flight at once"`
	DGamma   DGamma     `axis:"dgamma" values:"atomic,partial,ticket,atomic1" doc:"column sums: red.add per column per CTA into dγ zeroed by a first launch; per-CTA partials added by a second launch; red.add into a zeroed accumulator that the CTA finishing last copies to dγ and clears (one launch); or (store=async) vector red.adds into dγ zeroed by the CTA that starts first, which the others wait for before their red.adds (one launch)"`
	MaxNReg  int        `axis:"maxnreg" values:"0,64" doc:"register cap (0 = none)"`
	PDL      bool       `axis:"pdl" values:"0,1" doc:"1: the second launch (atomic: the row kernel; partial: the finalize) is a programmatic dependent launch (sm_90) that starts during the first one's tail and waits in griddepcontrol.wait"`
}

// Row is p's row axes.
func (p Params) Row() rows.Params {
	return rows.Params{Vec: p.Vec, VPT: p.VPT, Rows: p.Rows, RPG: p.RPG, Unroll: p.Unroll,
		Prefetch: p.Prefetch, Store: p.Store, MaxNReg: p.MaxNReg}
}

// family is rmsnorm_bwd or, with layer set, layernorm_bwd.
type family struct {
	name, doc string
	layer     bool
	eps       float64
	cfg       rows.Config
}

var rmsNorm = &family{
	name: "rmsnorm_bwd",
	doc:  "RMSNorm backward over rows: dx and dγ from dy, x, γ and the saved rstd",
	eps:  1e-6,
	cfg:  rows.Config{Name: "rmsnorm_bwd", MinTPR: 32, BlockMax: 1024, Sums: 1, Cols: 1},
}

var layerNorm = &family{
	name:  "layernorm_bwd",
	doc:   "LayerNorm backward over rows: dx, dγ and dβ from dy, x, γ and the saved mean and rstd",
	layer: true,
	eps:   1e-5,
	cfg:   rows.Config{Name: "layernorm_bwd", MinTPR: 32, BlockMax: 1024, Sums: 2, Cols: 2},
}

func (f *family) Name() string          { return f.name }
func (f *family) Doc() string           { return f.doc }
func (f *family) DTypes() []dtype.DType { return rows.DTypes() }

// ncols is the number of column sums: dγ, and dβ for layernorm.
func (f *family) ncols() int { return f.cfg.Cols }

// Shapes yields the hidden states [Tokens × Hidden].
func (f *family) Shapes(p variants.Preset, dt dtype.DType) []rows.Shape {
	if p.Tokens <= 0 || p.Hidden <= 0 {
		return nil
	}
	return []rows.Shape{{M: p.Tokens, N: p.Hidden, DType: dt}}
}

// maxN is the longest row the norms take when vw is the widest vector
// dividing it: one tile of MaxTPR threads with vpt ≤ 16 and 2·vpt·vw ≤
// MaxHeld.
func maxN(vw int) int { return rows.MaxTPR * min(16, rows.MaxHeld/2/vw) * vw }

// CheckShape: u32 indices, and a row that fits one tile.
func (f *family) CheckShape(s rows.Shape) error {
	if err := rows.CheckShape(s); err != nil {
		return err
	}
	if vw := rows.WidestVec(s.DType, s.N); s.N > maxN(vw) {
		return fmt.Errorf("n=%d is too long: a row must fit one tile of %d threads holding at most %d elements each (n ≤ %d when n is a multiple of %d)",
			s.N, rows.MaxTPR, maxN(vw)/rows.MaxTPR, maxN(vw), vw)
	}
	return nil
}

// maxPartialCTAs bounds the CTAs of a dgamma=partial variant, whose
// finalize adds one partial row per CTA: at most 2048 (and ⌈m/2⌉, which
// rpg ≥ 2 implies).
func maxPartialCTAs(m int) int { return min(gen.CeilDiv(m, 2), 2048) }

func (f *family) Space(s rows.Shape) variants.Typed[Params] {
	rules := append(rows.Rules[Params](f.cfg, s),
		variants.Rule[Params]{Name: "partials fit", Check: func(p Params) error {
			g := f.cfg.Geom(s, p.Row())
			if p.DGamma == DGammaPartial && g.Grid > maxPartialCTAs(s.M) {
				return fmt.Errorf("%d CTAs of partial sums (at most %d)", g.Grid, maxPartialCTAs(s.M))
			}
			return nil
		}},
		variants.Rule[Params]{Name: "pdl needs two launches", Check: func(p Params) error {
			if p.PDL && (p.DGamma == DGammaTicket || p.DGamma == DGammaAtomic1) {
				return fmt.Errorf("pdl=1 with dgamma=%s (one launch: nothing to overlap)", p.DGamma)
			}
			return nil
		}},
		variants.Rule[Params]{Name: "atomic1 zeroes behind the copies", Check: func(p Params) error {
			if p.DGamma == DGammaAtomic1 && p.Store != rows.StoreAsync {
				return fmt.Errorf("dgamma=atomic1 with store=%s (it zeroes dγ while the group's rows are in flight, which store=async issues first)", p.Store)
			}
			return nil
		}})
	return variants.Typed[Params]{Values: map[string][]string{"vec": variants.Ints(rows.VecValues(s.DType)...)}, Rules: rules}
}

// Buffers are the shape's data; the strategies' own buffers are in each
// Program's Buffers.
func (f *family) Buffers(s rows.Shape) []kernels.Buffer {
	m, n, mn, dt := configs.Var(rows.Dim), configs.Int(s.N), s.ElemsExpr(), s.DType
	b := []kernels.Buffer{
		{Name: "dy", DType: dt, Elems: mn, Role: kernels.Input},
		{Name: "x", DType: dt, Elems: mn, Role: kernels.Input},
		{Name: "gamma", DType: dt, Elems: n, Role: kernels.Input},
	}
	if f.layer {
		b = append(b, kernels.Buffer{Name: "mean", DType: dtype.F32, Elems: m, Role: kernels.Input})
	}
	b = append(b, kernels.Buffer{Name: "rstd", DType: dtype.F32, Elems: m, Role: kernels.Input},
		kernels.Buffer{Name: "dx", DType: dt, Elems: mn, Role: kernels.Output},
		kernels.Buffer{Name: "dgamma", DType: dtype.F32, Elems: n, Role: kernels.Output})
	if f.layer {
		b = append(b, kernels.Buffer{Name: "dbeta", DType: dtype.F32, Elems: n, Role: kernels.Output})
	}
	return b
}

// Cost: read dy, x (m·n each), γ (n), rstd (and mean) (m f32); write dx
// (m·n) and the column sums (n f32 each). Flops per element: rmsnorm 7
// (x̂, g, g·x̂, dy·x̂, r·g, the fma of dx), layernorm 10.
func (f *family) Cost(s rows.Shape) kernels.Cost {
	m, n := int64(s.M), int64(s.N)
	sz := int64(s.DType.Size())
	stats, cols, flops := int64(1), int64(1), int64(7)
	if f.layer {
		stats, cols, flops = 2, 2, 10
	}
	return kernels.Cost{Bytes: 3*m*n*sz + n*sz + 4*stats*m + 4*cols*n, Flops: flops * m * n}
}

// bounds returns rmax, x̂max and the longest row-sum chain K of the
// generated inputs.
func (f *family) bounds(s rows.Shape) (rmax, xhmax, k float64) {
	rmax = 2 * (1 + 4*s.DType.Epsilon())
	xhmax = math.Min(math.Sqrt(float64(s.N)), 4)
	if f.layer && s.N == 1 {
		rmax, xhmax = 1/math.Sqrt(f.eps), 0
	}
	return rmax, xhmax, float64(min(s.N, rows.MaxHeld/2) + 40)
}

// Tolerance gives dx and each column sum its own tolerance (see the
// package doc).
func (f *family) Tolerance(s rows.Shape, buffer string) kernels.Tolerance {
	rmax, xhmax, k := f.bounds(s)
	const gmax = 1.5
	kg := float64(gen.CeilDiv(s.M, 2) + 24)
	walk := 4.8 * math.Sqrt(float64(s.M)/3)
	switch buffer {
	case "dgamma":
		return kernels.Tolerance{Atol: kg * kernels.U32 * (walk + math.Max(xhmax, 1)), Rtol: 8 * kernels.U32}
	case "dbeta":
		return kernels.Tolerance{Atol: kg * kernels.U32 * (walk + 1), Rtol: 8 * kernels.U32}
	}
	return kernels.StoreTol(kernels.Tolerance{Atol: rmax * gmax * kernels.U32 * (xhmax*(k+8) + k + 13), Rtol: 4 * kernels.U32}, s.DType)
}
