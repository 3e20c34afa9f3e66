package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The epilogue path (softmax=epilogue): the logits GEMM's epilogue turns
// its tile into probabilities, so no f32 logits are stored and no
// softmax kernel runs. Each chunk's probabilities are taken against a
// reference known before the chunk: ref_j, the row's maximum over the
// chunks before j (log₂ units; ref_0 from a probe launch, the logits
// GEMM of chunk 0, or of its first p.Probe classes, that only takes the
// maximum). The epilogue of chunk j
// writes P = 2^(z·log₂e − ref_j) in the dtype, adds the tile's ΣP into
// s_j and its Σz into zs_j (label smoothing), raises ref_{j+1} to the
// tile's maximum (an atomic max of an order-preserving u32 image of the
// f32), stores z[label] where the label is in the tile, and, in the
// tiles of the first column, α = 2^(ref_{j−1} − ref_j) for chunk j's
// gradient GEMM, acc = α·acc + P·w, whose accumulator is then against
// ref_j. The finishing kernel takes R = ref_n and S = Σ_j s_j·2^(ref_j − R).
//
// With ref=fixed every chunk's reference is ref_0: the gradient GEMMs
// then add P·w into the accumulator with atomic adds (no α, nothing
// loaded), and S = Σ_j s_j. Chunk 0's maximum is at most the row's, so
// nothing underflows that would not against the row's maximum; a logit
// past the clamp above it is repaired as below.
//
// A logit more than clampOf(dtype) above its reference (log₂ units)
// would overflow P or the sums: its P is clamped and the row flagged,
// and the repair kernel recomputes a flagged row exactly, one CTA a row
// (rows not flagged return at once).

// clampOf bounds z·log₂e − ref in the dtype of P: bf16 (f32's range)
// 100 bits (≈ 69 nats), where 2^100 times the vocabulary's classes (all
// of them against one reference with ref=fixed) and |w| stays far inside
// f32; f16 15 bits (≈ 10 nats), under its largest
// finite value 65504.
func clampOf(dt dtype.DType) float64 {
	if dt == dtype.F16 {
		return 15
	}
	return 100
}

// rowStats is the layout of a row's words in the State buffer rows
// (u32 and f32), for n chunks: refs 0..n (order-preserving u32 images),
// s_j, zs_j, z[label], the repair flag. The program's last kernel zeroes
// them. fixed: every chunk is against ref_0 (ref=fixed), and refs 1..n
// stay 0.
type rowStats struct {
	n     int
	fixed bool
}

func (r rowStats) ref(j int) int  { return j }
func (r rowStats) sum(j int) int  { return r.n + 1 + j }
func (r rowStats) zsum(j int) int { return 2*r.n + 1 + j }
func (r rowStats) zlab() int      { return 3*r.n + 1 }
func (r rowStats) flag() int      { return 3*r.n + 2 }
func (r rowStats) stride() int    { return 3*r.n + 3 }

// refOf is the address of the word that holds the reference of the chunk
// whose words start at base (wordAt(rowAt, j)): base's ref(0), or ref_0,
// rowAt's, where fixed.
func (r rowStats) refOf(rowAt, base ptx.Reg) ptx.Addr {
	if r.fixed {
		return ptx.At(rowAt, 4*int64(r.ref(0)))
	}
	return ptx.At(base, 4*int64(r.ref(0)))
}

// refAt is the word of ref_j, or of ref_0, every chunk's reference,
// where fixed.
func (r rowStats) refAt(j int) int {
	if r.fixed {
		return r.ref(0)
	}
	return r.ref(j)
}

// rowAt is the address (u64) of row's word 0 in rows; word i is 4i
// bytes on.
func (r rowStats) rowAt(k *ptx.Func, rows, row ptx.Reg) ptx.Reg {
	return k.Add(ptx.U64, rows, k.MulWide(ptx.U32, row, ptx.Imm(4*r.stride())))
}

// wordAt is the address (u64) of word i (u32, at run time) of the row at
// rowAt.
func wordAt(k *ptx.Func, rowAt, i ptx.Reg) ptx.Reg {
	return k.Add(ptx.U64, rowAt, k.MulWide(ptx.U32, i, ptx.Imm(4)))
}

