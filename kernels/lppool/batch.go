package lppool

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The batch dim n is the family's runtime dim: every kernel takes it as
// its last parameter, a u32, and derives from it every count that
// depends on it; c, l and the pooling geometry stay immediates. A guard
// is emitted wherever some value of n needs one, chosen from the baked
// dims only.
const batchDim = "n"

// batchArg is the launch argument of the parameter batchParam declares.
var batchArg = kernels.Arg{Scalar: configs.Var(batchDim), Type: configs.U32}

// batchParam declares a kernel's batch parameter; declare it after the
// pointers, as the launches pass batchArg last.
func batchParam(k *ptx.Func) ptx.Sym { return k.Param(batchDim, ptx.U32) }

// batchTimes loads the batch parameter and returns n·per.
func batchTimes(k *ptx.Func, n ptx.Sym, per int) ptx.Reg {
	return k.Mul(ptx.U32, k.LdParam(n), ptx.Imm(per))
}

// batchElems is n·per elements, as a buffer size.
func batchElems(per int) configs.Expr { return configs.Var(batchDim).TimesInt(per) }

// batchGrid is the grid of ⌈n·per / perCTA⌉ CTAs.
func batchGrid(per, perCTA int) [3]configs.Expr {
	return [3]configs.Expr{configs.CeilDiv(batchElems(per), configs.Int(perCTA)), configs.Int(1), configs.Int(1)}
}

// itemGrid is the flat index space of a main kernel: n·per items (units
// or groups), chunk = block·ept per CTA, item j of a thread at
// first + j·block.
type itemGrid struct {
	first, tid   ptx.Reg
	ctaLeft      ptx.Reg // n·per − cta·chunk as s32; invalid when every n fills every chunk
	block, chunk int
}

// newItemGrid emits a thread's first item and, unless per is a multiple
// of chunk (then n·per is, for every n), the items left from its CTA's
// first, which tell a partial chunk.
func newItemGrid(k *ptx.Func, n ptx.Sym, per, block, ept int) itemGrid {
	ig := itemGrid{block: block, chunk: block * ept}
	var cta ptx.Reg
	ig.first, ig.tid, cta = firstItem(k, ig.chunk)
	if per%ig.chunk != 0 {
		ig.ctaLeft = k.Mad(ptx.S32, cta, ptx.Imm(-ig.chunk), batchTimes(k, n, per))
	}
	return ig
}

// items gives a thread's j-th item and the predicate that it exists
// (invalid: always).
type items func(j int) (idx, ok ptx.Reg)

// each emits body for a CTA whose chunk is whole, with items that need no
// guard. When some n leaves the last chunk partial, that body runs behind
// a branch uniform in the CTA, and body is emitted once more for the
// partial chunk, with items that exist iff the items left from the
// thread's first exceed j·block: compares with immediates, as a bound in a
// register (item < n·per) costs registers (ptxas spilled scatter kernels
// of ept=4 with it).
func (ig itemGrid) each(k *ptx.Func, body func(items)) {
	at := func(j int) ptx.Reg {
		if j == 0 {
			return ig.first
		}
		return k.Add(ptx.U32, ig.first, ptx.Imm(j*ig.block))
	}
	whole := func(j int) (ptx.Reg, ptx.Reg) { return at(j), ptx.Reg{} }
	if !ig.ctaLeft.Valid() {
		body(whole)
		return
	}
	k.IfElse(k.Setp("ge", ptx.S32, ig.ctaLeft, ptx.Imm(ig.chunk)), func() { body(whole) }, func() {
		left := k.Sub(ptx.S32, ig.ctaLeft, ig.tid)
		body(func(j int) (ptx.Reg, ptx.Reg) { return at(j), k.Setp("gt", ptx.S32, left, ptx.Imm(j*ig.block)) })
	})
}

// firstItem returns the index of a thread's first item, cta·chunk + tid,
// and tid and cta.
func firstItem(k *ptx.Func, chunk int) (first, tid, cta ptx.Reg) {
	tid = k.Mov(ptx.U32, ptx.TidX)
	cta = k.Mov(ptx.U32, ptx.CtaidX)
	return k.Mad(ptx.U32, cta, ptx.Imm(chunk), tid), tid, cta
}

// quads is the index space of the zeroing and converting kernels: thread
// u = cta·block + tid owns items [4u, 4u+4) of n·per. ok says the quad is
// whole (invalid: every quad of every n is whole and inside the grid).
// When per is no multiple of 4, thread last = ⌊n·per/4⌋ owns the partial
// quad of rem = n·per mod 4 items.
type quads struct {
	k         *ptx.Func
	u, ok     ptx.Reg
	last, rem ptx.Reg // invalid when per%4 == 0
	perCTA    int
}

func newQuads(k *ptx.Func, n ptx.Sym, per, block int) quads {
	u, _, _ := firstItem(k, block)
	q := quads{k: k, u: u}
	switch {
	case per%4 != 0:
		total := batchTimes(k, n, per)
		q.last = k.Shr(ptx.U32, total, ptx.Imm(2))
		q.rem = k.And(ptx.U32, total, ptx.Imm(3))
		q.ok = k.Setp("lt", ptx.U32, q.u, q.last)
	case (per/4)%block != 0:
		q.ok = k.Setp("lt", ptx.U32, q.u, batchTimes(k, n, per/4))
	}
	return q
}

// tail calls item(i, ok) for i < 3 inside the thread of the partial
// quad, ok saying that item 4u+i exists; nothing when every quad is
// whole.
func (q quads) tail(item func(i int, ok ptx.Reg)) {
	if !q.last.Valid() {
		return
	}
	k := q.k
	k.If(k.Setp("eq", ptx.U32, q.u, q.last), func() {
		for i := range 3 {
			item(i, k.Setp("gt", ptx.U32, q.rem, ptx.Imm(i)))
		}
	})
}
