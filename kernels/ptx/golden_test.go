package ptx_test

import (
	"flag"
	"testing"

	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/kernels/ptx"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites the file under
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	ptxtest.Golden(t, *update, name, got)
}

// sumModule is a small hand-built module: a block reduction with a
// grid-stride For, warp shuffles, shared memory, a barrier and an atomic,
// and a bf16 fill kernel with dynamic shared memory, IfElse, While, a
// negative offset and a raw instruction.
func sumModule() (*ptx.Module, []*ptx.Func) {
	m := ptx.NewModule()

	k := m.Func("block_sum")
	k.ReqNTid(256)
	k.MaxNReg(64)
	k.MinNCTAPerSM(2)
	x := k.Cvta(ptx.Global, k.LdParam(k.Param("x", ptx.U64)))
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	n := k.LdParam(k.Param("n", ptx.U32))
	partial := k.SharedArray("partial", ptx.F32, 8, 16)
	tid := k.Mov(ptx.U32, ptx.TidX)
	first := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(256), tid)
	stride := k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.NCtaidX), ptx.Imm(256))
	acc := k.Mov(ptx.F32, ptx.F32Imm(0))
	k.Comment("grid-stride accumulation")
	k.For(ptx.U32, first, n, stride, func(i ptx.Reg) {
		v := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, x, k.MulWide(ptx.U32, i, ptx.Imm(4))), 0), ptx.LdOpts{NC: true})
		k.MovTo(acc, k.Add(ptx.F32, acc, v[0]))
	})
	reduce := func() {
		for _, lanes := range []int64{16, 8, 4, 2, 1} {
			o := k.ShflSync("bfly", acc, ptx.Imm(lanes), ptx.Imm(31), 0xffffffff)
			k.MovTo(acc, k.Add(ptx.F32, acc, k.BitsToF32(o)))
		}
	}
	reduce()
	lane := k.And(ptx.U32, tid, ptx.Imm(31))
	warp := k.Shr(ptx.U32, tid, ptx.Imm(5))
	k.If(k.Setp("eq", ptx.U32, lane, ptx.Imm(0)), func() {
		k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, warp, ptx.Imm(4), k.Mov(ptx.U32, partial)), 0), []ptx.Reg{acc})
	})
	k.BarSync(0)
	k.If(k.Setp("eq", ptx.U32, warp, ptx.Imm(0)), func() {
		q := k.Setp("lt", ptx.U32, lane, ptx.Imm(8))
		k.MovTo(acc, ptx.F32Imm(0))
		k.LdTo(ptx.Shared, ptx.F32, []ptx.Reg{acc}, ptx.At(k.Mad(ptx.U32, lane, ptx.Imm(4), k.Mov(ptx.U32, partial)), 0))
		k.Guard(q, false)
		reduce()
		k.If(k.Setp("eq", ptx.U32, lane, ptx.Imm(0)), func() {
			k.Red(ptx.Global, "add", ptx.F32, ptx.At(out, 0), acc)
		})
	})

	f := m.Func("fill_bf16")
	f.MaxNTid(128)
	dst := f.Cvta(ptx.Global, f.LdParam(f.Param("dst", ptx.U64)))
	stage := f.DynamicShared("stage", 16)
	t := f.Mov(ptx.U32, ptx.TidX)
	val := f.Cvt(ptx.F32, ptx.U32, "rn", t)
	half := f.Mul(ptx.F32, val, ptx.F32Imm(0.5))
	pair := f.PackHalf2(ptx.BF16x2, half, val)
	saddr := f.Add(ptx.U64, f.Mov(ptx.U64, stage), f.MulWide(ptx.U32, t, ptx.Imm(4)))
	f.St(ptx.Shared, ptx.B32, ptx.At(saddr, 0), []ptx.Reg{pair})
	f.BarSync(0)
	f.IfElse(f.Setp("ge", ptx.U32, t, ptx.Imm(64)), func() {
		w := f.Ld(ptx.Shared, ptx.B32, 2, ptx.At(saddr, -256))
		f.St(ptx.Global, ptx.B32, ptx.At(f.Add(ptx.U64, dst, f.MulWide(ptx.U32, t, ptx.Imm(8))), -512), w, ptx.LdOpts{Cache: "cs"})
	}, func() {
		c := f.Mov(ptx.U32, t)
		f.While(func() ptx.Reg { return f.Setp("ne", ptx.U32, c, ptx.Imm(0)) }, func() {
			f.Raw(0, 0, "shr.b32", c, c, ptx.Imm(1))
		})
	})
	return m, []*ptx.Func{k, f}
}

func TestGoldenModule(t *testing.T) {
	m, _ := sumModule()
	text := build(t, m)
	golden(t, "module.golden", text)
	checkLabels(t, text)
	checkRegs(t, text)
}