// ordered is f's order-preserving u32 image: the sign bit flipped for a
// positive f, every bit for a negative one (0, the zeroed word, is below
// every image of a number).
func ordered(k *ptx.Func, f ptx.Reg) ptx.Reg {
	b := k.Mov(ptx.B32, f)
	neg := k.Setp("lt", ptx.S32, b, ptx.Imm(0))
	return k.Selp(ptx.B32, k.Xor(ptx.B32, b, ptx.Imm(-1)), k.Xor(ptx.B32, b, ptx.Imm(-1<<31)), neg)
}

// fromOrdered inverts ordered.
func fromOrdered(k *ptx.Func, u ptx.Reg) ptx.Reg {
	pos := k.Setp("lt", ptx.S32, u, ptx.Imm(0))
	return k.BitsToF32(k.Selp(ptx.B32, k.Xor(ptx.B32, u, ptx.Imm(-1<<31)), k.Xor(ptx.B32, u, ptx.Imm(-1)), pos))
}

// probsEpilogue is the logits GEMM's epilogue of the epilogue path
// (probe: only ref_0, the chunk's maximum). w is the chunk's classes,
// ld its padded width; the chunk's index and first class come at run
// time, so every chunk of one width shares the kernel.
type probsEpilogue struct {
	dt       dtype.DType
	st       rowStats
	w, ld    int
	probe    bool
	tm       terms
	j, c0    int
	r0       int     // the pass's first row: the rows' words and labels are read from there
	clamp    float64 // clampOf(dt), or a test's lower bound
	quad     bool    // P stored by a gemm.QuadStore (pstore=quad)
	labelOff bool    // planted bug: z[label] one column late
	noFlag   bool    // planted bug: a clamped row is not flagged

	rows, labels, alpha ptx.Reg
	jp, c0p             ptx.Reg
}

func (e *probsEpilogue) entry() string {
	kind := "zs"
	if e.probe {
		kind = "zp"
	}
	return fmt.Sprintf("%s_%s%d_w%d_%v", prefix, kind, e.ld, e.w, e.dt)
}

// writesAlpha: the epilogue writes α for the gradient GEMM (a chunk's
// logits GEMM, not the probe's, with the running reference).
func (e *probsEpilogue) writesAlpha() bool { return !e.probe && !e.st.fixed }

func (e *probsEpilogue) Declare(k *ptx.Func) {
	e.rows, e.labels = gen.Param(k, "rows"), gen.Param(k, "labels")
	if e.writesAlpha() {
		e.alpha = gen.Param(k, "alpha")
	}
	e.jp, e.c0p = k.LdParam(k.Param("j", ptx.U32)), k.LdParam(k.Param("c0", ptx.U32))
}

func (e *probsEpilogue) Args() []kernels.Arg {
	args := []kernels.Arg{{Buffer: "rows", Offset: configs.Int(e.r0 * e.st.stride() * 4)},
		{Buffer: "labels", Offset: configs.Int(e.r0 * e.tm.labBytes)}}
	if e.writesAlpha() {
		args = append(args, kernels.Arg{Buffer: "alpha"})
	}
	return append(args, kernels.Arg{Scalar: configs.Int(e.j), Type: configs.U32}, kernels.Arg{Scalar: configs.Int(e.c0), Type: configs.U32})
}

// Store takes each of the thread's accumulator rows through the
// softmax (see the path's comment above). Every row's reference and
// label are loaded first, so that their latencies overlap.
func (e *probsEpilogue) Store(k *ptx.Func, t gemm.Tile) {
	var rows []accRow
	for mb := range t.Acc {
		for h := range 2 {
			rows = append(rows, e.loadRow(k, t, mb, h))
		}
	}
	var qs *gemm.QuadStore
	if e.quad && !e.probe {
		qs = t.NewQuadStore(k)
	}
	for _, r := range rows {
		e.row(k, t, r, qs)
	}
}

// accRow is one of a thread's accumulator rows (64mb + 8h below its
// first): C's row, whether it is inside C, its words (rowAt) and those
// of chunk j (base: word i of chunk 0's layout moved j words on), its
// reference as loaded (ordered u32) and its label.
type accRow struct {
	mb, h                   int
	row, rowOK, rowAt, base ptx.Reg
	refU, lab               ptx.Reg
}

