package kernels

// Row families: kernels over an [m × n] matrix whose outputs need one or
// two sums over each row (softmax_bwd, rmsnorm_bwd, layernorm_bwd). This
// file holds what they share: the work split and its parameter axes, the
// row and tile loops (vector loads and stores are in vecio.go), the row reduction (warp
// butterflies, then shared memory across the warps of a row), the
// shared-memory stash, shape parsing and tolerance helpers.
//
// Work split. A row is cut into vectors of vec elements (16 bytes at
// most; vec divides n so that every row starts aligned). A row group of
// tpr threads handles one row at a time; thread lt of the group takes
// vectors lt, lt+tpr, …, lt+(vpt−1)·tpr of each tile (consecutive lanes
// read consecutive vectors: coalesced). tpr is derived from vpt, the
// vectors per thread: ⌈n/vec/vpt⌉ rounded up to a power of two (at most 32,
// at least the family's minimum) or to whole warps above 32, at most 1024;
// a vpt that leaves a whole chunk idle is not offered, so every point of
// the space is distinct. A row longer than 1024·vpt vectors is walked in
// tiles (softmax only). A CTA holds `rows` row groups side by side and
// each group handles rpg rows one after the other, `unroll` of them at a
// time with all their loads issued before any arithmetic, or (prefetch)
// software-pipelined: the next row's loads are issued before this row's
// reduction and stores, so that a group always has a row in flight;
// CTAs = ⌈m/(rows·rpg)⌉, at least min(128, ⌈m/16⌉) so that the SMs fill. The rows past m of the last CTA are clamped to row m−1
// and their stores (and column sums) are predicated off, so that control
// flow stays CTA-uniform: every bar.sync and every shfl.sync is reached by
// all threads of the CTA (warp), with full masks, and every loop counts
// over immediates.
//
// Row storage (axis store): regs keeps the row's vectors in registers
// between the reduction and the output pass (one pass over global
// memory); reread loads them again from global memory in the second pass
// (they are in L1/L2 by then), which keeps registers low and allows rows
// of any length; smem keeps the raw vectors in a thread-private slice of
// dynamic shared memory (each thread reads back only what it wrote, so no
// barrier is needed for the stash); async (the norms) copies every row of
// the group into such a slice with cp.async as the kernel starts, one
// commit group per row, and row i waits only for its own group
// (cp.async.wait_group rpg−1−i). A CTA then has rows·rpg rows in flight,
// up to 227 KiB of them (one CTA per SM), where registers hold two rows per
// group at most; on the H200 that took LayerNorm f32 [2048 × 1536] from
// 16.77 to 16.26 µs in one session (testdata/research/h200-async-only.log).
//
// Reduction. Within a warp a butterfly of shfl.sync.bfly over the tpr
// (≤ 32) lanes of the group leaves the sum in every lane. For tpr > 32
// lane 0 of each warp writes its sum to a shared slot, one bar.sync, and
// every thread adds the warps' slots in the same order (so all threads of
// a row agree bit for bit). Slots are double-buffered, so one barrier per
// row batch suffices: a slot is written again only two batches later,
// after every thread has passed the barrier that follows its reads.
//
// Buffers of every variant have the same roles whatever the params, since
// Buffers does not see them; see rmsnorm.go for the column sums.

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// maxRowSmem bounds the dynamic shared memory of a row variant: two CTAs
// fit in an SM of sm_80 (164 KiB) and sm_90 (228 KiB), and a launch above
// 48 KiB only needs the runner to raise the kernel's limit, which it does.
const maxRowSmem = 96 << 10

// maxAsyncSmem bounds the dynamic shared memory of a store=async variant,
// which trades occupancy for rows in flight: one CTA in an SM of sm_90
// (227 KiB of the 228 may go to one CTA).
const maxAsyncSmem = 227 << 10

// maxHeld bounds the f32 row values a thread holds at once (vpt·vec per
// tensor, two tensors, unroll rows): beyond it ptxas spills.
const maxHeld = 64

// capHeld is the fewest row values held in registers (store=regs) for
// which a register cap is tried: lighter variants stay far below any cap.
const capHeld = 32

// minCTAs is the fewest CTAs offered when the rows allow it (and at
// least m/16): fewer leave SMs of an H200 (132) or A100 (108) idle.
const minCTAs = 128

