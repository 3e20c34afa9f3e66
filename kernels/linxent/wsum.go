package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The column sums Σ_c w_c (label smoothing's share of dX) take two
// launches: wsumSplits CTAs per 32 columns (the last group's lanes past h
// idle) each sum a range of
// ⌈v/wsumSplits⌉ rows of w (eight rows at a time, one column per lane)
// into partials [wsumSplits×h] f32, then one thread per column adds its
// partials in split order (a fixed order: the same sum every run) into
// the last h words of the scratch buffer wsum.
const (
	wsumSplits = 32
	wsumBlock  = 256 // 8 rows × 32 columns
)

// wsumKernels are the two column-sum kernels of a shape.
type wsumKernels struct {
	dt   dtype.DType
	v, h int
}

func (ws wsumKernels) partEntry() string { return fmt.Sprintf("%s_wsum_part_%v", prefix, ws.dt) }
func (ws wsumKernels) sumEntry() string  { return fmt.Sprintf("%s_wsum_%v", prefix, ws.dt) }

// buffer is the scratch the kernels share: the partials, then the sums.
func (ws wsumKernels) buffer() kernels.Buffer {
	return kernels.Buffer{Name: "wsum", DType: dtype.F32, Elems: configs.Int((wsumSplits + 1) * ws.h), Role: kernels.Scratch}
}

// sums is the argument of the sums' address.
func (ws wsumKernels) sums() kernels.Arg {
	return kernels.Arg{Buffer: "wsum", Offset: configs.Int(4 * wsumSplits * ws.h)}
}

// emit adds both kernels to m and returns their launches.
func (ws wsumKernels) emit(m *ptx.Module) []kernels.Launch {
	ws.emitPart(m.Func(ws.partEntry()))
	ws.emitSum(m.Func(ws.sumEntry()))
	one := configs.Int(1)
	return []kernels.Launch{
		{Entry: ws.partEntry(), Grid: [3]configs.Expr{configs.Int(gen.CeilDiv(ws.h, 32) * wsumSplits), one, one}, Block: [3]int{wsumBlock, 1, 1},
			Args: []kernels.Arg{{Buffer: "w"}, {Buffer: "wsum"}}},
		{Entry: ws.sumEntry(), Grid: [3]configs.Expr{configs.Int(gen.CeilDiv(ws.h, 64)), one, one}, Block: [3]int{64, 1, 1},
			Args: []kernels.Arg{{Buffer: "wsum"}, ws.sums()}},
	}
}

func (ws wsumKernels) emitPart(k *ptx.Func) {
	k.ReqNTid(wsumBlock)
	w, part := gen.Param(k, "w"), gen.Param(k, "part")
	cta, tid := k.Mov(ptx.U32, ptx.CtaidX), k.Mov(ptx.U32, ptx.TidX)
	groups := gen.CeilDiv(ws.h, 32)
	sp := k.Div(ptx.U32, cta, ptx.Imm(groups))
	col := k.Mad(ptx.U32, k.Sub(ptx.U32, cta, k.Mul(ptx.U32, sp, ptx.Imm(groups))), ptx.Imm(32), k.And(ptx.U32, tid, ptx.Imm(31)))
	colOK := k.Setp("lt", ptx.U32, col, ptx.Imm(ws.h))
	ty := k.Shr(ptx.U32, tid, ptx.Imm(5))
	per := gen.CeilDiv(ws.v, wsumSplits)
	r0 := k.Mul(ptx.U32, sp, ptx.Imm(per))
	// a lane past h sums no row (its loop is empty), and stores nothing
	r1 := k.Selp(ptx.U32, k.Min(ptx.U32, k.Add(ptx.U32, r0, ptx.Imm(per)), ptx.Imm(ws.v)), ptx.Imm(0), colOK)
	sum := k.Mov(ptx.F32, ptx.F32Imm(0))
	k.For(ptx.U32, k.Add(ptx.U32, r0, ty), r1, ptx.Imm(8), func(r ptx.Reg) {
		at := k.Add(ptx.U64, w, k.MulWide(ptx.U32, k.Mad(ptx.U32, r, ptx.Imm(ws.h), col), ptx.Imm(ws.dt.Size())))
		k.MovTo(sum, k.Add(ptx.F32, sum, gen.LdVals(k, ptx.Global, ws.dt, 1, ptx.At(at, 0), ptx.Reg{}, gen.LdNC)[0]))
	})
	slots := k.Mov(ptx.U32, k.SharedArray("rows", ptx.F32, wsumBlock, 16))
	k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, tid, ptx.Imm(4), slots), 0), []ptx.Reg{sum})
	k.BarSync(0)
	k.If(k.Setp("lt", ptx.U32, tid, ptx.Imm(32)), func() {
		var rows []ptx.Reg
		for y := range wsumBlock / 32 {
			rows = append(rows, gen.LdF32(k, ptx.Shared, ptx.At(k.Mad(ptx.U32, tid, ptx.Imm(4), slots), int64(128*y)), 1, ptx.Reg{})[0])
		}
		at := k.Add(ptx.U64, part, k.MulWide(ptx.U32, k.Mad(ptx.U32, sp, ptx.Imm(ws.h), col), ptx.Imm(4)))
		k.St(ptx.Global, ptx.F32, ptx.At(at, 0), []ptx.Reg{gen.SumTree(k, rows)})
		k.Guard(colOK, false)
	})
}

func (ws wsumKernels) emitSum(k *ptx.Func) {
	k.ReqNTid(64)
	part, out := gen.Param(k, "part"), gen.Param(k, "sums")
	col := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(64), k.Mov(ptx.U32, ptx.TidX))
	k.If(k.Setp("lt", ptx.U32, col, ptx.Imm(ws.h)), func() {
		at := k.Add(ptx.U64, part, k.MulWide(ptx.U32, col, ptx.Imm(4)))
		sum := gen.LdF32(k, ptx.Global, ptx.At(at, 0), 1, ptx.Reg{})[0]
		for sp := 1; sp < wsumSplits; sp++ {
			sum = k.Add(ptx.F32, sum, gen.LdF32(k, ptx.Global, ptx.At(at, int64(4*sp*ws.h)), 1, ptx.Reg{})[0])
		}
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, out, k.MulWide(ptx.U32, col, ptx.Imm(4))), 0), []ptx.Reg{sum})
	})
}