// loadRow issues the loads of the thread's accumulator row 64mb + 8h:
// its reference (not in the probe) and its label.
func (e *probsEpilogue) loadRow(k *ptx.Func, t gemm.Tile, mb, h int) accRow {
	dr := 64*mb + 8*h
	r := accRow{mb: mb, h: h, rowOK: t.RowOK(dr), row: k.Add(ptx.U32, t.Row, ptx.Imm(dr))}
	r.rowAt = e.st.rowAt(k, e.rows, r.row)
	r.base = wordAt(k, r.rowAt, e.jp)
	if e.probe {
		return r
	}
	r.refU = k.Mov(ptx.B32, ptx.Imm(0))
	k.LdTo(ptx.Global, ptx.B32, []ptx.Reg{r.refU}, e.st.refOf(r.rowAt, r.base))
	k.Guard(r.rowOK, false)
	r.lab = k.Mov(ptx.U32, ptx.Imm(-1))
	k.LdTo(ptx.Global, ptx.U32, []ptx.Reg{r.lab}, ptx.At(k.Add(ptx.U64, e.labels, k.MulWide(ptx.U32, r.row, ptx.Imm(e.tm.labBytes))), 0), gen.LdNC)
	k.Guard(r.rowOK, false)
	return r
}

// row is the epilogue of one of the thread's accumulator rows; P goes
// out through qs where set.
func (e *probsEpilogue) row(k *ptx.Func, t gemm.Tile, r accRow, qs *gemm.QuadStore) {
	mb, h, dr, row, rowOK, base := r.mb, r.h, 64*r.mb+8*r.h, r.row, r.rowOK, r.base
	word := func(i int) ptx.Addr { return ptx.At(base, int64(4*i)) }
	var ref ptx.Reg // the reference, log₂ units (the probe's is 0)
	neg := k.Mov(ptx.F32, ptx.F32Imm(0))
	if !e.probe {
		ref = fromOrdered(k, r.refU)
		neg = k.Neg(ptx.F32, ref)
	}
	// the row's maximum and sums run in `chains` independent partials
	// (column group j goes into partial j%chains), so that their adds
	// overlap instead of waiting on one another
	smooth := e.tm.eps > 0 && !e.probe
	var dmaxs, sums, zss [chains]ptx.Reg
	for c := range chains {
		dmaxs[c] = k.Mov(ptx.F32, negInf)
		if !e.probe {
			sums[c] = k.Mov(ptx.F32, ptx.F32Imm(0))
		}
		if smooth {
			zss[c] = k.Mov(ptx.F32, ptx.F32Imm(0))
		}
	}
	var left ptx.Reg // the chunk's classes from the thread's first column on (s32), where a tile can pass them
	if e.w%t.BN != 0 {
		left = k.Sub(ptx.S32, ptx.Imm(e.w), t.Col)
	}
	var words []ptx.Reg // the pairs packed, for qs's next group
	for j := range t.BN / 8 {
		dmax, sum, zs := dmaxs[j%chains], sums[j%chains], zss[j%chains]
		ps := make([]ptx.Reg, 2)
		for i := range ps {
			x := t.Acc[mb][4*j+2*h+i]
			d := k.Fma(ptx.F32, x, log2e, neg)
			if left.Valid() { // columns past the chunk (the pad, the last tile's rest) hold no class
				d = k.Selp(ptx.F32, d, negInf, k.Setp("gt", ptx.S32, left, ptx.Imm(8*j+i)))
			}
			k.MovTo(dmax, k.Max(ptx.F32, dmax, d))
			if e.probe {
				continue
			}
			ps[i] = k.Ex2ApproxFtz(k.Min(ptx.F32, d, gen.F32Imm(e.clamp)))
			k.MovTo(sum, k.Add(ptx.F32, sum, ps[i]))
			if smooth {
				k.MovTo(zs, k.Add(ptx.F32, zs, x))
			}
		}
		switch {
		case e.probe:
		case qs != nil:
			words = append(words, k.PackHalf2(gen.Half2Type(e.dt), ps[1], ps[0]))
			if len(words) == 4 {
				qs.Group(k, dr, j/4, words, rowOK)
				words = nil
			}
		default:
			gen.StVals(k, e.dt, ptx.At(t.Out, int64((dr*e.ld+8*j)*e.dt.Size())), ps, k.And(ptx.Pred, rowOK, t.ColOK[j]))
		}
	}
	if len(words) != 0 { // NewQuadStore takes BN a multiple of 32: whole groups
		panic(fmt.Sprintf("linxent: %d pairs of P left unstored", len(words)))
	}
	maxOf := func(a, b ptx.Reg) ptx.Reg { return k.Max(ptx.F32, a, b) }
	add := func(a, b ptx.Reg) ptx.Reg { return k.Add(ptx.F32, a, b) }
	dmax := butterfly(k, fold(dmaxs[:], maxOf), quadLanes, maxOf)
	lead := k.And(ptx.Pred, rowOK, k.Setp("eq", ptx.U32, k.And(ptx.U32, t.Lane, ptx.Imm(3)), ptx.Imm(0)))
	if e.probe {
		k.If(lead, func() { k.Red(ptx.Global, "max", ptx.U32, word(e.st.ref(0)), ordered(k, dmax)) })
		return
	}
	sum := butterfly(k, fold(sums[:], add), quadLanes, add)
	var zs ptx.Reg
	if smooth {
		zs = butterfly(k, fold(zss[:], add), quadLanes, add)
	}
	k.If(lead, func() {
		k.Red(ptx.Global, "add", ptx.F32, word(e.st.sum(0)), sum)
		if smooth {
			k.Red(ptx.Global, "add", ptx.F32, word(e.st.zsum(0)), zs)
		}
		if !e.st.fixed {
			k.Red(ptx.Global, "max", ptx.U32, word(e.st.ref(1)), ordered(k, k.Add(ptx.F32, ref, k.Max(ptx.F32, dmax, ptx.F32Imm(0)))))
		}
		if !e.noFlag {
			flagAt := ptx.At(r.rowAt, int64(4*e.st.flag()))
			k.If(k.Setp("gt", ptx.F32, dmax, gen.F32Imm(e.clamp)), func() {
				k.St(ptx.Global, ptx.U32, flagAt, []ptx.Reg{k.Mov(ptx.U32, ptx.Imm(1))})
			})
		}
		if !e.writesAlpha() {
			return
		}
		k.Comment("the first column's tiles: alpha = 2^(ref_{j-1} - ref_j) for the gradient GEMM (chunks past the first)")
		k.If(k.And(ptx.Pred, k.Setp("ne", ptx.U32, e.jp, ptx.Imm(0)), k.Setp("eq", ptx.U32, t.Col0, ptx.Imm(0))), func() {
			prev := fromOrdered(k, k.Ld(ptx.Global, ptx.B32, 1, ptx.At(k.Sub(ptx.U64, base, ptx.Imm(4)), 0))[0])
			a := k.Ex2ApproxFtz(k.Add(ptx.F32, prev, neg))
			k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, e.alpha, k.MulWide(ptx.U32, row, ptx.Imm(4))), 0), []ptx.Reg{a})
		})
	})
	e.label(k, t, r)
}