// maxTPR is the most threads a row group may have.
const maxTPR = 1024

// rowCfg describes one row family's variant space.
type rowCfg struct {
	name     string
	minTPR   int   // fewest threads per row: 4 (softmax) or 32 (norms)
	rowsVals []int // values of the rows axis
	rpgVals  []int // values of the rpg axis
	blockMax int   // largest CTA (a row group alone may be larger)
	tiles    bool  // rows longer than one tile are allowed (reread, smem)
	narrow   bool  // also offer half the widest vector width (store=regs)
	sums     int   // values reduced per row (1 softmax and rms, 2 layer)
	cols     int   // column sums kept per thread (0 softmax, 1 rms, 2 layer)
	async    bool  // store=async is offered (the norms)
}

// rowGeom is the work split of one variant, read from its params.
type rowGeom struct {
	m, n    int
	dt      dtype.DType
	vec     int  // elements per vector access
	vb      int  // bytes per vector
	nv      int  // vectors per row: n/vec
	vpt     int  // vectors per thread per tile
	tpr     int  // threads per row group
	rows    int  // row groups per CTA
	block   int  // threads per CTA
	rpg     int  // rows per group
	unroll  int  // rows loaded together (regs)
	pref    bool // prefetch: the next batch's loads are issued before this batch's reduction
	tiles   int  // tiles per row
	grid    int  // CTAs
	store   string
	maxnreg int
	dgamma  string // norms: atomic, partial or ticket
	pdl     bool   // norms: the second launch is dependent (Launch.Dependent)

	// Dynamic shared memory layout (byte offsets, 16-byte aligned).
	redOff, redBuf     int // reduction slots: two buffers of redBuf bytes
	stashOff, stashLen int // stash (smem)
	combOff, combLen   int // column sums of the row groups (norms, rows > 1)
	smem               int // total
	nq                 int // values reduced per row batch
	wp                 int // reduction slots per value: warps per row, padded to 4
}

// vecValues are the vector widths offered for dt: up to 16 bytes.
func vecValues(dt dtype.DType) []int {
	if dt.Size() == 2 {
		return []int{1, 2, 4, 8}
	}
	return []int{1, 2, 4}
}

// widestVec is the widest offered vector width that divides n.
func widestVec(dt dtype.DType, n int) int {
	w := 1
	for _, v := range vecValues(dt) {
		if n%v == 0 {
			w = v
		}
	}
	return w
}

// tprFor derives the threads per row and tiles per row from the vectors
// per row and per thread.
func tprFor(nv, vpt, minTPR int) (tpr, tiles int) {
	t := gen.CeilDiv(nv, vpt)
	switch {
	case t > maxTPR:
		tpr = maxTPR
	case t <= 32:
		tpr = max(minTPR, gen.Pow2Ceil(t))
	default:
		tpr = gen.CeilDiv(t, 32) * 32
	}
	return tpr, gen.CeilDiv(nv, tpr*vpt)
}

// axes returns the row axes of a shape (the family appends its own).
func (c *rowCfg) axes(s variants.Shape) []variants.Axis {
	return []variants.Axis{
		variants.IntAxis("vec", "elements per vector access: the widest dividing n (softmax: or half that, with store=regs)", vecValues(s.DType)...),
		variants.IntAxis("vpt", "vector accesses per thread per row tile; threads per row = ⌈n/vec/vpt⌉ rounded to a power of two ≤ 32 or to whole warps", 1, 2, 3, 4, 6, 8, 12, 16),
		variants.IntAxis("rows", "row groups per CTA (rows handled side by side)", c.rowsVals...),
		variants.IntAxis("rpg", "rows each row group handles one after another (CTAs = ⌈m/(rows·rpg)⌉)", c.rpgVals...),
		variants.IntAxis("unroll", "rows loaded together before any arithmetic (store=regs)", 1, 2),
		variants.IntAxis("prefetch", "1: load the group's next row before reducing this one (store=regs, software pipelined)", 0, 1),
		c.storeAxis(),
	}
}

