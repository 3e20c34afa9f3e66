package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// chunk is chunk j of the vocabulary: w's rows [c0, c0+w), its logits
// and probabilities rows of ld = padded(w) elements.
type chunk struct {
	j, c0, w, ld int
	first        bool
}

// chunksOf cuts the vocabulary into chunks of p.Chunk rows, the last one
// shorter.
func chunksOf(s Shape, p Params) []chunk {
	var out []chunk
	for c0 := 0; c0 < s.V; c0 += p.Chunk {
		w := min(p.Chunk, s.V-c0)
		out = append(out, chunk{j: len(out), c0: c0, w: w, ld: padded(w), first: c0 == 0})
	}
	return out
}

// wOffset is the byte offset of the chunk's first row of w.
func (c chunk) wOffset(s Shape) int { return c.c0 * s.H * s.DType.Size() }

// zGEMM is the chunk's logits GEMM, z[t×ld] = x·w[c0:c0+w]ᵀ in f32 (the
// pad columns zero), and its variant.
func (c chunk) zGEMM(s Shape, p Params) (gemm.Custom, gemm.Params, error) {
	g := gemm.Custom{Entry: fmt.Sprintf("%s_z%d_%v", prefix, c.ld, s.DType), Dim: Dim, Cols: c.ld, Red: s.H, In: s.DType,
		A:   gemm.Operand{Buffer: "x", KMajor: true, LD: s.H},
		B:   gemm.Operand{Buffer: "w", KMajor: true, LD: s.H, Offset: c.wOffset(s), Rows: c.w},
		Out: "z", OutDT: dtype.F32}
	gp, err := g.Params(p.passRows(s), p.zTiling())
	return g, gp, err
}

// dxGEMM is the chunk's gradient GEMM, acc[t×h] = α·acc + P·w[c0:c0+w]
// (the first chunk's stores P·w), and its variant.
func (c chunk) dxGEMM(s Shape, p Params, first bool) (gemm.Custom, gemm.Params, error) {
	g := gemm.Custom{Entry: fmt.Sprintf("%s_dx%d_%v", prefix, c.ld, s.DType), Dim: Dim, Cols: s.H, Red: c.ld, In: s.DType,
		A:   gemm.Operand{Buffer: "p", KMajor: true, LD: c.ld},
		B:   gemm.Operand{Buffer: "w", LD: s.H, Offset: c.wOffset(s), Rows: c.w},
		Out: "acc", OutDT: dtype.F32}
	switch {
	case first:
	case p.Ref == refFixed:
		g.Entry += "_red"
		g.Reduce = true
	default:
		g.Entry += "_acc"
		g.Scale = "alpha"
	}
	gp, err := g.Params(p.passRows(s), gemm.Tiling{BM: p.DBM, BN: p.DBN, Persistent: p.DPers})
	return g, gp, err
}

// dwGEMM is the chunk's dW GEMM, dw[c0:c0+w] (+)= Gᵀ·x in f32 with G the
// chunk's gradient of the logits ([t×ld] in p), t the reduction, and its
// variant.
func (c chunk) dwGEMM(s Shape, p Params) (gemm.Custom, gemm.Params, error) {
	g := gemm.Custom{Entry: fmt.Sprintf("%s_dw%d_%v", prefix, c.w, s.DType), Dim: Dim, M: c.w, Cols: s.H, In: s.DType,
		A:   gemm.Operand{Buffer: "p", LD: c.ld},
		B:   gemm.Operand{Buffer: "x", LD: s.H},
		Out: "dw", OutDT: dtype.F32, OutOffset: c.c0 * s.H * 4, Accumulate: s.DW == dwAdd}
	gp, err := g.Params(s.T, gemm.Tiling{BM: p.WBM, BN: p.WBN})
	return g, gp, err
}

// prefix starts every kernel's name.
const prefix = "linear_cross_entropy_bwd"

// statWords is the f32 words of a row's statistics: the running maximum
// times log₂e (mL), Σ 2^(z·log₂e − mL), z[label] and Σz (label
// smoothing; 0 without).
const statWords = 4

// rowsGrid is the grid of the kernels that take one row a CTA: t CTAs.
func rowsGrid() [3]configs.Expr {
	return [3]configs.Expr{configs.Var(Dim), configs.Int(1), configs.Int(1)}
}

// finishBlock is the finishing kernel's CTA.
const finishBlock = 128

// Emit writes the program: per chunk the logits GEMM, the softmax kernel
// and the gradient GEMM, then the finishing kernel; kernels that only
// differ in the chunk's offset are one entry launched with other tensor
// maps.
func (f family) Emit(s Shape, p Params) (kernels.Program, error) {
	return emit(s, p, bugs{})
}

