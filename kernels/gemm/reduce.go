package gemm

import (
	"slices"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// workspace is the split-K partials' buffer: splits slices of [r×c] f32.
const workspace = "ws"

// reduceBlock is the reduce kernel's CTA; each thread sums 4 elements.
const reduceBlock = 256

// SplitRowsMax is the most rows a split-K program serves when its rows are
// the runtime dim (dX: the tokens), so that its workspace, rows × columns
// × splits f32, grows with them: the rows at which the split-K rules
// still admit it, its tiles (bm rows by tileCols) under one wave and
// times splits at most two. Past it the rules choose an unsplit program,
// and a table lookup finds one.
func SplitRowsMax(bm, tileCols, splits int) int {
	return min((Wave-1)/tileCols, 2*Wave/(splits*tileCols)) * bm
}

// splitRuntime sets program p's bound on m where p splits K over rows
// that are m (the rows of g's output are the tokens), its tiles bm rows
// by bn of g's columns.
func splitRuntime(p *kernels.Program, g problem, bm, bn, splits int) {
	if splits > 1 && g.mRows {
		p.RuntimeMax = map[string]int{tokenDim: SplitRowsMax(bm, gen.CeilDiv(g.c, bn), splits)}
	}
}

// Bound sets program p's bound on m (Program.RuntimeMax) for a GEMM whose
// split partials r adds, its tiles bm rows by bn columns.
func (r SplitKReduce) Bound(p *kernels.Program, bm, bn int) {
	splitRuntime(p, r.problem(), bm, bn, r.Splits)
}

func workspaceBuffer(g problem, splits int) kernels.Buffer {
	return kernels.Buffer{Name: workspace, DType: dtype.F32, Elems: g.rExpr().TimesInt(splits * g.c), Role: kernels.Scratch}
}

// emitReduce writes the split-K reduce: out = Σ_s ws[s] in split order (so
// the result does not depend on timing), rounded once to the output
// dtype. With pdl it is a dependent launch that waits for the GEMM in
// griddepcontrol.wait (sm_90). Where r is M the kernel takes it as its
// parameter m (reduceLaunch passes it).
func emitReduce(k *ptx.Func, g problem, splits int, pdl bool) {
	ws, out := gen.Param(k, "ws"), gen.Param(k, "out")
	elems := immExt(g.r * g.c)
	if g.mRows {
		elems = ext{reg: k.LdParam(mParam(k))}.times(k, g.c)
	}
	k.ReqNTid(reduceBlock)
	if pdl {
		k.GridDepWait()
	}
	tid := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(reduceBlock), k.Mov(ptx.U32, ptx.TidX))
	i := k.Shl(ptx.U32, tid, ptx.Imm(2))
	ok := k.Setp("lt", ptx.U32, i, elems.op())
	k.If(ok, func() {
		src := k.Add(ptx.U64, ws, k.MulWide(ptx.U32, i, ptx.Imm(4)))
		// slice s of the workspace: an immediate offset, or a 64-bit
		// stride (the slices of a runtime r may pass 2³² bytes)
		at := func(s int) ptx.Addr { return ptx.At(src, int64(s)*int64(elems.v)*4) }
		if elems.runtime() {
			stride := k.MulWide(ptx.U32, elems.reg, ptx.Imm(4))
			slice := src
			at = func(s int) ptx.Addr {
				if s > 0 {
					slice = k.Add(ptx.U64, slice, stride)
				}
				return ptx.At(slice, 0)
			}
		}
		// A copy: the ld keeps the slice it is given as its operand list.
		sum := slices.Clone(k.Ld(ptx.Global, ptx.F32, 4, at(0)))
		n := splits
		if planted.dropSplit {
			n--
		}
		for s := 1; s < n; s++ {
			v := k.Ld(ptx.Global, ptx.F32, 4, at(s))
			for j := range sum {
				sum[j] = k.Add(ptx.F32, sum[j], v[j])
			}
		}
		dst := k.Add(ptx.U64, out, k.MulWide(ptx.U32, i, ptx.Imm(g.od.Size())))
		gen.StVals(k, g.od, ptx.At(dst, 0), sum, ptx.Reg{})
	})
}

// reduceLaunch launches the reduce over the workspace into the output.
func reduceLaunch(entry string, g problem, pdl bool) kernels.Launch {
	l := kernels.Launch{Entry: entry, Grid: [3]configs.Expr{configs.CeilDiv(g.rExpr().TimesInt(g.c), configs.Int(4*reduceBlock)), configs.Int(1), configs.Int(1)},
		Block: [3]int{reduceBlock, 1, 1}, Dependent: pdl,
		Args: []kernels.Arg{{Buffer: workspace}, {Buffer: g.out}}}
	if g.mRows {
		l.Args = append(l.Args, g.mArg())
	}
	return l
}

// SplitKReduce is the split-K reduce for another family's GEMM whose
// output is [m×Cols], m the token dim at run time (nf4_gemm_bwd's
// register-A path): the kernel gemm_bwd's split-K runs, summing Splits
// f32 slices of the workspace (Workspace; slice s holds the partial sums
// of split s, row-major) in split order into Out, rounded once to
// OutType.
type SplitKReduce struct {
	Cols, Splits int
	Out          string
	OutType      dtype.DType
}

// WorkspaceName is the name of the partials' buffer.
const WorkspaceName = workspace

func (r SplitKReduce) problem() problem {
	return problem{c: r.Cols, mRows: true, out: r.Out, od: r.OutType}
}

// Workspace is the partials' buffer: Splits slices of m×Cols f32.
func (r SplitKReduce) Workspace() kernels.Buffer { return workspaceBuffer(r.problem(), r.Splits) }

// Emit writes the reduce into k (parameters ws, out and m).
func (r SplitKReduce) Emit(k *ptx.Func) { emitReduce(k, r.problem(), r.Splits, false) }

// Launch is the reduce's launch of entry.
func (r SplitKReduce) Launch(entry string) kernels.Launch {
	return reduceLaunch(entry, r.problem(), false)
}