func (c *rowCfg) storeAxis() variants.Axis {
	a := variants.Axis{Name: "store", Values: []string{"regs", "reread", "smem"}, Doc: "row kept in registers, re-read from global memory, or stashed in shared memory between the reduction and the output pass"}
	if c.async {
		a.Values = append(a.Values, "async")
		a.Doc += "; or every row of the group copied to shared memory with cp.async as the kernel starts, all in flight at once"
	}
	return a
}

// geom reads the row params of p for shape s.
func (c *rowCfg) geom(s variants.Shape, p variants.Params) (rowGeom, error) {
	r := variants.NewReader(p)
	g := rowGeom{m: s.Get("m"), n: s.Get("n"), dt: s.DType,
		vec: r.Int("vec"), vpt: r.Int("vpt"), rows: r.Int("rows"), rpg: r.Int("rpg"),
		unroll: r.Int("unroll"), store: r.String("store"), maxnreg: r.Int("maxnreg"), pref: r.Int("prefetch") == 1}
	if c.cols > 0 {
		g.dgamma = r.String("dgamma")
		g.pdl = r.Int("pdl") == 1
	}
	if err := r.Err(); err != nil {
		return g, err
	}
	if g.vec <= 0 || g.vpt <= 0 || g.rows <= 0 || g.rpg <= 0 || g.unroll <= 0 || g.m <= 0 || g.n <= 0 {
		return g, fmt.Errorf("non-positive size in %s", p)
	}
	g.vb = g.vec * g.dt.Size()
	g.nv = g.n / g.vec
	g.tpr, g.tiles = tprFor(g.nv, g.vpt, c.minTPR)
	g.block = g.tpr * g.rows
	g.grid = gen.CeilDiv(g.m, g.rows*g.rpg)
	g.nq = c.sums * g.unroll
	if w := g.tpr / 32; w > 1 {
		g.wp = (w + 3) &^ 3
		g.redBuf = g.rows * g.nq * g.wp * 4
	}
	g.redOff = 0
	g.stashOff = gen.Align16(2 * g.redBuf)
	switch g.store {
	case "smem":
		g.stashLen = g.tiles * g.vpt * 2 * g.block * g.vb
	case "async":
		g.stashLen = g.rpg * g.vpt * 2 * g.block * g.vb
	}
	g.combOff = gen.Align16(g.stashOff + g.stashLen)
	if g.store == "async" {
		// The rows are all read back before the column sums are combined:
		// the combination reuses the stash (after a barrier).
		g.combOff = g.stashOff
	}
	if c.cols > 0 && g.rows > 1 {
		g.combLen = g.rows * c.cols * g.n * 4
	}
	g.smem = gen.Align16(max(g.stashOff+g.stashLen, g.combOff+g.combLen))
	return g, nil
}

// checkedGeom checks p against f's space at s and returns its geometry;
// errors name the family.
func (c *rowCfg) checkedGeom(f Family, s variants.Shape, p variants.Params) (rowGeom, error) {
	if err := f.Space(s).Check(p); err != nil {
		return rowGeom{}, errorf(f, "%w", err)
	}
	g, err := c.geom(s, p)
	if err != nil {
		return rowGeom{}, errorf(f, "%w", err)
	}
	return g, nil
}

