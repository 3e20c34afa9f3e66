package lora

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// finalBlock is a finalize kernel's CTA; each thread takes 4 elements.
const finalBlock = 256

// finalArg is one f32 accumulator (a State buffer) a finalize kernel
// walks: rounded into its output (out; "" for one that is only zeroed),
// then zeroed, so that the next run finds it as this one did; n is its
// element count, a multiple of 8.
type finalArg struct {
	acc, out string
	n        configs.Expr
}

// finalArgs are the finalize's accumulators: db32 and da32 into dB and
// dA, and dh32 (zeroed only) where the dY kernel's splits add into it;
// none with fold, whose x kernel finalizes.
func (g geom) finalArgs(t configs.Expr) []finalArg {
	if g.fold {
		return nil
	}
	end := []finalArg{{"db32", "db", configs.Int(g.out * g.r)}, {"da32", "da", configs.Int(g.r * g.in)}}
	if g.osplit > 1 {
		end = append(end, finalArg{"dh32", "", t.TimesInt(g.r)})
	}
	return end
}

// emitFinalize writes a kernel over the regions laid end to end: its
// parameters are, per region, the accumulator, the output (where the
// region has one) and the count (u32). Thread i takes elements 4i..4i+3
// of the concatenation; a region's count is a multiple of 4, so they lie
// in one region. With pdl it lets the next launch begin and waits for
// the previous ones before anything else.
func emitFinalize(k *ptx.Func, dt dtype.DType, regions []finalArg, pdl bool) {
	type regs struct{ acc, out, n ptx.Reg }
	var rs []regs
	for i, r := range regions {
		var x regs
		x.acc = gen.Param(k, accName(i))
		if r.out != "" {
			x.out = gen.Param(k, outName(i))
		}
		x.n = k.LdParam(k.Param(countName(i), ptx.U32))
		rs = append(rs, x)
	}
	k.ReqNTid(finalBlock)
	if pdl {
		k.GridDepLaunch()
		k.GridDepWait()
	}
	e := k.Shl(ptx.U32, k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(finalBlock), k.Mov(ptx.U32, ptx.TidX)), ptx.Imm(2))
	for i := range regions {
		x := rs[i]
		// e is below 2³¹ + the counts before; past this region it wraps
		// past every later count.
		k.If(k.Setp("lt", ptx.U32, e, x.n), func() { roundZero(k, dt, x.acc, x.out, e) })
		if i+1 < len(regions) {
			e = k.Sub(ptx.U32, e, x.n)
		}
	}
}

// roundZero rounds the f32 vector of four at element e of acc into out
// (the dtype; none where out is not a register) and zeroes it. o are the
// load's options.
func roundZero(k *ptx.Func, dt dtype.DType, acc, out, e ptx.Reg, o ...ptx.LdOpts) {
	src := k.Add(ptx.U64, acc, k.MulWide(ptx.U32, e, ptx.Imm(4)))
	if out.Valid() {
		v := k.Ld(ptx.Global, ptx.F32, 4, ptx.At(src, 0), o...)
		gen.StVals(k, dt, ptx.At(k.Add(ptx.U64, out, k.MulWide(ptx.U32, e, ptx.Imm(dt.Size()))), 0), v, ptx.Reg{})
	}
	z := k.Mov(ptx.F32, ptx.F32Imm(0))
	k.St(ptx.Global, ptx.F32, ptx.At(src, 0), []ptx.Reg{z, z, z, z})
}

func accName(i int) string   { return "acc" + string(rune('0'+i)) }
func outName(i int) string   { return "out" + string(rune('0'+i)) }
func countName(i int) string { return "n" + string(rune('0'+i)) }

// finalLaunch launches a finalize kernel over args' regions.
func finalLaunch(entry string, args []finalArg) kernels.Launch {
	total := configs.Int(0)
	var as []kernels.Arg
	for _, a := range args {
		as = append(as, kernels.Arg{Buffer: a.acc})
		if a.out != "" {
			as = append(as, kernels.Arg{Buffer: a.out})
		}
		as = append(as, kernels.Arg{Scalar: a.n, Type: configs.U32})
		total = total.Plus(a.n)
	}
	return kernels.Launch{Entry: entry, Grid: [3]configs.Expr{configs.CeilDiv(total, configs.Int(4*finalBlock)), configs.Int(1), configs.Int(1)},
		Block: [3]int{finalBlock, 1, 1}, Args: as}
}
