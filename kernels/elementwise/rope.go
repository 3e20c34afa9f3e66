package elementwise

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// RopeShape is the query and key gradients of one layer: t tokens of hq
// query heads and hk key heads of head dim d, with the cos and sin tables
// of the t positions ([t × d] each, Hugging Face's layout).
type RopeShape struct {
	T     int `dim:"t"`
	HQ    int `dim:"hq"`
	HK    int `dim:"hk"`
	D     int `dim:"d"`
	DType dtype.DType
}

// half is the head dim's half: element j pairs with element j + half.
func (s RopeShape) half() int { return s.D / 2 }

// heads is the query and key heads of a token, in the kernel's order
// (its query heads, then its key heads).
func (s RopeShape) heads() int { return s.HQ + s.HK }

// unitsPerToken is the work units of one token for params p: vec columns
// of p.Heads heads each.
func (s RopeShape) unitsPerToken(p RopeParams) int { return s.heads() / p.Heads * s.half() / p.Vec }

// RopeParams is one rope_bwd variant: the map's params, and the heads a
// unit takes at the same columns, which share one load of the tables'
// columns.
type RopeParams struct {
	Params
	Heads int `axis:"heads" default:"1" doc:"heads a thread rotates at the same columns (the tables loaded once for all)"`
}

// rope is rope_bwd: the backward of rotary embeddings in the rotate-half
// layout,
//
//	y_lo = x_lo·cos_lo − x_hi·sin_lo,  y_hi = x_hi·cos_hi + x_lo·sin_hi
//	dx_lo = dy_lo·cos_lo + dy_hi·sin_hi,  dx_hi = dy_hi·cos_hi − dy_lo·sin_lo
//
// (lo = element j < d/2 of a head, hi = element j + d/2, cos and sin of
// the token's position at the same column), for q and k in one launch.
type rope struct{}

var ropeBwd = rope{}

func (rope) Name() string { return "rope_bwd" }
func (rope) Doc() string {
	return "RoPE backward (rotate-half): dq and dk from the rotated q and k's gradients and the cos/sin tables"
}
func (rope) DTypes() []dtype.DType { return []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} }

// Shapes yields the preset's attention heads at its token count.
func (rope) Shapes(p variants.Preset, dt dtype.DType) []RopeShape {
	if p.Tokens <= 0 || p.Heads <= 0 || p.HeadDim <= 0 {
		return nil
	}
	return []RopeShape{{T: p.Tokens, HQ: p.Heads, HK: p.KVHeads, D: p.HeadDim, DType: dt}}
}

// CheckShape: an even head dim, at least one head of each kind, element
// indices within u32 arithmetic.
func (rope) CheckShape(s RopeShape) error {
	if s.D%2 != 0 {
		return fmt.Errorf("d=%d: the head dim must be even (element j pairs with j + d/2)", s.D)
	}
	if s.HQ < 1 || s.HK < 1 {
		return fmt.Errorf("hq=%d, hk=%d: want at least one query and one key head", s.HQ, s.HK)
	}
	return gen.CheckIndexable([]string{"t", "heads", "d"}, s.T, s.HQ+s.HK, s.D)
}

// ropeMaxElems bounds the elements a thread loads before its math:
// ept·heads·vec of the gradients (2 each) beside the tables' 4·vec.
const ropeMaxElems = 32