// chains is the independent partials of a row's maximum and sums in the
// softmax epilogue.
const chains = 2

// fold combines the partials pairwise, (p0 op p1) op (p2 op p3); their
// count is a power of two.
func fold(ps []ptx.Reg, op func(a, b ptx.Reg) ptx.Reg) ptx.Reg {
	for len(ps) > 1 {
		var next []ptx.Reg
		for i := 0; i < len(ps); i += 2 {
			next = append(next, op(ps[i], ps[i+1]))
		}
		ps = next
	}
	return ps[0]
}

// label stores z[label] (the f32 logit) from the thread that holds it:
// the thread's columns are Col + 8j + e, so a label at rel = label − c0 −
// Col is its own where rel < BN and rel%8 < 2.
func (e *probsEpilogue) label(k *ptx.Func, t gemm.Tile, r accRow) {
	mb, h := r.mb, r.h
	inChunk := k.Sub(ptx.U32, r.lab, e.c0p) // an ignored or earlier label wraps past w
	if e.labelOff {
		inChunk = k.Add(ptx.U32, inChunk, ptx.Imm(1))
	}
	rel := k.Sub(ptx.U32, inChunk, t.Col)
	hit := k.And(ptx.Pred, k.Setp("lt", ptx.U32, inChunk, ptx.Imm(e.w)), k.Setp("lt", ptx.U32, rel, ptx.Imm(t.BN)))
	hit = k.And(ptx.Pred, hit, k.Setp("eq", ptx.U32, k.And(ptx.U32, rel, ptx.Imm(6)), ptx.Imm(0)))
	k.If(k.And(ptx.Pred, hit, r.rowOK), func() {
		z := t.Acc[mb][2*h]
		for j := range t.BN / 8 {
			for i := range 2 {
				if j+i > 0 {
					z = k.Selp(ptx.F32, t.Acc[mb][4*j+2*h+i], z, k.Setp("eq", ptx.U32, rel, ptx.Imm(8*j+i)))
				}
			}
		}
		k.St(ptx.Global, ptx.F32, ptx.At(r.rowAt, int64(4*e.st.zlab())), []ptx.Reg{z})
	})
}

