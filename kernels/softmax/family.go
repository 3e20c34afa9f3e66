package softmax

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/rows"
	"github.com/gradtune/gradtune/variants"
)

// Families is softmax_bwd.
func Families() []kernels.Family { return []kernels.Family{kernels.Define(family{})} }

// Params is one variant: the row axes (see package rows) and a register
// cap.
type Params struct {
	Vec      int        `axis:"vec" doc:"elements per vector access: the widest dividing n (softmax: or half that, with store=regs)"`
	VPT      int        `axis:"vpt" values:"1,2,3,4,6,8,12,16" doc:"vector accesses per thread per row tile; threads per row = ⌈n/vec/vpt⌉ rounded to a power of two ≤ 32 or to whole warps"`
	Rows     int        `axis:"rows" values:"1,2,4,8,16" doc:"row groups per CTA (rows handled side by side)"`
	RPG      int        `axis:"rpg" values:"1,2,4" doc:"rows each row group handles one after another (CTAs = ⌈m/(rows·rpg)⌉)"`
	Unroll   int        `axis:"unroll" values:"1,2" doc:"rows loaded together before any arithmetic (store=regs)"`
	Prefetch bool       `axis:"prefetch" values:"0,1" doc:"1: load the group's next row before reducing this one (store=regs, software pipelined)"`
	Store    rows.Store `axis:"store" values:"regs,reread,smem" doc:"row kept in registers, re-read from global memory, or stashed in shared memory between the reduction and the output pass"`
	MaxNReg  int        `axis:"maxnreg" values:"0,64" doc:"register cap (0 = none)"`
}

// Row is p's row axes.
func (p Params) Row() rows.Params {
	return rows.Params{Vec: p.Vec, VPT: p.VPT, Rows: p.Rows, RPG: p.RPG, Unroll: p.Unroll,
		Prefetch: p.Prefetch, Store: p.Store, MaxNReg: p.MaxNReg}
}

// cfg is softmax_bwd's row kernel: sub-warp row groups, rows of any
// length in tiles, one sum per row, no column sums.
var cfg = rows.Config{Name: "softmax_bwd", MinTPR: 4, BlockMax: 512, Tiles: true, Narrow: true, Sums: 1}

// logit bounds the generated logits: uniform in [−logit, logit].
const logit = 2

type family struct{}

func (family) Name() string          { return "softmax_bwd" }
func (family) Doc() string           { return "softmax backward over rows: dx = y ⊙ (dy − Σ_row dy ⊙ y)" }
func (family) DTypes() []dtype.DType { return rows.DTypes() }

// Shapes yields the attention probabilities [batch·heads·seq × seq].
func (family) Shapes(p variants.Preset, dt dtype.DType) []rows.Shape {
	seq := min(p.Seq, p.Tokens)
	if seq <= 0 || p.Heads <= 0 {
		return nil
	}
	return []rows.Shape{{M: p.Tokens / seq * p.Heads * seq, N: seq, DType: dt}}
}

func (family) CheckShape(s rows.Shape) error { return rows.CheckShape(s) }

func (family) Space(s rows.Shape) variants.Typed[Params] {
	return variants.Typed[Params]{
		Values: map[string][]string{"vec": variants.Ints(rows.VecValues(s.DType)...)},
		Rules:  rows.Rules[Params](cfg, s),
	}
}

func (family) Buffers(s rows.Shape) []kernels.Buffer {
	n := s.ElemsExpr()
	return []kernels.Buffer{
		{Name: "y", DType: s.DType, Elems: n, Role: kernels.Input},
		{Name: "dy", DType: s.DType, Elems: n, Role: kernels.Input},
		{Name: "dx", DType: s.DType, Elems: n, Role: kernels.Output},
	}
}

// Inputs: y is the softmax (in float64, rounded to the dtype) of logits
// uniform in [−2, 2]; dy is uniform in [−1, 1].
func (family) Inputs(s rows.Shape, seed uint64) map[string][]float64 {
	m, n, key := s.M, s.N, variants.ShapeOf(s).Key()
	logits := kernels.Uniform(dtype.F64, m*n, -logit, logit, seed, key+"/logits")
	y := make([]float64, m*n)
	for r := 0; r < m; r++ {
		row := logits[r*n : (r+1)*n]
		top := math.Inf(-1)
		for _, v := range row {
			top = math.Max(top, v)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(v - top)
		}
		for i, v := range row {
			y[r*n+i] = s.DType.Round(math.Exp(v-top) / sum)
		}
	}
	return map[string][]float64{"y": y, "dy": kernels.Uniform(s.DType, m*n, -1, 1, seed, key+"/dy")}
}

func (family) Reference(s rows.Shape, in map[string][]float64) map[string][]float64 {
	m, n := s.M, s.N
	y, dy := in["y"], in["dy"]
	dx := make([]float64, m*n)
	for r := 0; r < m; r++ {
		var dot float64
		for i := r * n; i < (r+1)*n; i++ {
			dot += dy[i] * y[i]
		}
		for i := r * n; i < (r+1)*n; i++ {
			dx[i] = y[i] * (dy[i] - dot)
		}
	}
	return map[string][]float64{"dx": dx}
}

// Cost: read y and dy, write dx; an fma for the dot product, a
// subtraction and a multiplication per element.
func (family) Cost(s rows.Shape) kernels.Cost {
	e := int64(s.Elems())
	return kernels.Cost{Bytes: 3 * e * int64(s.DType.Size()), Flops: 4 * e}
}

// Tolerance: Atol = ymax·(1.01·K + 8)·u with K = n/1024 + 56 the longest
// chain of additions of the row sum, Rtol = 4u, plus the rounding of the
// stored dx (docs/kernels/rows.md derives it).
func (family) Tolerance(s rows.Shape, _ string) kernels.Tolerance {
	k := float64(s.N)/rows.MaxTPR + 56
	return kernels.StoreTol(kernels.Tolerance{Atol: yMax(s) * (1.01*k + 8) * kernels.U32, Rtol: 4 * kernels.U32}, s.DType)
}

// yMax bounds the generated y of a shape: e^L/S, with S at least
// e^L + (n−1)·e^−L and, but for a six-sigma event, n·μ − 6·√n·σ (μ and σ²
// the mean and variance of e^z for z uniform in [−L, L]).
func yMax(s rows.Shape) float64 {
	n := float64(s.N)
	const l = logit
	mu := math.Sinh(l) / l
	sigma := math.Sqrt(math.Sinh(2*l)/(2*l) - mu*mu)
	sum := math.Max(math.Exp(l)+(n-1)*math.Exp(-l), n*mu-6*math.Sqrt(n)*sigma)
	return math.Min(1, math.Exp(l)/sum) * (1 + s.DType.Epsilon())
}