// constraints are the rules every row family shares.
func (c *rowCfg) constraints(s variants.Shape) []variants.Constraint {
	rule := func(name string, ok func(g rowGeom) error) variants.Constraint {
		return variants.Constraint{Name: name, OK: func(p variants.Params) error {
			g, err := c.geom(s, p)
			if err != nil {
				return err
			}
			return ok(g)
		}}
	}
	widest := widestVec(s.DType, s.Get("n"))
	return []variants.Constraint{
		rule("vec divides n", func(g rowGeom) error {
			if g.n%g.vec != 0 {
				return fmt.Errorf("vec=%d does not divide n=%d", g.vec, g.n)
			}
			if 2*g.vec < widest || g.vec < widest && !c.narrow {
				return fmt.Errorf("vec=%d is narrower than the widest width dividing n (%d)%s", g.vec, widest, map[bool]string{true: " by more than half", false: ""}[c.narrow])
			}
			if g.vec < widest && g.store != "regs" {
				return fmt.Errorf("vec=%d narrower than %d with store=%s (narrow vectors only hold more of a row in registers)", g.vec, widest, g.store)
			}
			return nil
		}),
		rule("vpt leaves no chunk idle", func(g rowGeom) error {
			if g.tiles == 1 && gen.CeilDiv(g.nv, g.tpr) != g.vpt {
				return fmt.Errorf("vpt=%d with %d threads per row: %d vectors need only %d per thread", g.vpt, g.tpr, g.nv, gen.CeilDiv(g.nv, g.tpr))
			}
			if g.tiles > 1 && !c.tiles {
				return fmt.Errorf("a row of %d vectors needs %d tiles of %d×%d; %s needs it in one", g.nv, g.tiles, g.tpr, g.vpt, c.name)
			}
			if g.tiles > 1 && (g.store == "regs" || g.store == "async") {
				return fmt.Errorf("store=%s holds the row in one tile; %d vectors need %d tiles of %d×%d", g.store, g.nv, g.tiles, g.tpr, g.vpt)
			}
			return nil
		}),
		rule("block size", func(g rowGeom) error {
			hi := max(c.blockMax, g.tpr)
			lo := min(64, max(32, g.tpr))
			if g.block < lo || g.block > hi || g.block%32 != 0 {
				return fmt.Errorf("%d rows × %d threads per row = %d threads per CTA (want %d..%d, whole warps)", g.rows, g.tpr, g.block, lo, hi)
			}
			return nil
		}),
		rule("registers held", func(g rowGeom) error {
			held := 2 * g.vpt * g.vec
			if g.store == "regs" {
				held *= g.unroll
			}
			if g.pref {
				held *= 2
			}
			if held > maxHeld {
				return fmt.Errorf("%d row values per thread held at once (at most %d)", held, maxHeld)
			}
			if g.maxnreg > 0 && (g.store != "regs" || held < capHeld) {
				return fmt.Errorf("maxnreg=%d for a variant holding %d row values (a cap is tried from %d held in registers)", g.maxnreg, held, capHeld)
			}
			return nil
		}),
		rule("unroll", func(g rowGeom) error {
			if g.unroll > 1 && g.store != "regs" {
				return fmt.Errorf("unroll=%d with store=%s (only regs unrolls rows)", g.unroll, g.store)
			}
			if g.rpg%g.unroll != 0 {
				return fmt.Errorf("unroll=%d does not divide rpg=%d", g.unroll, g.rpg)
			}
			if g.pref && (g.store != "regs" || g.unroll != 1 || g.rpg < 2) {
				return fmt.Errorf("prefetch with store=%s, unroll=%d, rpg=%d (it pipelines single rows held in registers, two or more per group)", g.store, g.unroll, g.rpg)
			}
			return nil
		}),
		rule("enough CTAs", func(g rowGeom) error {
			if want := min(minCTAs, gen.CeilDiv(g.m, 16)); g.grid < want {
				return fmt.Errorf("%d rows × %d per group: %d CTAs for %d rows (want at least %d)", g.rows, g.rpg, g.grid, g.m, want)
			}
			return nil
		}),
		rule("shared memory", func(g rowGeom) error {
			if g.store == "async" && g.smem > maxAsyncSmem {
				return fmt.Errorf("%d bytes of shared memory for %d rows in flight per group (at most %d)", g.smem, g.rpg, maxAsyncSmem)
			}
			if g.store != "async" && g.smem > maxRowSmem {
				return fmt.Errorf("%d bytes of shared memory (at most %d)", g.smem, maxRowSmem)
			}
			return nil
		}),
		rule("cp.async sizes", func(g rowGeom) error {
			if g.store == "async" && g.vb < 4 {
				return fmt.Errorf("store=async with %d-byte vectors (cp.async copies 4, 8 or 16 bytes)", g.vb)
			}
			return nil
		}),
	}
}