// epiGEMM is chunk c's logits GEMM of the epilogue path (the probe where
// probe is set) over the rows from r0 on, writing P over the chunk's row
// of p, and its variant.
func (c chunk) epiGEMM(s Shape, p Params, st rowStats, probe bool, r0 int, b bugs) (gemm.Custom, gemm.Params, error) {
	e := &probsEpilogue{dt: s.DType, st: st, w: c.w, ld: c.ld, probe: probe, tm: termsOf(s), j: c.j, c0: c.c0, r0: r0,
		clamp: clampOf(s.DType), quad: p.PStore == pstoreQuad, labelOff: b.labelOff, noFlag: b.noFlag}
	if b.clamp > 0 {
		e.clamp = b.clamp
	}
	g := gemm.Custom{Entry: e.entry(), Dim: Dim, Cols: c.ld, Red: s.H, In: s.DType,
		A:   gemm.Operand{Buffer: "x", KMajor: true, LD: s.H, Offset: r0 * s.H * s.DType.Size()},
		B:   gemm.Operand{Buffer: "w", KMajor: true, LD: s.H, Offset: c.wOffset(s), Rows: c.w},
		Out: "p", OutDT: s.DType, Epilogue: e, Chained: p.PDL > 0, WaitPrior: p.PDL > 0 && !probe,
		WaitAtEpilogue: p.PDL == pdlEpilogue && !probe}
	rows := p.passRows(s)
	if probe { // over every row at once
		rows = s.T
	}
	gp, err := g.Params(rows, p.zTiling())
	return g, gp, err
}

// probeChunk is the classes the probe takes: chunk 0, or its first
// p.Probe.
func probeChunk(s Shape, p Params) chunk {
	c := chunksOf(s, p)[0]
	if p.Probe > 0 {
		c.w, c.ld = p.Probe, padded(p.Probe)
	}
	return c
}

// repairBlock is the repair kernel's CTA: eight warps, a class each.
const repairBlock = 256

// maxRepairSmem bounds the repair kernel's static shared memory (its
// row of h f32 sums), under the 48 KB a kernel may declare statically.
const maxRepairSmem = 46 * 1024

// repair recomputes a flagged row exactly (CTA r, row r; the others
// return): each warp takes every eighth class, its logit a dot product
// of x[r] and w[c] summed over the warp; the row's maximum M (log₂
// units) in a first pass, then Σ 2^(z·log₂e − M) and acc = Σ p·w[c]
// (shared-memory adds) in a second. It writes acc's row, and M and the
// sum into rec [t×2].
type repair struct {
	dt   dtype.DType
	v, h int
	st   rowStats
}

func (r repair) entry() string { return fmt.Sprintf("%s_repair_%v", prefix, r.dt) }

// add writes the kernel into m and returns its launch, one CTA a row:
// x, w, rows, rec, acc.
func (r repair) add(m *ptx.Module) kernels.Launch {
	r.emit(m.Func(r.entry()))
	return kernels.Launch{Entry: r.entry(), Grid: rowsGrid(), Block: [3]int{repairBlock, 1, 1},
		Args: []kernels.Arg{{Buffer: "x"}, {Buffer: "w"}, {Buffer: "rows"}, {Buffer: "rec"}, {Buffer: "acc"}}}
}

