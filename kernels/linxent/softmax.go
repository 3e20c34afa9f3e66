package linxent

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// softmax is the kernel that takes a chunk's logits into the rows'
// running statistics: CTA r reads row r of z (ld floats, the first w the
// chunk's classes), merges its maximum into the row's mL (log₂ units),
// writes P = 2^(z·log₂e − mL) in the inputs' dtype over all ld columns
// (0 in the pad), α = 2^(mL_old − mL) for the gradient GEMM's rescale,
// s = s_old·α + ΣP, and z[label] when the label is in the chunk. The
// first chunk starts from nothing seen (no old statistics, α = 0, z[label]
// 0 unless it is in the chunk). With label smoothing it also adds the
// chunk's Σz to the row's.
type softmax struct {
	dt       dtype.DType
	w, ld    int
	first    bool
	block    int
	tm       terms
	labelOff bool // planted bug: z[label] one column late
}

func (sm softmax) entry() string {
	kind := "next"
	if sm.first {
		kind = "first"
	}
	return fmt.Sprintf("%s_softmax_%s_w%d_%v", prefix, kind, sm.w, sm.dt)
}

// The f32 constants: log₂e, ln 2 and −∞.
var (
	log2e  = gen.F32Imm(math.Log2E)
	ln2    = gen.F32Imm(math.Ln2)
	negInf = ptx.F32Imm(float32(math.Inf(-1)))
)

// chunkRow is a CTA's row of a chunk: its logits, held in registers
// (vecs float4 per thread, −∞ past the chunk's w classes), and where its
// probabilities go.
type chunkRow struct {
	k        *ptx.Func
	dt       dtype.DType
	w, ld    int
	block    int
	row, tid ptx.Reg
	zr, pr   ptx.Reg // u64: the row of z and of p
	vals     []ptx.Reg
	zs       []ptx.Reg // with keepZ: the values, 0 outside the chunk
	oks      []ptx.Reg // float4 i of the thread is in the row
}

// loadRow loads the CTA's row of z (CTA r takes row r), keeping the
// values with 0 outside the chunk too where keepZ.
func loadRow(k *ptx.Func, dt dtype.DType, w, ld, block int, z, pp ptx.Reg, keepZ bool) *chunkRow {
	c := &chunkRow{k: k, dt: dt, w: w, ld: ld, block: block, row: k.Mov(ptx.U32, ptx.CtaidX), tid: k.Mov(ptx.U32, ptx.TidX)}
	c.zr = k.Add(ptx.U64, z, k.MulWide(ptx.U32, c.row, ptx.Imm(4*ld)))
	c.pr = k.Add(ptx.U64, pp, k.MulWide(ptx.U32, c.row, ptx.Imm(ld*dt.Size())))
	nv := ld / 4
	for i := range gen.CeilDiv(nv, block) {
		col4 := c.col4(i)
		ok := k.Setp("lt", ptx.U32, col4, ptx.Imm(nv))
		c.oks = append(c.oks, ok)
		v := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, c.zr, k.MulWide(ptx.U32, col4, ptx.Imm(16))), 0), 4, ok)
		for e, x := range v {
			in := k.Setp("lt", ptx.U32, k.Mad(ptx.U32, col4, ptx.Imm(4), ptx.Imm(e)), ptx.Imm(w))
			c.vals = append(c.vals, k.Selp(ptx.F32, x, negInf, in))
			if keepZ {
				c.zs = append(c.zs, k.Selp(ptx.F32, x, ptx.F32Imm(0), in))
			}
		}
	}
	return c
}

// col4 is the index of the thread's float4 i in the row.
func (c *chunkRow) col4(i int) ptx.Reg { return c.k.Add(ptx.U32, c.tid, ptx.Imm(i*c.block)) }

// store writes f(value, class index) over the row of p for each float4
// of the thread (f32 values rounded to the dtype) and returns them.
func (c *chunkRow) store(f func(x, col ptx.Reg) ptx.Reg) []ptx.Reg {
	k := c.k
	var out []ptx.Reg
	for i, ok := range c.oks {
		col4 := c.col4(i)
		e := make([]ptx.Reg, 4)
		for j := range e {
			e[j] = f(c.vals[4*i+j], k.Mad(ptx.U32, col4, ptx.Imm(4), ptx.Imm(j)))
		}
		out = append(out, e...)
		gen.StVals(k, c.dt, ptx.At(k.Add(ptx.U64, c.pr, k.MulWide(ptx.U32, col4, ptx.Imm(4*c.dt.Size()))), 0), e, ok)
	}
	return out
}