// parseRowShape accepts m=M,n=N.
func parseRowShape(f Family, sp variants.Spec, dt dtype.DType) (variants.Shape, error) {
	m, okM := sp.Get("m")
	n, okN := sp.Get("n")
	if !okM || !okN || len(sp.Dims) != 2 {
		return variants.Shape{}, fmt.Errorf("%s takes m=M,n=N: rows and columns (got %v)", f.Name(), dimNames(sp))
	}
	if err := checkDType(f, dt); err != nil {
		return variants.Shape{}, err
	}
	for _, d := range []variants.Dim{{Name: "m", Value: m}, {Name: "n", Value: n}} {
		if d.Value <= 0 || d.Value > gen.MaxElems {
			return variants.Shape{}, fmt.Errorf("%s: %s=%d must be in 1..%d", f.Name(), d.Name, d.Value, gen.MaxElems)
		}
	}
	if m*n > gen.MaxElems {
		return variants.Shape{}, fmt.Errorf("%s: %d elements is more than %d", f.Name(), m*n, gen.MaxElems)
	}
	return variants.Shape{Dims: []variants.Dim{{Name: "m", Value: m}, {Name: "n", Value: n}}, DType: dt}, nil
}

// rowShapes returns [m × n] in each dtype of dts the family supports.
func rowShapes(f Family, m, n int, dts []dtype.DType) []variants.Shape {
	var out []variants.Shape
	seen := map[string]bool{}
	if m <= 0 || n <= 0 {
		return nil
	}
	for _, dt := range dts {
		if checkDType(f, dt) != nil {
			continue
		}
		s := variants.Shape{Dims: []variants.Dim{{Name: "m", Value: m}, {Name: "n", Value: n}}, DType: dt}
		if !seen[s.Key()] {
			seen[s.Key()] = true
			out = append(out, s)
		}
	}
	return out
}

// errorf returns an error that starts with the family's name.
func errorf(f Family, format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{f.Name()}, args...)...)
}

// rowKernel is the emission state of one row kernel.
type rowKernel struct {
	k   *ptx.Func
	g   rowGeom
	tid ptx.Reg // U32
	grp ptx.Reg // row group in the CTA
	lt  ptx.Reg // thread in the row group
	// laneOff is lt·vb as u64: this thread's chunk 0 in a tile.
	laneOff ptx.Reg
	smem    ptx.Reg // U32 address of the dynamic shared memory
	// lastOK guards the last chunk of a one-tile row when the row's
	// vectors do not fill the group's chunks.
	lastOK ptx.Reg
	// rowGuard: some rows of the grid fall past m.
	rowGuard bool
	red      reducer
	ld       ptx.LdOpts
	base     ptx.Reg // first row of the group (batch)
	// early, when set, is emitted once by forRows as soon as the first
	// batch's loads are issued (before the loop when each iteration
	// loads its own batch): work that can hide behind those loads.
	early func()
}

// rowRef is one row of a batch.
type rowRef struct {
	idx   ptx.Reg // U32 row index, clamped to m−1
	off   ptx.Reg // u64 byte offset of this thread's chunk 0: idx·n·size + lt·vb
	valid ptx.Reg // predicate: the row is < m; invalid Reg when all are
}

// tileRef is one tile of a row.
type tileRef struct {
	off   ptx.Reg   // u64 byte offset of the tile; invalid Reg for a one-tile row
	ok    []ptx.Reg // per chunk: in range; invalid Reg when surely in range
	stash ptx.Reg   // U32 address of this thread's stash slot 0 of the tile
}

func newRowKernel(k *ptx.Func, g rowGeom) *rowKernel {
	rk := &rowKernel{k: k, g: g, ld: ptx.LdOpts{NC: true}}
	k.ReqNTid(g.block)
	k.MaxNReg(g.maxnreg)
	rk.tid = k.Mov(ptx.U32, ptx.TidX)
	if g.rows > 1 {
		rk.grp = k.Div(ptx.U32, rk.tid, ptx.Imm(g.tpr))
		rk.lt = k.Sub(ptx.U32, rk.tid, k.Mul(ptx.U32, rk.grp, ptx.Imm(g.tpr)))
	} else {
		rk.grp = k.Mov(ptx.U32, ptx.Imm(0))
		rk.lt = rk.tid
	}
	rk.laneOff = k.MulWide(ptx.U32, rk.lt, ptx.Imm(g.vb))
	if g.tiles == 1 && g.nv%g.tpr != 0 {
		rk.lastOK = k.Setp("lt", ptx.U32, rk.lt, ptx.Imm(g.nv-(g.vpt-1)*g.tpr))
	}
	rk.rowGuard = g.grid*g.rows*g.rpg > g.m
	if g.smem > 0 {
		rk.smem = k.Mov(ptx.U32, k.DynamicShared("smem", 16))
	}
	rk.red = newReducer(rk)
	return rk
}