func (r repair) emit(k *ptx.Func) {
	k.ReqNTid(repairBlock)
	x, w, rows, rec, acc := gen.Param(k, "x"), gen.Param(k, "w"), gen.Param(k, "rows"), gen.Param(k, "rec"), gen.Param(k, "acc")
	row, tid := k.Mov(ptx.U32, ptx.CtaidX), k.Mov(ptx.U32, ptx.TidX)
	flag := k.Ld(ptx.Global, ptx.U32, 1, ptx.At(r.st.rowAt(k, rows, row), int64(4*r.st.flag())))[0]
	k.IfNot(k.BarRedOr(0, k.Setp("ne", ptx.U32, flag, ptx.Imm(0))), k.Ret)
	lane, warp := k.And(ptx.U32, tid, ptx.Imm(31)), k.Shr(ptx.U32, tid, ptx.Imm(5))
	accs := k.Mov(ptx.U32, k.SharedArray("accs", ptx.F32, r.h, 16))
	k.For(ptx.U32, tid, ptx.Imm(r.h), ptx.Imm(repairBlock), func(i ptx.Reg) {
		k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, i, ptx.Imm(4), accs), 0), []ptx.Reg{k.Mov(ptx.F32, ptx.F32Imm(0))})
	})
	k.BarSync(0)
	size := r.dt.Size()
	xr := k.Add(ptx.U64, x, k.MulWide(ptx.U32, row, ptx.Imm(r.h*size)))
	// classes runs body(c, wr, zL) for the warp's classes: wr is w[c]'s
	// row, zL the logit in log₂ units, on every lane
	classes := func(body func(c, wr, zL ptx.Reg)) {
		k.For(ptx.U32, warp, ptx.Imm(r.v), ptx.Imm(repairBlock/32), func(c ptx.Reg) {
			wr := k.Add(ptx.U64, w, k.MulWide(ptx.U32, c, ptx.Imm(r.h*size)))
			d := k.Mov(ptx.F32, ptx.F32Imm(0))
			k.For(ptx.U32, lane, ptx.Imm(r.h/4), ptx.Imm(32), func(k4 ptx.Reg) {
				off := k.MulWide(ptx.U32, k4, ptx.Imm(4*size))
				wv := gen.LdVals(k, ptx.Global, r.dt, 4, ptx.At(k.Add(ptx.U64, wr, off), 0), ptx.Reg{}, gen.LdNC)
				xv := gen.LdVals(k, ptx.Global, r.dt, 4, ptx.At(k.Add(ptx.U64, xr, off), 0), ptx.Reg{}, gen.LdNC)
				for i := range wv {
					k.MovTo(d, k.Fma(ptx.F32, wv[i], xv[i], d))
				}
			})
			d = butterfly(k, d, warpLanes, func(a, b ptx.Reg) ptx.Reg { return k.Add(ptx.F32, a, b) })
			body(c, wr, k.Mul(ptx.F32, d, log2e))
		})
	}
	red := newBlockReduce(k, tid, repairBlock)
	m := k.Mov(ptx.F32, negInf)
	classes(func(_, _, zL ptx.Reg) { k.MovTo(m, k.Max(ptx.F32, m, zL)) })
	mL := red.max(m)
	negM := k.Neg(ptx.F32, mL)
	s := k.Mov(ptx.F32, ptx.F32Imm(0))
	classes(func(_, wr, zL ptx.Reg) {
		p := k.Ex2ApproxFtz(k.Add(ptx.F32, zL, negM))
		k.MovTo(s, k.Add(ptx.F32, s, p))
		k.For(ptx.U32, lane, ptx.Imm(r.h/4), ptx.Imm(32), func(k4 ptx.Reg) {
			wv := gen.LdVals(k, ptx.Global, r.dt, 4, ptx.At(k.Add(ptx.U64, wr, k.MulWide(ptx.U32, k4, ptx.Imm(4*size))), 0), ptx.Reg{}, gen.LdNC)
			at := k.Mad(ptx.U32, k4, ptx.Imm(16), accs)
			for i := range wv {
				k.Red(ptx.Shared, "add", ptx.F32, ptx.At(at, int64(4*i)), k.Mul(ptx.F32, p, wv[i]))
			}
		})
	})
	// every lane of a warp holds the warp's sum: count lane 0's
	sum := red.sum(k.Selp(ptx.F32, s, ptx.F32Imm(0), k.Setp("eq", ptx.U32, lane, ptx.Imm(0))))
	k.BarSync(0)
	accR := k.Add(ptx.U64, acc, k.MulWide(ptx.U32, row, ptx.Imm(4*r.h)))
	k.For(ptx.U32, tid, ptx.Imm(r.h), ptx.Imm(repairBlock), func(i ptx.Reg) {
		v := k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, i, ptx.Imm(4), accs), 0))
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, accR, k.MulWide(ptx.U32, i, ptx.Imm(4))), 0), v)
	})
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, rec, k.MulWide(ptx.U32, row, ptx.Imm(8))), 0), []ptx.Reg{mL, sum})
	})
}

