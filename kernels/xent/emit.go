package xent

import (
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// wideVec is the widest vector width dividing v.
func wideVec(s Shape) int { return rows.WidestVec(s.DType, s.V) }

// geom is the work split of a variant: a row is nv vectors of vec
// elements; CTA part i of a row (of split) takes vectors [i·cv, (i+1)·cv)
// that are below nv, block threads at a time, vpt vectors per thread
// per iteration.
// labBytes is the bytes of one label (the kernels read its low 32 bits);
// zloss adds λ·lse² to the loss. alias emits the program with the
// gradient written over the logits (the gradient kernel's output is the
// buffer logits, read without .nc); labelLate makes the gradient kernel
// read z[label] from the logits, which is wrong once they alias (tests
// plant it).
type geom struct {
	dt                dtype.DType
	v, vec, vb, nv    int
	block, vpt, split int
	cv, labBytes      int
	eps               float64
	reverse, zloss    bool
	alias, labelLate  bool
	onePass           bool
	bulkIn, bulkOut   bool
	stream            bool // with bulkIn: one bulk copy a loop step, each on its own mbarrier
	maxnreg           int  // the kernels' .maxnreg (regCap)
	// plant is a bug the one-pass kernel plants (tests): "unsynced", no
	// barrier before the merge; "nowait", the part read before its bulk
	// copy completes; "prevstep", copy=stream's step read after waiting
	// on the step before's barrier; "nofence", the gradient bulk-stored
	// without the threads' proxy fence.
	plant string
}

func newGeom(s Shape, p Params) geom {
	g := geom{dt: s.DType, v: s.V, vec: p.Vec, vb: p.Vec * s.DType.Size(), nv: s.V / p.Vec,
		block: p.Block, vpt: p.VPT, split: p.Split, eps: s.eps(), reverse: p.Reverse,
		labBytes: s.labelType().Size(), zloss: s.zloss(), alias: s.grad() == "logits", onePass: p.Pass == "one",
		bulkIn: p.Copy != "ld", bulkOut: p.Copy == "inout", stream: p.Copy == "stream"}
	g.cv = gen.CeilDiv(g.nv, g.split)
	g.maxnreg = regCap(g, p.Regs)
	return g
}

// regCap is the kernels' .maxnreg. With regs=free it is the most that
// lets one CTA fill the register file (without a cap ptxas sizes a
// 512-thread CTA for three a SM, 40 registers, and spills the heavier
// gradient variants: vec·vpt = 16 with smoothing, z-loss and i64
// labels). With regs=smem it is the most that lets as many CTAs share an
// SM as their shared memory (onePassShared) and the SM's threads allow,
// but no fewer than heldRegs: uncapped, ptxas takes what it likes (55
// registers instead of 48 for one form of the same one-pass kernel: four
// CTAs a SM where shared memory holds five).
func regCap(g geom, regs string) int {
	free := hopper.RegsFor(g.block, 1)
	if regs != "smem" {
		return free
	}
	ctas := max(1, min(hopper.CTAsByShared(g.onePassShared()), hopper.ThreadsPerSM/g.block))
	return min(free, max(hopper.RegsFor(g.block, ctas), heldRegs(g.vec*g.vpt)))
}

// step is a loop step's vectors: block threads of vpt each.
func (g geom) step() int { return g.block * g.vpt }

// bulkCopies is the one-pass kernel's bulk copies of its part (bulkIn):
// none with copy=ld, one with copy=in and inout, cv/step + 1 with
// copy=stream.
func (g geom) bulkCopies() int {
	switch {
	case g.stream:
		return g.cv/g.step() + 1
	case g.bulkIn:
		return 1
	}
	return 0
}

// onePassShared is a one-pass CTA's shared memory: its part (dynamic);
// the published statistics, an mbarrier a bulk copy (padded to 16 bytes,
// since ctaMerge's 16-aligned warp slots follow them) and the warps'
// slots (static).
func (g geom) onePassShared() int {
	return g.cv*g.vb + 4*statWords*(1+g.block/32) + gen.CeilDiv(8*g.bulkCopies(), 16)*16
}

// heldRegs is the fewest registers a one-pass thread holding held values
// a batch takes without spilling, its heaviest options (smoothing, z-loss,
// i64 labels) included: 1.5·held + 16, rounded up to 8 (ptxas 12.4: 8
// values fit 32; 16 spill at 32 and fit 40; 32 spill at 56 and fit 64).
func heldRegs(held int) int { return (3*held/2 + 16 + 7) / 8 * 8 }

// statWords is the f32 words of one partial: (m·log₂e, Σ2^(z·log₂e −
// that), Σz, zl), zl = z[row, label] in part 0's partial (0 on an
// ignored row), 0 in the others.
const statWords = 4

// The f32 constants: log₂e, ln 2, and the running maximum (in log₂
// units) of a thread that has seen nothing, whose product with anything
// stays finite.
var (
	log2e  = gen.F32Imm(math.Log2E)
	ln2    = gen.F32Imm(math.Ln2)
	noMax  = ptx.F32Imm(-0x1p100)
	negInf = ptx.F32Imm(float32(math.Inf(-1)))
)

// Emit generates one variant: the statistics kernel, then the gradient
// kernel, in one module; neither reads t (the grids are t·split CTAs).
func (f family) Emit(s Shape, p Params) (kernels.Program, error) {
	return f.emit(newGeom(s, p))
}

// emit generates the program of geometry g.
func (f family) emit(g geom) (kernels.Program, error) {
	if g.onePass {
		return f.emitOne(g)
	}
	m := ptx.NewModule()
	stats, grad := f.Name()+"_stats_"+g.dt.String(), f.Name()+"_grad_"+g.dt.String()
	emitStats(m.Func(stats), g)
	emitGrad(m.Func(grad), g)
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	block := [3]int{g.block, 1, 1}
	return kernels.Program{PTX: built.String(), Launches: []kernels.Launch{
		{Entry: stats, Grid: g.grid(), Block: block, Args: []kernels.Arg{{Buffer: "logits"}, {Buffer: "labels"}, {Buffer: "partials"}}},
		{Entry: grad, Grid: g.grid(), Block: block, Args: gradArgs(g, true)},
	}, Buffers: []kernels.Buffer{
		{Name: "partials", DType: dtype.F32, Elems: configs.Var(Dim).TimesInt(g.split * statWords), Role: kernels.Scratch},
	}, RuntimeDims: []string{Dim}}, nil
}

// emitOne generates the one-pass program: one launch of t·split CTAs in
// clusters of split, each holding its part of a row in shared memory.
func (f family) emitOne(g geom) (kernels.Program, error) {
	m := ptx.NewModule()
	entry := f.Name() + "_onepass_" + g.dt.String()
	emitOnePass(m.Func(entry), g)
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	return kernels.Program{PTX: built.String(), Launches: []kernels.Launch{{
		Entry: entry, Grid: g.grid(),
		Block: [3]int{g.block, 1, 1}, Cluster: g.cluster(), SharedBytes: g.cv * g.vb, Args: gradArgs(g, false),
	}}, RuntimeDims: []string{Dim}}, nil
}

// declareBlock declares a kernel's CTA: block threads, and .maxnreg
// (regCap).
func declareBlock(k *ptx.Func, g geom) {
	k.ReqNTid(g.block)
	k.MaxNReg(g.maxnreg)
}

// gradArgs is the arguments of a kernel that writes the gradient
// (declareGrad's parameters): the partials only in the two-pass one; the
// gradient goes to the logits when they alias.
func gradArgs(g geom, partials bool) []kernels.Arg {
	args := []kernels.Arg{{Buffer: "logits"}, {Buffer: "labels"}, {Buffer: "dloss"}, {Buffer: "n_valid"}}
	if g.zloss {
		args = append(args, kernels.Arg{Buffer: "zloss_scale"})
	}
	if partials {
		args = append(args, kernels.Arg{Buffer: "partials"})
	}
	out := "dlogits"
	if g.alias {
		out = "logits"
	}
	return append(args, kernels.Arg{Buffer: out}, kernels.Arg{Buffer: "lse"}, kernels.Arg{Buffer: "loss"})
}

// grid is every kernel's grid: t·split CTAs, split a row.
func (g geom) grid() [3]configs.Expr {
	return [3]configs.Expr{configs.Var(Dim).TimesInt(g.split), configs.Int(1), configs.Int(1)}
}

// cluster is the one-pass launch's cluster: a row's split CTAs, none
// when one CTA holds the row.
func (g geom) cluster() [3]int {
	if g.split == 1 {
		return [3]int{}
	}
	return [3]int{g.split, 1, 1}
}

// walk is a thread's share of its CTA's part of a row.
type walk struct {
	k         *ptx.Func
	g         geom
	tid       ptx.Reg // U32
	row, part ptx.Reg // U32
	begin     ptx.Reg // U32 the part's first vector in the row
	cnt       ptx.Reg // U32 vectors of the part
	vi        ptx.Reg // U32 index in the row of this thread's next vector
	off       ptx.Reg // U64 byte offset in the tensor of that vector
}

// newWalk maps CTA cta to its row and part and this thread to its first
// vector.
func newWalk(k *ptx.Func, g geom, cta ptx.Reg) *walk {
	w := &walk{k: k, g: g, tid: k.Mov(ptx.U32, ptx.TidX)}
	w.row, w.part = cta, k.Mov(ptx.U32, ptx.Imm(0))
	if g.split > 1 {
		w.row = k.Shr(ptx.U32, cta, ptx.Imm(gen.Log2(g.split)))
		w.part = k.And(ptx.U32, cta, ptx.Imm(g.split-1))
	}
	w.begin = k.Mul(ptx.U32, w.part, ptx.Imm(g.cv))
	left := k.Sub(ptx.U32, k.Mov(ptx.U32, ptx.Imm(g.nv)), k.Min(ptx.U32, w.begin, ptx.Imm(g.nv)))
	w.cnt = k.Min(ptx.U32, left, ptx.Imm(g.cv))
	w.vi = k.Add(ptx.U32, w.begin, w.tid)
	w.off = k.Add(ptx.U64, k.MulWide(ptx.U32, w.row, ptx.Imm(g.v*g.dt.Size())), k.MulWide(ptx.U32, w.vi, ptx.Imm(g.vb)))
	return w
}

// each walks the part: batch(vi, off, ok) handles vectors q·block
// further than vi (byte offset off) for q < vpt; ok is nil in the
// iterations where all are in the part, and otherwise holds each one's
// guard. The loop count is CTA-uniform.
func (w *walk) each(batch func(vi, off ptx.Reg, ok []ptx.Reg)) {
	w.eachStep(func(_, vi, off ptx.Reg, ok []ptx.Reg) { batch(vi, off, ok) })
}

// eachStep is each with the iteration's index (u32) first: the loop
// step, of block·vpt vectors, that the batch begins.
func (w *walk) eachStep(batch func(it, vi, off ptx.Reg, ok []ptx.Reg)) {
	k, g := w.k, w.g
	step := g.step()
	full := k.Div(ptx.U32, w.cnt, ptx.Imm(step))
	k.For(ptx.U32, ptx.Imm(0), full, ptx.Imm(1), func(it ptx.Reg) {
		batch(it, w.vi, w.off, nil)
		k.MovTo(w.vi, k.Add(ptx.U32, w.vi, ptx.Imm(step)))
		k.MovTo(w.off, k.Add(ptx.U64, w.off, ptx.Imm(step*g.vb)))
	})
	rem := k.Sub(ptx.U32, w.cnt, k.Mul(ptx.U32, full, ptx.Imm(step)))
	k.If(k.Setp("ne", ptx.U32, rem, ptx.Imm(0)), func() {
		ok := make([]ptx.Reg, g.vpt)
		for q := range ok {
			ok[q] = k.Setp("lt", ptx.U32, w.plus(w.tid, q), rem)
		}
		batch(full, w.vi, w.off, ok)
	})
}

// plus is index i of vector 0 of a batch moved to vector q.
func (w *walk) plus(i ptx.Reg, q int) ptx.Reg {
	if q == 0 {
		return i
	}
	return w.k.Add(ptx.U32, i, ptx.Imm(q*w.g.block))
}

// load loads the vpt vectors of a batch at base+off as f32 values (zero
// where guarded off), with the load options o.
func (w *walk) load(base, off ptx.Reg, ok []ptx.Reg, o ...ptx.LdOpts) [][]ptx.Reg {
	return w.widen(w.loadRaw(base, off, ok, o...))
}

// loadRaw is load's raw words (gen.LdRaw).
func (w *walk) loadRaw(base, off ptx.Reg, ok []ptx.Reg, o ...ptx.LdOpts) [][]ptx.Reg {
	k, g := w.k, w.g
	at := k.Add(ptx.U64, base, off)
	out := make([][]ptx.Reg, g.vpt)
	for q := range out {
		out[q] = gen.LdRaw(k, ptx.Global, g.dt, g.vec, ptx.At(at, int64(q*g.block*g.vb)), guardOf(ok, q), o...)
	}
	return out
}

// widen converts a batch's raw words to f32 values.
func (w *walk) widen(raw [][]ptx.Reg) [][]ptx.Reg {
	out := make([][]ptx.Reg, len(raw))
	for q, r := range raw {
		out[q] = gen.Widen(w.k, w.g.dt, r)
	}
	return out
}

// guardOf is vector q's guard in a batch's guards ok (nil: all in the
// part), or no register.
func guardOf(ok []ptx.Reg, q int) ptx.Reg {
	if ok == nil {
		return ptx.Reg{}
	}
	return ok[q]
}

// loadLabel is row row's label as a u32: an i32 label, or the low word
// of an i64 one (labels are below 2³¹ or ignore_index, whose low word is
// the i32's).
func loadLabel(k *ptx.Func, g geom, labels, row ptx.Reg) ptx.Reg {
	at := k.Add(ptx.U64, labels, k.MulWide(ptx.U32, row, ptx.Imm(g.labBytes)))
	return k.Ld(ptx.Global, ptx.U32, 1, ptx.At(at, 0), gen.LdNC)[0]
}

// labelLogit loads z[row, lab] where ok and lab < v (0 elsewhere: an
// ignored row or a label outside the row reads nothing).
func labelLogit(k *ptx.Func, g geom, logits, row, lab, ok ptx.Reg, o ...ptx.LdOpts) ptx.Reg {
	ok = k.And(ptx.Pred, ok, k.Setp("lt", ptx.U32, lab, ptx.Imm(g.v)))
	at := k.Add(ptx.U64, logits, labelOffset(k, g, row, lab))
	return gen.LdVals(k, ptx.Global, g.dt, 1, ptx.At(at, 0), ok, o...)[0]
}