// forRows emits the loop over the rows of this thread's group, in
// batches of unroll rows: load issues a batch's loads and returns the
// registers they fill, compute does the rest. With prefetch, the next
// batch's loads are issued before the current batch is computed (the
// registers are carried around the loop). The loop counter runs over
// immediates, so the loop is CTA-uniform. rk.early, if any, follows the
// first loads.
func (rk *rowKernel) forRows(load func(rows []rowRef) []ptx.Reg, compute func(rows []rowRef, regs []ptx.Reg)) {
	k, g := rk.k, rk.g
	early := rk.emitEarly
	rk.setBase()
	iters := g.rpg / g.unroll
	switch {
	case iters == 1:
		rows := rk.batch(ptx.Imm(0))
		regs := load(rows)
		early()
		compute(rows, regs)
	case g.pref:
		cur := load(rk.batch(ptx.Imm(0)))
		early()
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(iters-1), ptx.Imm(1), func(it ptx.Reg) {
			next := load(rk.batch(k.Add(ptx.U32, it, ptx.Imm(1))))
			compute(rk.batch(it), cur)
			for i := range cur {
				k.MovTo(cur[i], next[i])
			}
		})
		compute(rk.batch(ptx.Imm(iters-1)), cur)
	default:
		early()
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(iters), ptx.Imm(1), func(it ptx.Reg) {
			rows := rk.batch(it)
			compute(rows, load(rows))
		})
	}
}

// batch returns the rows of batch it (unroll rows, rows·unroll apart) of
// this thread's group; setBase must have been emitted.
func (rk *rowKernel) batch(it ptx.Operand) []rowRef {
	k, g := rk.k, rk.g
	base := rk.base
	r0 := base
	switch it := it.(type) {
	case ptx.Imm:
		if it != 0 {
			r0 = k.Add(ptx.U32, base, ptx.Imm(int64(it)*int64(g.unroll*g.rows)))
		}
	default:
		r0 = k.Mad(ptx.U32, it, ptx.Imm(g.unroll*g.rows), base)
	}
	rows := make([]rowRef, g.unroll)
	for q := range rows {
		r := r0
		if q > 0 {
			r = k.Add(ptx.U32, r0, ptx.Imm(q*g.rows))
		}
		if rk.rowGuard {
			rows[q].valid = k.Setp("lt", ptx.U32, r, ptx.Imm(g.m))
			r = k.Min(ptx.U32, r, ptx.Imm(g.m-1))
		}
		rows[q].idx = r
		rows[q].off = k.Add(ptx.U64, k.MulWide(ptx.U32, r, ptx.Imm(g.n*g.dt.Size())), rk.laneOff)
	}
	return rows
}

// emitEarly emits rk.early, if any.
func (rk *rowKernel) emitEarly() {
	if rk.early != nil {
		rk.early()
	}
}

// setBase emits the group's first row, where batch counts from.
func (rk *rowKernel) setBase() {
	k, g := rk.k, rk.g
	rk.base = k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(g.rows*g.rpg), rk.grp)
}

// forRowsAsync is forRows for store=async (one row per batch): every row
// of the group is copied into this thread's stash with cp.async first,
// one commit group per row, so that all rpg rows are in flight at once
// (in shared memory, not registers); issue(r, i) emits row i's copies and
// returns what it loads into registers itself. rk.early follows. Row i
// then waits for its own group only (cp.async.wait_group rpg−1−i), and
// fetch(r, i, held) reads it back for compute. Each thread reads back only
// what it copied, so no barrier is needed.
func (rk *rowKernel) forRowsAsync(issue func(r rowRef, i int) []ptx.Reg, fetch func(r rowRef, i int, held []ptx.Reg) []ptx.Reg, compute func(rows []rowRef, regs []ptx.Reg)) {
	k, g := rk.k, rk.g
	rk.setBase()
	rows := make([]rowRef, g.rpg)
	held := make([][]ptx.Reg, g.rpg)
	for i := range rows {
		rows[i] = rk.batch(ptx.Imm(i))[0]
		held[i] = issue(rows[i], i)
		k.CpAsyncCommit()
	}
	rk.emitEarly()
	for i, r := range rows {
		k.CpAsyncWait(g.rpg - 1 - i)
		compute(rows[i:i+1], fetch(r, i, held[i]))
	}
}