// emitOnline writes the epilogue path's launches into m after the
// column sums' (ws's, in launches): the probe, per chunk the logits GEMM
// with the softmax epilogue and the gradient GEMM (addGEMM adds a GEMM's
// kernel and launch), the repair kernel and the finishing kernel.
func emitOnline(m *ptx.Module, s Shape, p Params, b bugs, ws wsumKernels, addGEMM func(gemm.Custom, gemm.Params, error) error, launches *[]kernels.Launch) (kernels.Program, error) {
	cs := chunksOf(s, p)
	st := rowStats{n: len(cs), fixed: p.Ref == refFixed}
	if st.n > finishBlock { // the finishing kernel's thread j takes chunk j
		return kernels.Program{}, fmt.Errorf("%d chunks: the epilogue path takes at most %d", st.n, finishBlock)
	}
	tm := termsOf(s)
	probe := probeChunk(s, p)
	if err := addGEMM(probe.epiGEMM(s, p, st, true, 0, b)); err != nil {
		return kernels.Program{}, err
	}
	maxLD := 0
	for _, c := range cs {
		maxLD = max(maxLD, c.ld)
	}
	for _, ps := range passesOf(p) {
		addPass := func(g gemm.Custom, gp gemm.Params, err error) error { // a GEMM launch of the pass
			if err := addGEMM(g, gp, err); err != nil {
				return err
			}
			ps.restrict(*launches)
			return nil
		}
		for _, c := range cs {
			if err := addPass(c.epiGEMM(s, p, st, false, ps.r0, b)); err != nil {
				return kernels.Program{}, err
			}
			g, gp, err := c.dxGEMM(s, p, c.first || b.noRescale)
			g.Chained, g.WaitPrior = p.PDL > 0, p.PDL > 0
			if !b.samePassRows {
				g.OutOffset = ps.r0 * s.H * 4
			}
			if err := addPass(g, gp, err); err != nil {
				return kernels.Program{}, err
			}
		}
	}
	fin := finish{dt: s.DType, h: s.H, tm: tm, online: &st, noWSum: b.noWSum, noZFactor: b.noZFactor}
	*launches = append(*launches, repair{dt: s.DType, v: s.V, h: s.H, st: st}.add(m), fin.add(m, ws))
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	t := configs.Var(Dim)
	prog := kernels.Program{PTX: built.String(), Launches: *launches, RuntimeDims: []string{Dim}, Buffers: []kernels.Buffer{
		{Name: "p", DType: s.DType, Elems: maxPassRows(p).TimesInt(maxLD), Role: kernels.Scratch},
		{Name: "acc", DType: dtype.F32, Elems: t.TimesInt(s.H), Role: kernels.Scratch},
		{Name: "rec", DType: dtype.F32, Elems: t.TimesInt(2), Role: kernels.Scratch},
		{Name: "rows", DType: dtype.F32, Elems: t.TimesInt(st.stride()), Role: kernels.State},
	}}
	if !st.fixed { // the running reference's factors α
		prog.Buffers = append(prog.Buffers, kernels.Buffer{Name: "alpha", DType: dtype.F32, Elems: t, Role: kernels.Scratch})
	}
	if tm.eps > 0 {
		prog.Buffers = append(prog.Buffers, ws.buffer())
	}
	return prog, nil
}