// Space: vector widths of at most 16 bytes that divide d/2 (16-bit types
// take pairs when they can); heads a unit that divide a token's heads,
// past 1 only while ept·heads·vec stays within ropeMaxElems (each is two
// loads of vec elements held until the math).
func (rope) Space(s RopeShape) variants.Typed[RopeParams] {
	var vecs, heads []int
	for _, v := range []int{1, 2, 4, 8} {
		if v*s.DType.Size() <= 16 && s.half()%v == 0 && (v > 1 || s.DType.Size() == 4 || s.half()%2 != 0) {
			vecs = append(vecs, v)
		}
	}
	for h := 1; h <= s.heads(); h++ {
		if s.heads()%h == 0 && h <= ropeMaxElems {
			heads = append(heads, h)
		}
	}
	return variants.Typed[RopeParams]{
		Values: map[string][]string{"vec": variants.Ints(vecs...), "heads": variants.Ints(heads...)},
		Rules: []variants.Rule[RopeParams]{{Name: "heads", Check: func(p RopeParams) error {
			if s.heads()%p.Heads != 0 {
				return fmt.Errorf("heads=%d does not divide a token's %d heads", p.Heads, s.heads())
			}
			if p.Heads > 1 && p.EPT*p.Heads*p.Vec > ropeMaxElems {
				return fmt.Errorf("ept·heads·vec = %d: more than %d elements of each gradient half held a thread", p.EPT*p.Heads*p.Vec, ropeMaxElems)
			}
			return nil
		}}},
	}
}

// ropeIns and ropeOuts are the buffers: the gradients of the rotated q and
// k, the tables, and the gradients of q and k; ropeOperands both, in the
// kernel's parameter order.
var (
	ropeIns      = []string{"dy_q", "dy_k", "cos", "sin"}
	ropeOuts     = []string{"dq", "dk"}
	ropeOperands = append(append([]string(nil), ropeIns...), ropeOuts...)
)

func (rope) Buffers(s RopeShape) []kernels.Buffer {
	t := configs.Var("t")
	sizes := map[string]configs.Expr{
		"dy_q": t.TimesInt(s.HQ * s.D), "dq": t.TimesInt(s.HQ * s.D),
		"dy_k": t.TimesInt(s.HK * s.D), "dk": t.TimesInt(s.HK * s.D),
		"cos": t.TimesInt(s.D), "sin": t.TimesInt(s.D),
	}
	var out []kernels.Buffer
	for _, n := range ropeIns {
		out = append(out, kernels.Buffer{Name: n, DType: s.DType, Elems: sizes[n], Role: kernels.Input})
	}
	for _, n := range ropeOuts {
		out = append(out, kernels.Buffer{Name: n, DType: s.DType, Elems: sizes[n], Role: kernels.Output})
	}
	return out
}

// ropeTheta is the base of the inputs' angles (Qwen2's rope_theta).
const ropeTheta = 1e6

// Inputs: gradients uniform in [−1, 1]; the tables of positions 0…t−1 as
// Hugging Face builds them (angle = position·θ^(−2i/d) at columns i and
// i + d/2), rounded to the dtype.
func (rope) Inputs(s RopeShape, seed uint64) map[string][]float64 {
	key := variants.ShapeOf(s).Key()
	cos, sin := make([]float64, s.T*s.D), make([]float64, s.T*s.D)
	for t := range s.T {
		for i := range s.half() {
			a := float64(t) * math.Pow(ropeTheta, -2*float64(i)/float64(s.D))
			for _, c := range []int{t*s.D + i, t*s.D + i + s.half()} {
				cos[c], sin[c] = s.DType.Round(math.Cos(a)), s.DType.Round(math.Sin(a))
			}
		}
	}
	return map[string][]float64{
		"dy_q": kernels.Uniform(s.DType, s.T*s.HQ*s.D, -1, 1, seed, key+"/dy_q"),
		"dy_k": kernels.Uniform(s.DType, s.T*s.HK*s.D, -1, 1, seed, key+"/dy_k"),
		"cos":  cos, "sin": sin,
	}
}

// ExactInputs: gradients that are integers in [−8, 8] and tables whose
// entries are 0, ±½ or ±1, drawn independently for the two halves of a
// row: every product and sum is exact in f32 and every result fits the
// stored types, so the outputs equal the reference exactly, and a kernel
// that pairs a column with the wrong half of a table fails.
func (rope) ExactInputs(s RopeShape, seed uint64) (map[string][]float64, bool) {
	key := variants.ShapeOf(s).Key() + "/exact"
	steps := func(n int, lo, hi, scale float64, name string) []float64 {
		v := kernels.Uniform(dtype.F64, n, lo, hi, seed, key+"/"+name)
		for i := range v {
			v[i] = math.Floor(v[i]) * scale
		}
		return v
	}
	return map[string][]float64{
		"dy_q": steps(s.T*s.HQ*s.D, -8, 9, 1, "dy_q"),
		"dy_k": steps(s.T*s.HK*s.D, -8, 9, 1, "dy_k"),
		"cos":  steps(s.T*s.D, -2, 3, 0.5, "cos"),
		"sin":  steps(s.T*s.D, -2, 3, 0.5, "sin"),
	}, true
}