// asyncAt is the shared address of chunk j of tensor ten (0 or 1) of the
// group's row i in this thread's stash (store=async): slots [row][chunk]
// [tensor][thread] of vb bytes.
func (rk *rowKernel) asyncAt(stash ptx.Reg, i, j, ten int) ptx.Addr {
	return ptx.At(stash, int64(((i*rk.g.vpt+j)*2+ten)*rk.g.block*rk.g.vb))
}

// oneTile is the tile of a row that fits one.
func (rk *rowKernel) oneTile() tileRef {
	t := tileRef{ok: make([]ptx.Reg, rk.g.vpt)}
	t.ok[rk.g.vpt-1] = rk.lastOK
	return t
}

// forTiles calls body for each tile of a row: once for a one-tile row,
// else in a CTA-uniform loop.
func (rk *rowKernel) forTiles(stashBase ptx.Reg, body func(t tileRef)) {
	k, g := rk.k, rk.g
	if g.tiles == 1 {
		t := rk.oneTile()
		t.stash = stashBase
		body(t)
		return
	}
	span := g.tpr * g.vpt
	k.For(ptx.U32, ptx.Imm(0), ptx.Imm(g.tiles), ptx.Imm(1), func(ti ptx.Reg) {
		t := tileRef{ok: make([]ptx.Reg, g.vpt)}
		t.off = k.MulWide(ptx.U32, ti, ptx.Imm(span*g.vb))
		if g.nv%span != 0 {
			vt := k.Mad(ptx.U32, ti, ptx.Imm(span), rk.lt)
			for j := range t.ok {
				t.ok[j] = k.Setp("lt", ptx.U32, vt, ptx.Imm(g.nv-j*g.tpr))
			}
		}
		if stashBase.Valid() {
			t.stash = k.Mad(ptx.U32, ti, ptx.Imm(g.vpt*2*g.block*g.vb), stashBase)
		}
		body(t)
	})
}

// rowPtr returns base + the row's offset (+ the tile's).
func (rk *rowKernel) rowPtr(base ptx.Reg, r rowRef, t tileRef) ptx.Reg {
	p := rk.k.Add(ptx.U64, base, r.off)
	if t.off.Valid() {
		p = rk.k.Add(ptx.U64, p, t.off)
	}
	return p
}

// chunkAt is the address of chunk j relative to a row (tile) pointer.
func (rk *rowKernel) chunkAt(p ptx.Reg, j int) ptx.Addr {
	return ptx.At(p, int64(j*rk.g.tpr*rk.g.vb))
}

// stashAt is the shared address of chunk j of tensor ten (0 or 1) in a
// tile's stash: slots [chunk][tensor][thread] of vb bytes.
func (rk *rowKernel) stashAt(t tileRef, j, ten int) ptx.Addr {
	return ptx.At(t.stash, int64((j*2+ten)*rk.g.block*rk.g.vb))
}

// stashBase is this thread's stash slot 0 (invalid unless store=smem or
// async).
// loadPair loads chunk j of two rows of tile t from global memory (at row
// pointers p0 and p1), stashes the raw words in shared memory when the
// variant keeps rows there (store=smem), and returns both widened to f32.
func (rk *rowKernel) loadPair(t tileRef, j int, p0, p1 ptx.Reg) (a, b []ptx.Reg) {
	k, g := rk.k, rk.g
	aw := gen.LdRaw(k, ptx.Global, g.dt, g.vec, rk.chunkAt(p0, j), t.ok[j], rk.ld)
	bw := gen.LdRaw(k, ptx.Global, g.dt, g.vec, rk.chunkAt(p1, j), t.ok[j], rk.ld)
	if g.store == "smem" {
		gen.StRaw(k, ptx.Shared, rk.stashAt(t, j, 0), aw)
		gen.StRaw(k, ptx.Shared, rk.stashAt(t, j, 1), bw)
	}
	return gen.Widen(k, g.dt, aw), gen.Widen(k, g.dt, bw)
}

