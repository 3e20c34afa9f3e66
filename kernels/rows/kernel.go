package rows

import (
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Kernel is the emission state of one row kernel.
type Kernel struct {
	K   *ptx.Func
	G   Geom
	M   ptx.Reg // U32 row count: the runtime dim, the kernel's last parameter
	Tid ptx.Reg // U32 thread index
	Grp ptx.Reg // row group in the CTA
	Lt  ptx.Reg // thread in the row group
	// LaneOff is Lt·vb as u64: this thread's chunk 0 in a tile.
	LaneOff ptx.Reg
	Smem    ptx.Reg // U32 address of the dynamic shared memory
	Red     Reducer
	Ld      ptx.LdOpts // options of the loads of row data
	// Early, when set, is emitted once by ForRows and ForRowsAsync as
	// soon as the first rows' loads are issued (before the loop when each
	// iteration loads its own rows): work that can hide behind them.
	Early func()

	// lastOK guards the last chunk of a one-tile row when the row's
	// vectors do not fill the group's chunks.
	lastOK ptx.Reg
	// rowGuard: the rows being emitted may fall past m (the last CTA's);
	// lastRow is then m−1, where they are clamped.
	rowGuard bool
	lastRow  ptx.Reg
	base     ptx.Reg // first row of the group
}

// Row is one row of a batch.
type Row struct {
	Idx   ptx.Reg // U32 row index, clamped to m−1
	Off   ptx.Reg // u64 byte offset of this thread's chunk 0: idx·n·size + lt·vb
	Valid ptx.Reg // predicate: the row is < m; invalid Reg when all are
}

// Tile is one tile of a row.
type Tile struct {
	Off   ptx.Reg   // u64 byte offset of the tile; invalid Reg for a one-tile row
	OK    []ptx.Reg // per chunk: in range; invalid Reg when surely in range
	Stash ptx.Reg   // U32 address of this thread's stash slot 0 of the tile
}

// NewKernel starts a row kernel of geometry g in k: the row count
// parameter (declared after the kernel's others: its launch passes DimArg
// last), its thread layout, guards and reducer.
func NewKernel(k *ptx.Func, g Geom) *Kernel {
	rk := &Kernel{K: k, G: g, Ld: ptx.LdOpts{NC: true}}
	k.ReqNTid(g.Block)
	k.MaxNReg(g.MaxNReg)
	rk.M = k.LdParam(k.Param(Dim, ptx.U32))
	rk.Tid = k.Mov(ptx.U32, ptx.TidX)
	if g.Rows > 1 {
		rk.Grp = k.Div(ptx.U32, rk.Tid, ptx.Imm(g.TPR))
		rk.Lt = k.Sub(ptx.U32, rk.Tid, k.Mul(ptx.U32, rk.Grp, ptx.Imm(g.TPR)))
	} else {
		rk.Grp = k.Mov(ptx.U32, ptx.Imm(0))
		rk.Lt = rk.Tid
	}
	rk.LaneOff = k.MulWide(ptx.U32, rk.Lt, ptx.Imm(g.VB))
	if g.Tiles == 1 && g.NV%g.TPR != 0 {
		rk.lastOK = k.Setp("lt", ptx.U32, rk.Lt, ptx.Imm(g.NV-(g.VPT-1)*g.TPR))
	}
	if g.Smem > 0 {
		rk.Smem = k.Mov(ptx.U32, k.DynamicShared("smem", 16))
	}
	rk.Red = newReducer(rk)
	return rk
}

// ForRows emits the loop over the rows of this thread's group, in batches
// of unroll rows: load issues a batch's loads and returns the registers
// they fill, compute does the rest. With prefetch, the next batch's loads
// are issued before the current batch is computed (the registers are
// carried around the loop). The loop counter runs over immediates, so
// the loop is CTA-uniform. Early, if any, follows the first loads. The
// loop is emitted twice (splitTail): load and compute are called for
// each copy.
func (rk *Kernel) ForRows(load func(rows []Row) []ptx.Reg, compute func(rows []Row, regs []ptx.Reg)) {
	rk.splitTail(rk.setBase(), func() { rk.forRows(load, compute) })
}

// splitTail emits body twice, behind a CTA-uniform branch: for the CTAs
// whose rows are all below m, with no row guard, and for the CTA that
// holds row m−1, whose rows past m are clamped to m−1 and their stores
// predicated off (rowGuard). cta is the CTA index.
func (rk *Kernel) splitTail(cta ptx.Reg, body func()) {
	k, g := rk.K, rk.G
	fullCTAs := k.Div(ptx.U32, rk.M, ptx.Imm(g.Rows*g.RPG))
	full := k.Setp("lt", ptx.U32, cta, fullCTAs)
	k.IfElse(full, func() {
		rk.rowGuard = false
		body()
	}, func() {
		rk.rowGuard = true
		rk.lastRow = k.Sub(ptx.U32, rk.M, ptx.Imm(1))
		body()
		rk.rowGuard = false
	})
}

// forRows is one copy of ForRows' loop.
func (rk *Kernel) forRows(load func(rows []Row) []ptx.Reg, compute func(rows []Row, regs []ptx.Reg)) {
	k, g := rk.K, rk.G
	iters := g.RPG / g.Unroll
	switch {
	case iters == 1:
		rows := rk.batch(ptx.Imm(0))
		regs := load(rows)
		rk.emitEarly()
		compute(rows, regs)
	case g.Prefetch:
		cur := load(rk.batch(ptx.Imm(0)))
		rk.emitEarly()
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(iters-1), ptx.Imm(1), func(it ptx.Reg) {
			next := load(rk.batch(k.Add(ptx.U32, it, ptx.Imm(1))))
			compute(rk.batch(it), cur)
			for i := range cur {
				k.MovTo(cur[i], next[i])
			}
		})
		compute(rk.batch(ptx.Imm(iters-1)), cur)
	default:
		rk.emitEarly()
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(iters), ptx.Imm(1), func(it ptx.Reg) {
			rows := rk.batch(it)
			compute(rows, load(rows))
		})
	}
}

