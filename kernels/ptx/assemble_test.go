package ptx_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// everything writes a kernel that calls every helper of the builder at
// least once in a form that runs on sm_80.
func everything(m *ptx.Module) *ptx.Func {
	k := m.Func("everything")
	k.ReqNTid(128)
	k.MaxNReg(128)
	k.MinNCTAPerSM(1)
	in := k.Cvta(ptx.Global, k.LdParam(k.Param("in", ptx.U64)))
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	n := k.LdParam(k.Param("n", ptx.U32))
	scale := k.LdParam(k.Param("scale", ptx.F32))
	dscale := k.LdParam(k.Param("dscale", ptx.F64))
	tile := k.SharedArray("tile", ptx.F32, 512, 16)
	halves := k.SharedArray("halves", ptx.F16, 256, 0)
	dyn := k.DynamicShared("dyn", 16)

	k.Comment("indices: %d threads", k.ReqNTidCount())
	tid := k.Mov(ptx.U32, ptx.TidX)
	ctaid := k.Mov(ptx.U32, ptx.CtaidX)
	_ = k.Mov(ptx.U32, ptx.TidY)
	_ = k.Mov(ptx.U32, ptx.NTidX)
	_ = k.Mov(ptx.U32, ptx.LaneID)
	_ = k.Mov(ptx.U32, ptx.WarpID)
	_ = k.Mov(ptx.U32, ptx.SMID)
	gid := k.Mad(ptx.U32, ctaid, ptx.Imm(128), tid)
	off := k.MulWide(ptx.U32, gid, ptx.Imm(16))
	soff := k.MulWide(ptx.S32, k.Sub(ptx.S32, gid, ptx.Imm(1)), ptx.Imm(-4))
	addr := k.Add(ptx.U64, in, off)
	oaddr := k.Add(ptx.U64, out, off)
	inRange := k.Setp("lt", ptx.U32, gid, n)

	k.Comment("vector loads and stores, global")
	v4 := make([]ptx.Reg, 4)
	for i := range v4 {
		v4[i] = k.Mov(ptx.F32, ptx.F32Imm(0))
	}
	k.LdTo(ptx.Global, ptx.F32, v4, ptx.At(addr, 0), ptx.LdOpts{NC: true})
	k.Guard(inRange, false)
	v2 := k.Ld(ptx.Global, ptx.F32, 2, ptx.At(addr, 16), ptx.LdOpts{Cache: "cg"})
	w4 := k.Ld(ptx.Global, ptx.B32, 4, ptx.At(addr, 32), ptx.LdOpts{NC: true, Cache: "ca"})
	d2 := k.Ld(ptx.Global, ptx.F64, 2, ptx.At(addr, -16))
	h2 := k.Ld(ptx.Global, ptx.B16, 2, ptx.At(k.Add(ptx.U64, in, soff), 0))
	k.St(ptx.Global, ptx.F32, ptx.At(oaddr, 0), v4, ptx.LdOpts{Cache: "wb"})
	k.St(ptx.Global, ptx.F32, ptx.At(oaddr, 16), v2)
	k.St(ptx.Global, ptx.B32, ptx.At(oaddr, 32), w4, ptx.LdOpts{Cache: "cs"})
	k.St(ptx.Global, ptx.F64, ptx.At(oaddr, 48), d2)
	k.Guard(inRange, true)
	hint := k.Ld(ptx.Global, ptx.F32, 4, ptx.At(addr, 64), ptx.LdOpts{NC: true, Cache: "L1::no_allocate.L2::256B"})
	k.St(ptx.Global, ptx.F32, ptx.At(oaddr, 64), hint, ptx.LdOpts{Cache: "L1::no_allocate"})

	k.Comment("shared memory: static arrays by symbol and 32-bit register, dynamic by 64-bit register")
	ts := k.Mad(ptx.U32, tid, ptx.Imm(16), k.Mov(ptx.U32, tile))
	k.St(ptx.Shared, ptx.F32, ptx.At(ts, 0), v4)
	k.St(ptx.Shared, ptx.F32, ptx.At(tile, 2040), []ptx.Reg{v2[0], v2[1]})
	k.St(ptx.Shared, ptx.F16, ptx.At(k.Mad(ptx.U32, tid, ptx.Imm(4), k.Mov(ptx.U32, halves)), 0), h2)
	ds := k.Add(ptx.U64, k.Mov(ptx.U64, dyn), k.MulWide(ptx.U32, tid, ptx.Imm(8)))
	k.St(ptx.Shared, ptx.F64, ptx.At(ds, 0), []ptx.Reg{d2[0]})
	k.BarSync(0)
	sv := k.Ld(ptx.Shared, ptx.F32, 4, ptx.At(ts, 0))
	sh := k.Ld(ptx.Shared, ptx.B16, 2, ptx.At(halves, 4))
	sd := k.Ld(ptx.Shared, ptx.F64, 1, ptx.At(ds, 8))
	_ = k.Cvta(ptx.Shared, in)

	k.Comment("arithmetic")
	a := k.Add(ptx.F32, sv[0], sv[1])
	a = k.Sub(ptx.F32, a, sv[2])
	a = k.Mul(ptx.F32, a, scale)
	a = k.Fma(ptx.F32, a, sv[3], ptx.F32Imm(0.25))
	a = k.Mad(ptx.F32, a, a, v4[0])
	a = k.Div(ptx.F32, a, k.Max(ptx.F32, k.Abs(ptx.F32, v4[1]), ptx.F32Imm(1)))
	a = k.Min(ptx.F32, k.Neg(ptx.F32, a), ptx.F32Imm(100))
	a = k.Rcp(ptx.F32, k.Add(ptx.F32, a, ptx.F32Imm(1e-3)))
	a = k.Sqrt(ptx.F32, k.Abs(ptx.F32, a))
	a = k.Ex2Approx(a)
	a = k.RsqrtApprox(k.Add(ptx.F32, a, ptx.F32Imm(1)))
	a = k.TanhApprox(a)
	d := k.Fma(ptx.F64, sd[0], dscale, ptx.F64Imm(0.5))
	d = k.Div(ptx.F64, k.Rcp(ptx.F64, d), k.Sqrt(ptx.F64, k.Abs(ptx.F64, d)))
	d = k.Mul(ptx.F64, k.Neg(ptx.F64, d), d)
	i := k.Mad(ptx.S32, k.Div(ptx.S32, gid, ptx.Imm(3)), ptx.Imm(-7), k.Abs(ptx.S32, k.Neg(ptx.S32, gid)))
	i = k.Min(ptx.S32, k.Max(ptx.S32, i, ptx.Imm(-5)), ptx.Imm(5))
	u := k.Div(ptx.U32, k.Shl(ptx.U32, gid, ptx.Imm(3)), ptx.Imm(5))
	u = k.Xor(ptx.U32, k.Or(ptx.U32, k.And(ptx.B32, u, ptx.Imm(0xff)), ptx.Imm(0x100)), tid)
	u = k.Shr(ptx.B32, k.Shr(ptx.S32, u, ptx.Imm(1)), tid)
	ud := k.Mad(ptx.U64, off, ptx.Imm(3), k.Shl(ptx.B64, off, ptx.Imm(2)))
	hf := k.Cvt(ptx.F32, ptx.F16, "", sh[0])
	hh := k.Fma(ptx.F16, sh[0], sh[1], sh[0])
	hh = k.Neg(ptx.F16, k.Sub(ptx.F16, k.Mul(ptx.F16, hh, hh), k.Add(ptx.F16, hh, sh[1])))
	pk := k.Mov(ptx.F16x2, w4[0])
	pk = k.Fma(ptx.F16x2, pk, pk, k.Add(ptx.F16x2, pk, w4[1]))

	k.Comment("conversions")
	bfv := k.Cvt(ptx.BF16, ptx.F32, "rn", a)
	fromBF := k.Cvt(ptx.F32, ptx.BF16, "", bfv)
	toH := k.Cvt(ptx.F16, ptx.F32, "rz", fromBF)
	fi := k.Cvt(ptx.S32, ptx.F32, "rni", hf)
	fu := k.Cvt(ptx.U32, ptx.F16, "rzi", toH)
	itof := k.Cvt(ptx.F32, ptx.S32, "rn", k.Add(ptx.S32, fi, i))
	widen := k.Cvt(ptx.F64, ptx.F32, "", itof)
	narrow := k.Cvt(ptx.F32, ptx.F64, "rn", k.Add(ptx.F64, widen, d))
	rint := k.Cvt(ptx.F32, ptx.F32, "rmi", narrow)
	u64 := k.Cvt(ptx.U64, ptx.U32, "", k.Add(ptx.U32, fu, u))
	s16 := k.Cvt(ptx.S16, ptx.S32, "", i)
	bf2 := k.PackHalf2(ptx.BF16x2, rint, a)
	f2 := k.PackHalf2(ptx.F16x2, a, rint)
	lo, hi := k.Unpack(bf2)
	flo := k.Cvt(ptx.F32, ptx.BF16, "", lo)
	fhi := k.BitsToF32(k.Shl(ptx.B32, k.Cvt(ptx.U32, ptx.U16, "", hi), ptx.Imm(16)))

	k.Comment("predicates and selects")
	p1 := k.Setp("gtu", ptx.F32, flo, fhi)
	p2 := k.Setp("nan", ptx.F32, flo, flo)
	p3 := k.Setp("ge", ptx.S32, i, ptx.Imm(0))
	p4 := k.Setp("ne", ptx.B64, ud, u64)
	p5 := k.Setp("le", ptx.F16, hh, sh[0])
	p6 := k.Setp("eq", ptx.F64, d, ptx.F64Imm(0))
	p := k.Or(ptx.Pred, k.And(ptx.Pred, p1, p2), k.Xor(ptx.Pred, p3, p4))
	p = k.Or(ptx.Pred, p, k.And(ptx.Pred, p5, p6))
	r := k.Selp(ptx.F32, flo, fhi, p)
	r16 := k.Selp(ptx.F16, hh, toH, p3)
	rs := k.Selp(ptx.S16, s16, ptx.Imm(-1), p4)
	rb := k.Selp(ptx.B32, f2, pk, p5)

	k.Comment("warp shuffles")
	sum := k.Mov(ptx.F32, r)
	for _, mode := range []string{"bfly", "down", "up", "idx"} {
		o := k.ShflSync(mode, sum, ptx.Imm(1), ptx.Imm(31), 0xffffffff)
		k.MovTo(sum, k.Add(ptx.F32, sum, k.BitsToF32(o)))
	}
	low := k.Setp("lt", ptx.U32, k.Mov(ptx.U32, ptx.LaneID), ptx.Imm(16))
	half := k.ShflSync("bfly", rb, ptx.Imm(2), ptx.Imm(0x1f), 0x0000ffff)
	k.Guard(low, false) // lanes 0..15 only: the mask's lanes

	k.Comment("atomics and reductions")
	k.Atom(ptx.Global, "add", ptx.F32, ptx.At(out, 0), sum)
	k.Atom(ptx.Global, "add", ptx.U32, ptx.At(out, 4), ptx.Imm(1))
	k.Atom(ptx.Global, "add", ptx.F64, ptx.At(out, 8), d)
	k.Atom(ptx.Global, "add", ptx.F16, ptx.At(out, 16), r16)
	k.Atom(ptx.Global, "min", ptx.S32, ptx.At(out, 20), i)
	k.Atom(ptx.Global, "max", ptx.U64, ptx.At(out, 24), ud)
	k.Atom(ptx.Global, "inc", ptx.U32, ptx.At(out, 32), ptx.Imm(1000))
	k.Atom(ptx.Global, "exch", ptx.B32, ptx.At(out, 36), half)
	k.Atom(ptx.Global, "or", ptx.B64, ptx.At(out, 40), ud)
	k.Atom(ptx.Shared, "add", ptx.U32, ptx.At(ts, 0), u)
	k.Atom(ptx.Shared, "and", ptx.B32, ptx.At(tile, 8), u)
	k.Red(ptx.Global, "add", ptx.F32, ptx.At(out, 48), r)
	k.Red(ptx.Global, "add", ptx.F16x2, ptx.At(out, 52), f2)
	k.Red(ptx.Global, "max", ptx.S32, ptx.At(out, 56), i)
	k.Red(ptx.Global, "xor", ptx.B32, ptx.At(out, 60), u)
	k.Red(ptx.Shared, "add", ptx.F32, ptx.At(ds, 0), r)
	k.Atom(ptx.Global, "or", ptx.B32, ptx.At(out, 36), ptx.Imm(0), ptx.AtomOpts{Sem: "acquire"})
	k.Atom(ptx.Global, "add", ptx.U32, ptx.At(out, 4), u, ptx.AtomOpts{Sem: "acq_rel", Scope: "sys"})
	k.Red(ptx.Global, "inc", ptx.U32, ptx.At(out, 32), ptx.Imm(7), ptx.AtomOpts{Sem: "release"})
	k.Red(ptx.Shared, "add", ptx.U32, ptx.At(ts, 0), u, ptx.AtomOpts{Scope: "cta"})
	k.St(ptx.Global, ptx.S16, ptx.At(out, 64), []ptx.Reg{rs})

	k.Comment("control flow in %s", k.Name())
	acc := k.Reg(ptx.F32)
	k.MovTo(acc, ptx.F32Imm(0))
	k.For(ptx.U32, ptx.Imm(0), n, ptx.Imm(4), func(j ptx.Reg) {
		k.If(k.Setp("eq", ptx.U32, j, tid), func() { k.MovTo(acc, k.Add(ptx.F32, acc, r)) })
	})
	k.For(ptx.S64, ptx.Imm(-2), ptx.Imm(2), ptx.Imm(1), func(j ptx.Reg) {
		k.IfNot(k.Setp("ne", ptx.S64, j, ptx.Imm(0)), func() { k.MovTo(acc, k.Mul(ptx.F32, acc, ptx.F32Imm(2))) })
	})
	cnt := k.Mov(ptx.U32, tid)
	k.While(func() ptx.Reg { return k.Setp("gt", ptx.U32, cnt, ptx.Imm(0)) }, func() {
		k.MovTo(cnt, k.Shr(ptx.U32, cnt, ptx.Imm(1)))
		k.IfElse(k.Setp("eq", ptx.U32, k.And(ptx.U32, cnt, ptx.Imm(1)), ptx.Imm(1)),
			func() { k.MovTo(acc, k.Add(ptx.F32, acc, ptx.F32Imm(1))) },
			func() { k.MovTo(acc, k.Sub(ptx.F32, acc, ptx.F32Imm(1))) })
	})
	k.Raw(0, 0, "bra.uni", ptx.Label("tail"))
	k.Guard(inRange, false)
	k.St(ptx.Global, ptx.F32, ptx.At(out, 68), []ptx.Reg{acc})
	k.Label("tail")
	k.Raw(0, 0, "membar.gl")
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() { k.Ret() })
	k.St(ptx.Global, ptx.F32, ptx.At(out, 72), []ptx.Reg{acc})
	return k
}