// reloadPair reads chunk j of the same two rows again for the output pass:
// from the shared-memory stash (store=smem) or from global memory, widened
// to f32.
func (rk *rowKernel) reloadPair(t tileRef, j int, p0, p1 ptx.Reg) (a, b []ptx.Reg) {
	k, g := rk.k, rk.g
	var aw, bw []ptx.Reg
	if g.store == "smem" {
		aw = gen.LdRaw(k, ptx.Shared, g.dt, g.vec, rk.stashAt(t, j, 0), ptx.Reg{})
		bw = gen.LdRaw(k, ptx.Shared, g.dt, g.vec, rk.stashAt(t, j, 1), ptx.Reg{})
	} else {
		aw = gen.LdRaw(k, ptx.Global, g.dt, g.vec, rk.chunkAt(p0, j), t.ok[j], rk.ld)
		bw = gen.LdRaw(k, ptx.Global, g.dt, g.vec, rk.chunkAt(p1, j), t.ok[j], rk.ld)
	}
	return gen.Widen(k, g.dt, aw), gen.Widen(k, g.dt, bw)
}

func (rk *rowKernel) stashBase() ptx.Reg {
	if rk.g.store != "smem" && rk.g.store != "async" {
		return ptx.Reg{}
	}
	return rk.k.Mad(ptx.U32, rk.tid, ptx.Imm(rk.g.vb), rk.k.Add(ptx.U32, rk.smem, ptx.Imm(rk.g.stashOff)))
}

// reducer sums per-thread values over the threads of each row group.
type reducer struct {
	rk    *rowKernel
	w     int     // warps per row (0 or 1: no shared memory)
	base  ptx.Reg // U32: this group's slots in the current buffer
	flip  ptx.Reg // U32: base of buffer 0 + base of buffer 1 (for this group)
	wOff  ptx.Reg // U32: this warp's slot offset
	lane0 ptx.Reg // pred: lane 0 of its warp
}

func newReducer(rk *rowKernel) reducer {
	k, g := rk.k, rk.g
	r := reducer{rk: rk, w: g.tpr / 32}
	if r.w <= 1 {
		return r
	}
	b0 := k.Mad(ptx.U32, rk.grp, ptx.Imm(g.nq*g.wp*4), k.Add(ptx.U32, rk.smem, ptx.Imm(g.redOff)))
	r.base = k.Mov(ptx.U32, b0)
	r.flip = k.Add(ptx.U32, k.Add(ptx.U32, b0, b0), ptx.Imm(g.redBuf))
	r.wOff = k.Shl(ptx.U32, k.Shr(ptx.U32, rk.lt, ptx.Imm(5)), ptx.Imm(2))
	r.lane0 = k.Setp("eq", ptx.U32, k.And(ptx.U32, rk.tid, ptx.Imm(31)), ptx.Imm(0))
	return r
}

// sum returns the sums over the row group of each value (at most nq), in
// every thread of the group. All threads of the CTA call it together.
func (r *reducer) sum(vals []ptx.Reg) []ptx.Reg {
	k, g := r.rk.k, r.rk.g
	vals = append([]ptx.Reg(nil), vals...)
	for off := min(g.tpr, 32) / 2; off >= 1; off /= 2 {
		for i, v := range vals {
			o := k.BitsToF32(k.ShflSync("bfly", v, ptx.Imm(off), ptx.Imm(31), 0xffffffff))
			vals[i] = k.Add(ptx.F32, v, o)
		}
	}
	if r.w <= 1 {
		return vals
	}
	slot := k.Add(ptx.U32, r.base, r.wOff)
	for i, v := range vals {
		k.St(ptx.Shared, ptx.F32, ptx.At(slot, int64(i*g.wp*4)), []ptx.Reg{v})
		k.Guard(r.lane0, false)
	}
	k.BarSync(0)
	out := make([]ptx.Reg, len(vals))
	for i := range vals {
		var parts []ptx.Reg
		for w := 0; w < r.w; {
			n := 4
			for n > r.w-w {
				n /= 2
			}
			parts = append(parts, k.Ld(ptx.Shared, ptx.F32, n, ptx.At(r.base, int64((i*g.wp+w)*4)))...)
			w += n
		}
		s := parts[0]
		for _, p := range parts[1:] {
			s = k.Add(ptx.F32, s, p)
		}
		out[i] = s
	}
	k.MovTo(r.base, k.Sub(ptx.U32, r.flip, r.base))
	return out
}
