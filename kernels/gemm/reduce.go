package gemm

import (
	"github.com/gradtune/gradtune/contract"
	"slices"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// workspace is the split-K partials' buffer: splits slices of [r×c] f32.
const workspace = "ws"

// reduceBlock is the reduce kernel's CTA; each thread sums 4 elements.
const reduceBlock = 256

func workspaceBuffer(g problem, splits int) kernels.Buffer {
	return kernels.Buffer{Name: workspace, DType: dtype.F32, Elems: contract.Int(splits * g.r * g.c), Role: kernels.Scratch}
}

// emitReduce writes the split-K reduce: out = Σ_s ws[s] in split order (so
// the result does not depend on timing), rounded once to the output
// dtype. With pdl it is a dependent launch that waits for the GEMM in
// griddepcontrol.wait (sm_90).
func emitReduce(k *ptx.Func, g problem, splits int, pdl bool) {
	ws, out := gen.Param(k, "ws"), gen.Param(k, "out")
	k.ReqNTid(reduceBlock)
	if pdl {
		k.GridDepWait()
	}
	tid := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(reduceBlock), k.Mov(ptx.U32, ptx.TidX))
	i := k.Shl(ptx.U32, tid, ptx.Imm(2))
	ok := k.Setp("lt", ptx.U32, i, ptx.Imm(g.r*g.c))
	k.If(ok, func() {
		src := k.Add(ptx.U64, ws, k.MulWide(ptx.U32, i, ptx.Imm(4)))
		// A copy: the ld keeps the slice it is given as its operand list.
		sum := slices.Clone(k.Ld(ptx.Global, ptx.F32, 4, ptx.At(src, 0)))
		for s := 1; s < splits; s++ {
			v := k.Ld(ptx.Global, ptx.F32, 4, ptx.At(src, int64(s)*int64(g.r*g.c)*4))
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
	return kernels.Launch{Entry: entry, Grid: contract.Grid(gen.CeilDiv(g.r*g.c/4, reduceBlock), 1, 1),
		Block: [3]int{reduceBlock, 1, 1}, Dependent: pdl,
		Args: []kernels.Arg{{Buffer: workspace}, {Buffer: g.out}}}
}