func (rope) Reference(s RopeShape, in map[string][]float64) map[string][]float64 {
	cos, sin := in["cos"], in["sin"]
	grad := func(dy []float64, heads int) []float64 {
		dx := make([]float64, len(dy))
		for t := range s.T {
			for h := range heads {
				row := (t*heads + h) * s.D
				for j := range s.half() {
					lo, hi := row+j, row+j+s.half()
					clo, chi := cos[t*s.D+j], cos[t*s.D+j+s.half()]
					slo, shi := sin[t*s.D+j], sin[t*s.D+j+s.half()]
					dx[lo] = dy[lo]*clo + dy[hi]*shi
					dx[hi] = dy[hi]*chi - dy[lo]*slo
				}
			}
		}
		return dx
	}
	return map[string][]float64{"dq": grad(in["dy_q"], s.HQ), "dk": grad(in["dy_k"], s.HK)}
}

// Cost: the gradients read and written once, the tables read once.
func (rope) Cost(s RopeShape) kernels.Cost {
	return kernels.Cost{Bytes: int64(s.T) * int64(2*(s.HQ+s.HK)+2) * int64(s.D) * int64(s.DType.Size())}
}

// Tolerance: two products summed in f32, then one rounding to the stored
// type.
func (rope) Tolerance(s RopeShape, _ string) kernels.Tolerance {
	switch s.DType {
	case dtype.F16, dtype.BF16:
		return kernels.Tolerance{Atol: 1e-4, Rtol: 2 * s.DType.Epsilon()}
	}
	return kernels.Tolerance{Atol: 1e-6, Rtol: 1e-6}
}

// ropeLane is the math of one lane of one head: dy_lo, dy_hi, cos_lo,
// cos_hi, sin_lo, sin_hi in; dx_lo, dx_hi out.
func ropeLane(k *ptx.Func, in []ptx.Reg) []ptx.Reg {
	dyLo, dyHi, cLo, cHi, sLo, sHi := in[0], in[1], in[2], in[3], in[4], in[5]
	lo := k.Fma(ptx.F32, dyHi, sHi, k.Mul(ptx.F32, dyLo, cLo))
	hi := k.Fma(ptx.F32, k.Neg(ptx.F32, dyLo), sLo, k.Mul(ptx.F32, dyHi, cHi))
	return []ptx.Reg{lo, hi}
}

// ropeHeads is the map of a unit of h heads from the map of one head:
// inputs dy_lo, dy_hi of each head, then cos_lo, cos_hi, sin_lo, sin_hi;
// outputs dx_lo, dx_hi of each head.
func ropeHeads(h int, lane mapFunc) mapFunc {
	return func(k *ptx.Func, in []ptx.Reg) []ptx.Reg {
		var out []ptx.Reg
		for j := range h {
			out = append(out, lane(k, append([]ptx.Reg{in[2*j], in[2*j+1]}, in[2*h:2*h+4]...))...)
		}
		return out
	}
}

// Emit generates one variant. A unit is vec columns of the low half of
// p.Heads consecutive heads of one token, with their partners in the high
// half: units are token-major, the token's query heads then its key
// heads. The PTX takes t as its last parameter.
func (r rope) Emit(s RopeShape, p RopeParams) (kernels.Program, error) {
	return r.emitWith(s, p, ropeLane)
}

