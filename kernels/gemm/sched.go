package gemm

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// tile is the work of one CTA (or one turn of a persistent CTA): the
// first row and column of C it computes and its split of the reduction,
// k-tiles kt0 up to kt0+nk; with stream-K also the tile's linear index.
type tile struct {
	row0, col0, split ptx.Reg // u32
	kt0, nk           ptx.Reg // u32
	index             ptx.Reg // u32, stream-K only
}

// tileOf maps the linear tile index t (u32) to its tile among the sizes
// sz: the split is the outermost index (reduce=dsmem: the innermost, so
// that a cluster holds one tile's splits); within a split, tiles go down
// the rows (order m), along the columns (order n) or in groups of
// groupRows tile rows walked column by column (grouped).
func tileOf(k *ptx.Func, p Params, sz sizes, t ptx.Reg) tile {
	var out tile
	switch {
	case p.Reduce == ReduceDSMEM:
		// a tile's splits are consecutive: one cluster
		tt := k.Div(ptx.U32, t, ptx.Imm(p.SplitK))
		out.split = k.Sub(ptx.U32, t, k.Mul(ptx.U32, tt, ptx.Imm(p.SplitK)))
		t = tt
	case sz.tiles.runtime() && p.SplitK == 1:
		out.split = k.Mov(ptx.U32, ptx.Imm(0)) // t < tiles
	default:
		out.split = k.Div(ptx.U32, t, sz.tiles.op())
		t = k.Sub(ptx.U32, t, k.Mul(ptx.U32, out.split, sz.tiles.op()))
	}
	out.row0, out.col0 = tileCorner(k, p, p.Order, t, sz.tr, sz.tc)
	kt := sz.kt.op()
	out.kt0 = k.Div(ptx.U32, k.Mul(ptx.U32, out.split, kt), ptx.Imm(p.SplitK))
	end := k.Div(ptx.U32, k.Mad(ptx.U32, out.split, kt, kt), ptx.Imm(p.SplitK))
	out.nk = k.Sub(ptx.U32, end, out.kt0)
	return out
}

// tileCorner is the first row and column of C of the tile at index t of
// order o in a grid of tr×tc tiles.
func tileCorner(k *ptx.Func, p Params, o Order, t ptx.Reg, tr, tc ext) (row0, col0 ptx.Reg) {
	var r, c ptx.Reg
	switch o {
	case OrderM:
		r, c = hopper.DownRows(k, t, tr.op())
	case OrderN:
		r, c = hopper.AlongCols(k, t, tc.op())
	default:
		r, c = hopper.Grouped(k, t, tr.op(), tc.v, groupRows)
	}
	return k.Mul(ptx.U32, r, ptx.Imm(p.BM)), k.Mul(ptx.U32, c, ptx.Imm(p.BN))
}

// tileOrderGo is tileOf in Go, for tests: the tile row, column and split
// of linear index t.
func tileOrderGo(g problem, p Params, t int) (r, c, split int) {
	tr, tc := gen.CeilDiv(g.r, p.BM*p.Cluster)*p.Cluster, tilesC(g, p)
	n := tr * tc
	if p.Reduce == ReduceDSMEM {
		split, t = t%p.SplitK, t/p.SplitK
	} else {
		split, t = t/n, t%n
	}
	switch p.Order {
	case OrderM:
		return t % tr, t / tr, split
	case OrderN:
		return t / tc, t % tc, split
	}
	per := groupRows * tc
	first := t / per * groupRows
	size := min(tr-first, groupRows)
	in := t % per
	return first + in%size, in / size, split
}