// hopper writes a kernel of instructions that need sm_90 and PTX 7.8.
func hopper(m *ptx.Module) *ptx.Func {
	k := m.Func("hopper")
	k.MaxNTid(256)
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	w := k.Ld(ptx.Global, ptx.B32, 2, ptx.At(out, 0))
	lo, hi := k.Unpack(w[0])
	b := k.Fma(ptx.BF16, lo, hi, lo)
	b = k.Add(ptx.BF16, k.Mul(ptx.BF16, b, b), k.Sub(ptx.BF16, b, hi))
	b2 := k.Add(ptx.BF16x2, w[0], w[1])
	p := k.Setp("lt", ptx.BF16, b, hi)
	h := k.Cvt(ptx.F16, ptx.BF16, "rn", k.Selp(ptx.BF16, b, lo, p))
	bh := k.Cvt(ptx.BF16, ptx.F16, "rn", h)
	k.Atom(ptx.Global, "add", ptx.BF16, ptx.At(out, 8), bh)
	k.Red(ptx.Global, "add", ptx.BF16x2, ptx.At(out, 12), b2)
	k.St(ptx.Global, ptx.B16, ptx.At(out, 16), []ptx.Reg{bh})
	return k
}

// TestAssemble assembles hand-built modules with ptxas for sm_80 and
// sm_90 and checks what ptxas reports against the builder's declarations.
func TestAssemble(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	type kernelWant struct {
		maxnreg int
		smem    int // static shared bytes; -1: do not check
	}
	cases := []struct {
		name    string
		make    func() (*ptx.Module, map[string]kernelWant)
		archs   []string
		refuses []string // archs ptxas must refuse because of the derived .target
	}{
		{"golden", func() (*ptx.Module, map[string]kernelWant) {
			m, fs := sumModule()
			return m, map[string]kernelWant{"block_sum": {64, fs[0].StaticSharedBytes()}, "fill_bf16": {0, 0}}
		}, []string{"sm_80", "sm_90"}, nil},
		{"everything", func() (*ptx.Module, map[string]kernelWant) {
			m := ptx.NewModule()
			k := everything(m)
			return m, map[string]kernelWant{"everything": {128, k.StaticSharedBytes()}}
		}, []string{"sm_80", "sm_90"}, nil},
		{"hopper", func() (*ptx.Module, map[string]kernelWant) {
			m := ptx.NewModule()
			hopper(m)
			return m, map[string]kernelWant{"hopper": {0, 0}}
		}, []string{"sm_90"}, []string{"sm_80"}},
		{"everything and hopper", func() (*ptx.Module, map[string]kernelWant) {
			m := ptx.NewModule()
			everything(m)
			hopper(m)
			return m, map[string]kernelWant{"everything": {128, -1}, "hopper": {0, 0}}
		}, []string{"sm_90"}, []string{"sm_80"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, want := c.make()
			b, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			text := b.String()
			checkLabels(t, text)
			checkRegs(t, text)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for _, arch := range c.archs {
				reports, cubin, err := ptxas.Assemble(ctx, path, text, arch)
				if err != nil {
					t.Fatalf("%v\nPTX:\n%s", err, numbered(text))
				}
				if len(cubin) == 0 {
					t.Errorf("%s: empty cubin", arch)
				}
				seen := map[string]bool{}
				for _, r := range reports {
					w, ok := want[r.Function]
					if !ok {
						t.Errorf("%s: unexpected function %s in the report", arch, r.Function)
						continue
					}
					seen[r.Function] = true
					if r.Arch != arch {
						t.Errorf("%s: report of %s is for %s", arch, r.Function, r.Arch)
					}
					if w.maxnreg > 0 && r.Registers > w.maxnreg {
						t.Errorf("%s: %s uses %d registers, above .maxnreg %d", arch, r.Function, r.Registers, w.maxnreg)
					}
					if r.Registers == 0 {
						t.Errorf("%s: %s reports no registers", arch, r.Function)
					}
					if w.smem >= 0 && r.SharedBytes != w.smem {
						t.Errorf("%s: %s uses %d bytes of static shared memory, StaticSharedBytes says %d", arch, r.Function, r.SharedBytes, w.smem)
					}
				}
				for name := range want {
					if !seen[name] {
						t.Errorf("%s: no report for %s", arch, name)
					}
				}
			}
			for _, arch := range c.refuses {
				_, _, err := ptxas.Assemble(ctx, path, text, arch)
				if err == nil || !strings.Contains(err.Error(), ".target") {
					t.Errorf("ptxas -arch=%s accepted a module whose derived target is %s (err %v)", arch, b.Target(), err)
				}
			}
			if len(c.refuses) > 0 {
				// The raised .version and .target are needed: with the
				// baseline header ptxas refuses the module.
				head := fmt.Sprintf(".version %s\n.target %s\n", b.Version(), b.Target())
				low := strings.Replace(text, head, ".version 7.0\n.target sm_80\n", 1)
				if low == text {
					t.Fatalf("header %q not found", head)
				}
				_, _, err := ptxas.Assemble(ctx, path, low, "sm_90")
				if err == nil || !strings.Contains(err.Error(), "requires") {
					t.Errorf("ptxas accepted the module with the baseline header (err %v)", err)
				}
			}
		})
	}
}

// numbered prefixes each line with its number, to read ptxas' messages.
func numbered(text string) string {
	var b strings.Builder
	for i, l := range strings.Split(text, "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
	}
	return b.String()
}