// batch returns the rows of batch it (unroll rows, rows·unroll apart) of
// this thread's group; setBase must have been emitted.
func (rk *Kernel) batch(it ptx.Operand) []Row {
	k, g := rk.K, rk.G
	r0 := rk.base
	switch it := it.(type) {
	case ptx.Imm:
		if it != 0 {
			r0 = k.Add(ptx.U32, rk.base, ptx.Imm(int64(it)*int64(g.Unroll*g.Rows)))
		}
	default:
		r0 = k.Mad(ptx.U32, it, ptx.Imm(g.Unroll*g.Rows), rk.base)
	}
	rows := make([]Row, g.Unroll)
	for q := range rows {
		r := r0
		if q > 0 {
			r = k.Add(ptx.U32, r0, ptx.Imm(q*g.Rows))
		}
		if rk.rowGuard {
			rows[q].Valid = k.Setp("lt", ptx.U32, r, rk.M)
			r = k.Min(ptx.U32, r, rk.lastRow)
		}
		rows[q].Idx = r
		rows[q].Off = k.Add(ptx.U64, k.MulWide(ptx.U32, r, ptx.Imm(g.N*g.DType.Size())), rk.LaneOff)
	}
	return rows
}

// emitEarly emits Early, if any.
func (rk *Kernel) emitEarly() {
	if rk.Early != nil {
		rk.Early()
	}
}

// setBase emits the group's first row, where batch counts from, and
// returns the CTA index.
func (rk *Kernel) setBase() ptx.Reg {
	k, g := rk.K, rk.G
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	rk.base = k.Mad(ptx.U32, cta, ptx.Imm(g.Rows*g.RPG), rk.Grp)
	return cta
}

// ForRowsAsync is ForRows for store=async (one row per batch): every row
// of the group is copied into this thread's stash with cp.async first,
// one commit group per row, so that all rpg rows are in flight at once;
// issue(r, i) emits row i's copies and returns what it loads into
// registers itself. Early follows. Row i then waits for its own group
// only (cp.async.wait_group rpg−1−i), and fetch(r, i, held) reads it back
// for compute. Each thread reads back only what it copied, so no barrier
// is needed. Like ForRows, it emits its rows twice (splitTail).
func (rk *Kernel) ForRowsAsync(issue func(r Row, i int) []ptx.Reg, fetch func(r Row, i int, held []ptx.Reg) []ptx.Reg, compute func(rows []Row, regs []ptx.Reg)) {
	rk.splitTail(rk.setBase(), func() { rk.forRowsAsync(issue, fetch, compute) })
}

// forRowsAsync is one copy of ForRowsAsync's rows.
func (rk *Kernel) forRowsAsync(issue func(r Row, i int) []ptx.Reg, fetch func(r Row, i int, held []ptx.Reg) []ptx.Reg, compute func(rows []Row, regs []ptx.Reg)) {
	k, g := rk.K, rk.G
	rows := make([]Row, g.RPG)
	held := make([][]ptx.Reg, g.RPG)
	for i := range rows {
		rows[i] = rk.batch(ptx.Imm(i))[0]
		held[i] = issue(rows[i], i)
		k.CpAsyncCommit()
	}
	rk.emitEarly()
	for i, r := range rows {
		k.CpAsyncWait(g.RPG - 1 - i)
		compute(rows[i:i+1], fetch(r, i, held[i]))
	}
}