// bugs are the planted bugs the tests emit (none in a real program).
type bugs struct {
	noRescale bool // the gradient GEMM does not rescale the accumulator
	labelOff  bool // z[label] taken one column late
	noOneHot  bool // the dW pass's gradient leaves out −g at the label
	noWSum    bool // dx leaves out label smoothing's −g·ε/v·Σ_c w_c
	noZFactor bool // dx leaves out z-loss's factor 1 + 2λ·lse
	noFlag    bool // the epilogue path does not flag a clamped row for repair
	// samePassRows: every pass's gradient GEMMs add into the first pass's rows of acc
	samePassRows bool
	// clamp, when not 0, replaces clampOf's bound (not a bug: a low bound sends
	// the rows of a test's inputs through the repair kernel)
	clamp float64
}

func emit(s Shape, p Params, b bugs) (kernels.Program, error) {
	m := ptx.NewModule()
	emitted := map[string]bool{}
	var launches []kernels.Launch
	addGEMM := func(g gemm.Custom, gp gemm.Params, err error) error {
		if err != nil {
			return err
		}
		if !emitted[g.Entry] {
			emitted[g.Entry] = true
			if err := gemm.AddCustom(m, g, gp); err != nil {
				return err
			}
		}
		launches = append(launches, g.Launch(gp))
		return nil
	}
	grid := rowsGrid()
	tm := termsOf(s)
	ws := wsumKernels{dt: s.DType, v: s.V, h: s.H}
	if tm.eps > 0 {
		launches = append(launches, ws.emit(m)...)
	}
	// coefArgs are the finishing and gradient kernels' inputs after
	// labels and stats.
	coefArgs := []kernels.Arg{{Buffer: "dloss"}, {Buffer: "n_valid"}}
	if tm.zloss {
		coefArgs = append(coefArgs, kernels.Arg{Buffer: "zloss_scale"})
	}
	if p.Softmax == softmaxEpilogue {
		return emitOnline(m, s, p, b, ws, addGEMM, &launches)
	}
	maxLD := 0
	for _, c := range chunksOf(s, p) {
		maxLD = max(maxLD, c.ld)
		if err := addGEMM(c.zGEMM(s, p)); err != nil {
			return kernels.Program{}, err
		}
		sm := softmax{dt: s.DType, w: c.w, ld: c.ld, first: c.first, block: p.SBlock, tm: tm, labelOff: b.labelOff}
		if !emitted[sm.entry()] {
			emitted[sm.entry()] = true
			sm.emit(m.Func(sm.entry()))
		}
		launches = append(launches, kernels.Launch{Entry: sm.entry(), Grid: grid, Block: [3]int{p.SBlock, 1, 1},
			Args: []kernels.Arg{{Buffer: "z"}, {Buffer: "p"}, {Buffer: "labels"}, {Buffer: "stats"}, {Buffer: "alpha"},
				{Scalar: configs.Int(c.c0), Type: configs.U32}}})
		if err := addGEMM(c.dxGEMM(s, p, c.first || b.noRescale)); err != nil {
			return kernels.Program{}, err
		}
	}
	fin := finish{dt: s.DType, h: s.H, tm: tm, noWSum: b.noWSum, noZFactor: b.noZFactor}
	launches = append(launches, fin.add(m, ws))
	if s.DW != dwNone {
		cs := chunksOf(s, p)
		for i := len(cs) - 1; i >= 0; i-- {
			c := cs[i]
			if i != len(cs)-1 { // the last chunk's logits are still in z
				if err := addGEMM(c.zGEMM(s, p)); err != nil {
					return kernels.Program{}, err
				}
			}
			gk := gradKernel{dt: s.DType, w: c.w, ld: c.ld, block: p.SBlock, tm: tm, noOneHot: b.noOneHot}
			if !emitted[gk.entry()] {
				emitted[gk.entry()] = true
				gk.emit(m.Func(gk.entry()))
			}
			args := append([]kernels.Arg{{Buffer: "z"}, {Buffer: "p"}, {Buffer: "labels"}, {Buffer: "stats"}}, coefArgs...)
			launches = append(launches, kernels.Launch{Entry: gk.entry(), Grid: grid, Block: [3]int{p.SBlock, 1, 1},
				Args: append(args, kernels.Arg{Scalar: configs.Int(c.c0), Type: configs.U32})})
			if err := addGEMM(c.dwGEMM(s, p)); err != nil {
				return kernels.Program{}, err
			}
		}
	}
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	t := configs.Var(Dim)
	prog := kernels.Program{PTX: built.String(), Launches: launches, RuntimeDims: []string{Dim}, Buffers: []kernels.Buffer{
		{Name: "z", DType: dtype.F32, Elems: t.TimesInt(maxLD), Role: kernels.Scratch},
		{Name: "p", DType: s.DType, Elems: t.TimesInt(maxLD), Role: kernels.Scratch},
		{Name: "acc", DType: dtype.F32, Elems: t.TimesInt(s.H), Role: kernels.Scratch},
		{Name: "alpha", DType: dtype.F32, Elems: t, Role: kernels.Scratch},
		{Name: "stats", DType: dtype.F32, Elems: t.TimesInt(statWords), Role: kernels.Scratch},
	}}
	if tm.eps > 0 {
		prog.Buffers = append(prog.Buffers, ws.buffer())
	}
	return prog, nil
}
