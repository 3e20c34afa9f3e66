package gemm

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// M at run time (the package doc says what depends on it). Kernels
// compute with extents as ext values: an immediate where the extent is
// not M, so that the PTX computes with constants what it did when M was
// one too, and a register derived from the parameter m where it is.
// Launches and buffers use the same sizes as expressions of m
// (problem.rExpr, lExpr; tileRowsExpr and its kin). Tile rows are
// rounded up to whole clusters: a cluster's CTAs take consecutive tile
// rows of one column, so where M leaves an odd tile row the grid gets one
// past C, whose CTAs run the k-loop for their cluster (their B share or
// multicast, A zero-filled by TMA) and store nothing (TMA clips the box,
// the direct epilogue's row bounds mask it).

// tokenDim is the runtime dim of every program: M.
const tokenDim = "m"

// mParam declares a kernel's m parameter.
func mParam(k *ptx.Func) ptx.Sym { return k.Param(tokenDim, ptx.U32) }

// tileRowsExpr is the grid's tile rows, whole clusters of them, as a
// launch expression; tilesExpr its tiles; kTilesExpr the reduction's
// k-tiles.
func tileRowsExpr(g problem, p Params) configs.Expr {
	return configs.CeilDiv(g.rExpr(), configs.Int(p.BM*p.Cluster)).TimesInt(p.Cluster)
}
func tilesExpr(g problem, p Params) configs.Expr { return tileRowsExpr(g, p).TimesInt(tilesC(g, p)) }
func kTilesExpr(g problem, p Params) configs.Expr {
	kt := configs.CeilDiv(g.lExpr(), configs.Int(p.BK))
	if g.lora > 0 {
		return kt.PlusInt(g.loraTiles(p.BK))
	}
	return kt
}

// ext is a u32 extent as a kernel computes with it: the immediate v, or,
// when reg is valid, a register derived from the parameter m. Its
// operations fold immediates in Go, so an extent that does not depend on
// M emits what it did as a constant.
type ext struct {
	v   int
	reg ptx.Reg
}

func immExt(v int) ext { return ext{v: v} }

// runtime reports whether the extent is a register.
func (e ext) runtime() bool { return e.reg.Valid() }

// op is the extent as an operand.
func (e ext) op() ptx.Operand {
	if e.runtime() {
		return e.reg
	}
	return ptx.Imm(e.v)
}

// ceilDiv is ⌈e/d⌉.
func (e ext) ceilDiv(k *ptx.Func, d int) ext {
	if !e.runtime() {
		return immExt(gen.CeilDiv(e.v, d))
	}
	if d == 1 {
		return e
	}
	n := k.Add(ptx.U32, e.reg, ptx.Imm(d-1))
	if d&(d-1) == 0 {
		return ext{reg: k.Shr(ptx.U32, n, ptx.Imm(gen.Log2(d)))}
	}
	return ext{reg: k.Div(ptx.U32, n, ptx.Imm(d))}
}

// times is e·n.
func (e ext) times(k *ptx.Func, n int) ext {
	if !e.runtime() {
		return immExt(e.v * n)
	}
	if n == 1 {
		return e
	}
	return ext{reg: k.Mul(ptx.U32, e.reg, ptx.Imm(n))}
}

// mulExt is a·b.
func mulExt(k *ptx.Func, a, b ext) ext {
	switch {
	case !a.runtime():
		return b.times(k, a.v)
	case !b.runtime():
		return a.times(k, b.v)
	}
	return ext{reg: k.Mul(ptx.U32, a.reg, b.reg)}
}

// sizes are a variant's extents and tile counts as its kernel computes
// with them.
type sizes struct {
	r, l   ext // rows of C, reduction length
	tr, tc ext // tile rows (whole clusters of them) and tile columns
	tiles  ext // tr·tc
	kt     ext // k-tiles of the reduction
}

// rowsExt is g's r, read from parameter m where it is M.
func rowsExt(k *ptx.Func, g problem, m ptx.Sym) ext {
	if g.mRows {
		return ext{reg: k.LdParam(m)}
	}
	return immExt(g.r)
}

// sizesOf computes the sizes of p on g with M read from parameter m.
func sizesOf(k *ptx.Func, g problem, p Params, m ptx.Sym) sizes {
	mv := ext{reg: k.LdParam(m)}
	sz := sizes{r: immExt(g.r), l: immExt(g.l), tc: immExt(tilesC(g, p))}
	if g.mRows {
		sz.r = mv
	} else {
		sz.l = mv
	}
	sz.tr = sz.r.ceilDiv(k, p.BM*p.Cluster).times(k, p.Cluster)
	sz.tiles = mulExt(k, sz.tr, sz.tc)
	sz.kt = sz.l.ceilDiv(k, p.BK)
	if g.lora > 0 { // dx: l is not M
		sz.kt = immExt(sz.kt.v + g.loraTiles(p.BK))
	}
	return sz
}

// bound tests a u32 index x (below 2³¹) against an extent e: below(d)
// is x + d < e. A runtime e costs one subtraction for all the tests.
type bound struct {
	k    *ptx.Func
	x    ptx.Reg
	e    ext
	left ptx.Reg // e − x, signed
}

func newBound(k *ptx.Func, x ptx.Reg, e ext) *bound {
	b := &bound{k: k, x: x, e: e}
	if e.runtime() {
		b.left = k.Sub(ptx.U32, e.reg, x)
	}
	return b
}

// leftBound is the bound of the index e − left against a runtime e.
func leftBound(k *ptx.Func, e ext, left ptx.Reg) *bound { return &bound{k: k, e: e, left: left} }

func (b *bound) below(d int) ptx.Reg {
	if !b.e.runtime() {
		return b.k.Setp("lt", ptx.S32, b.x, ptx.Imm(b.e.v-d))
	}
	return b.k.Setp("gt", ptx.S32, b.left, ptx.Imm(d))
}

// splitSlice is c advanced to split's slice of a split-K workspace of
// r×cols f32 (64-bit: the slices of a runtime r may pass 2³² bytes).
func splitSlice(k *ptx.Func, c, split ptx.Reg, r ext, cols int) ptx.Reg {
	if !r.runtime() {
		return k.Add(ptx.U64, c, k.MulWide(ptx.U32, k.Mul(ptx.U32, split, ptx.Imm(r.v*cols)), ptx.Imm(4)))
	}
	elems := k.MulWide(ptx.U32, split, r.times(k, cols).reg)
	return k.Add(ptx.U64, c, k.Shl(ptx.U64, elems, ptx.Imm(2)))
}