func (sm softmax) emit(k *ptx.Func) {
	k.ReqNTid(sm.block)
	z, pp, labels, stats, alpha := gen.Param(k, "z"), gen.Param(k, "p"), gen.Param(k, "labels"), gen.Param(k, "stats"), gen.Param(k, "alpha")
	c0 := k.LdParam(k.Param("c0", ptx.U32))
	smooth := sm.tm.eps > 0
	c := loadRow(k, sm.dt, sm.w, sm.ld, sm.block, z, pp, smooth)
	red := newBlockReduce(k, c.tid, sm.block)
	mc := red.max(gen.Tree(c.vals, func(a, b ptx.Reg) ptx.Reg { return k.Max(ptx.F32, a, b) }))
	st := k.Add(ptx.U64, stats, k.MulWide(ptx.U32, c.row, ptx.Imm(4*statWords)))
	var old []ptx.Reg
	mL := k.Mul(ptx.F32, mc, log2e)
	if !sm.first {
		old = gen.LdF32(k, ptx.Global, ptx.At(st, 0), 2, ptx.Reg{})
		mL = k.Max(ptx.F32, old[0], mL)
	}
	neg := k.Neg(ptx.F32, mL)
	terms := c.store(func(x, _ ptx.Reg) ptx.Reg { return k.Ex2ApproxFtz(k.Fma(ptx.F32, x, log2e, neg)) })
	sum := red.sum(gen.SumTree(k, terms))
	zsum := k.Mov(ptx.F32, ptx.F32Imm(0))
	if smooth {
		zsum = red.sum(gen.SumTree(k, c.zs))
	}
	k.If(k.Setp("eq", ptx.U32, c.tid, ptx.Imm(0)), func() {
		sm.storeStats(k, st, alpha, labels, c.zr, c.row, c0, mL, sum, zsum, old)
	})
}

// storeStats is thread 0's part: the row's new statistics, α and
// z[label] where the label is in the chunk.
func (sm softmax) storeStats(k *ptx.Func, st, alpha, labels, zr, row, c0, mL, sum, zsum ptx.Reg, old []ptx.Reg) {
	a, s := k.Mov(ptx.F32, ptx.F32Imm(0)), sum
	zl, zs := k.Mov(ptx.F32, ptx.F32Imm(0)), zsum
	if !sm.first {
		a = k.Ex2ApproxFtz(k.Sub(ptx.F32, old[0], mL))
		s = k.Fma(ptx.F32, old[1], a, sum)
		prev := gen.LdF32(k, ptx.Global, ptx.At(st, 8), 2, ptx.Reg{})
		k.MovTo(zl, prev[0])
		zs = k.Add(ptx.F32, prev[1], zsum)
	}
	lab := k.Ld(ptx.Global, ptx.U32, 1, ptx.At(k.Add(ptx.U64, labels, k.MulWide(ptx.U32, row, ptx.Imm(sm.tm.labBytes))), 0), gen.LdNC)[0]
	rel := k.Sub(ptx.U32, lab, c0) // an ignored or earlier label wraps past w
	if sm.labelOff {
		rel = k.Add(ptx.U32, rel, ptx.Imm(1))
	}
	in := k.Setp("lt", ptx.U32, rel, ptx.Imm(sm.w))
	at := ptx.At(k.Add(ptx.U64, zr, k.MulWide(ptx.U32, rel, ptx.Imm(4))), 0)
	k.LdTo(ptx.Global, ptx.F32, []ptx.Reg{zl}, at)
	k.Guard(in, false)
	k.St(ptx.Global, ptx.F32, ptx.At(st, 0), []ptx.Reg{mL, s})
	k.St(ptx.Global, ptx.F32, ptx.At(st, 8), []ptx.Reg{zl, zs})
	k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, alpha, k.MulWide(ptx.U32, row, ptx.Imm(4))), 0), []ptx.Reg{a})
}