// emitWith is Emit with the math of one head given.
func (rope) emitWith(s RopeShape, p RopeParams, lane mapFunc) (kernels.Program, error) {
	dt := s.DType
	entry := "rope_bwd_" + dt.String()
	m := ptx.NewModule()
	kn := newKernel(m, entry, dt, p.Params, 2*p.Heads+4, ropeHeads(p.Heads, lane))
	k := kn.k
	ptrs := kn.params(ropeOperands)
	t := k.LdParam(k.Param("t", ptx.U32))
	kn.setUnits(k.Mul(ptx.U32, t, ptx.Imm(s.unitsPerToken(p))))
	kn.place = ropePlacer(k, s, p, ptrs)
	kn.run(p.Grid)
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	work := configs.Var("t").TimesInt(s.unitsPerToken(p))
	return program(built.String(), entry, ropeOperands, "t", work, p.Params), nil
}

// ropePlacer places unit u: token u / P (P units per token), head group
// g and column group of the remainder; head g·H + j of the group (H =
// p.Heads) is a query head, read from dy_q and written to dq, or a key
// head, dy_k and dk. Operands: dy lo and hi of each head, cos lo, cos hi,
// sin lo, sin hi, then dx lo and hi of each head.
func ropePlacer(k *ptx.Func, s RopeShape, p RopeParams, ptrs []ptx.Reg) placer {
	dyQ, dyK, cos, sin, dq, dk := ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5]
	h, perGroup, size := p.Heads, s.half()/p.Vec, s.DType.Size()
	hiOff := int64(s.half() * size)
	return func(u ptx.Reg) func(int) ptx.Addr {
		tok := k.Div(ptx.U32, u, ptx.Imm(s.unitsPerToken(p)))
		rest := k.Sub(ptx.U32, u, k.Mul(ptx.U32, tok, ptx.Imm(s.unitsPerToken(p))))
		g := k.Div(ptx.U32, rest, ptx.Imm(perGroup))
		col := k.Mul(ptx.U32, k.Sub(ptx.U32, rest, k.Mul(ptx.U32, g, ptx.Imm(perGroup))), ptx.Imm(p.Vec))
		isK, off := make([]ptx.Reg, h), make([]ptx.Reg, h)
		for j := range h {
			hd := g
			if h > 1 {
				hd = k.Mad(ptx.U32, g, ptx.Imm(h), ptx.Imm(j))
			}
			isK[j] = k.Setp("ge", ptx.U32, hd, ptx.Imm(s.HQ))
			head := k.Sub(ptx.U32, hd, k.Selp(ptx.U32, ptx.Imm(s.HQ), ptx.Imm(0), isK[j]))
			heads := k.Selp(ptx.U32, ptx.Imm(s.HK), ptx.Imm(s.HQ), isK[j])
			row := k.Mad(ptx.U32, tok, heads, head)
			off[j] = k.MulWide(ptx.U32, k.Mad(ptx.U32, row, ptx.Imm(s.D), col), ptx.Imm(size))
		}
		tab := k.MulWide(ptx.U32, k.Mad(ptx.U32, tok, ptx.Imm(s.D), col), ptx.Imm(size))
		dy, dx := make([]ptx.Reg, h), make([]ptx.Reg, h)
		var cs, sn ptx.Reg
		return func(i int) ptx.Addr {
			var base ptx.Reg
			switch {
			case i < 2*h:
				if i%2 == 0 {
					dy[i/2] = k.Add(ptx.U64, k.Selp(ptx.U64, dyK, dyQ, isK[i/2]), off[i/2])
				}
				base = dy[i/2]
			case i < 2*h+2:
				if i == 2*h {
					cs = k.Add(ptx.U64, cos, tab)
				}
				base = cs
			case i < 2*h+4:
				if i == 2*h+2 {
					sn = k.Add(ptx.U64, sin, tab)
				}
				base = sn
			default:
				j := (i - 2*h - 4) / 2
				if i%2 == 0 {
					dx[j] = k.Add(ptx.U64, k.Selp(ptx.U64, dk, dq, isK[j]), off[j])
				}
				base = dx[j]
			}
			return ptx.At(base, int64(i%2)*hiOff)
		}
	}
}
