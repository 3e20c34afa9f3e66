package ptx_test

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// here returns "builder_test.go:N" for the line delta lines away from the
// line that calls it. A test case calls here(-1) on the line after the
// faulty builder call, so that the test knows which position the error
// must name.
func here(delta int) string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", file[strings.LastIndexByte(file, '/')+1:], line+delta)
}

// kernel starts a module with one kernel "k" that has a global pointer
// parameter already converted, and returns both.
func kernel() (*ptx.Module, *ptx.Func, ptx.Reg) {
	m := ptx.NewModule()
	k := m.Func("k")
	p := k.Cvta(ptx.Global, k.LdParam(k.Param("p", ptx.U64)))
	return m, k, p
}

func build(t *testing.T, m *ptx.Module) string {
	t.Helper()
	b, err := m.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b.String()
}

// TestBuildErrors checks that each misuse is reported by Build, with the
// message it deserves and the file:line of the offending call in this file.
func TestBuildErrors(t *testing.T) {
	type tc struct {
		name string
		// write makes one mistake and returns here() from the same line.
		write func(k *ptx.Func, p ptx.Reg) string
		want  string
	}
	cases := []tc{
		{"float reg to integer add", func(k *ptx.Func, p ptx.Reg) string {
			f := k.Reg(ptx.F32)
			k.MovTo(f, ptx.F32Imm(1))
			k.Add(ptx.U32, f, ptx.Imm(1))
			return here(-1)
		}, "add: float register %f1 given to u32 instruction"},
		{"register width mismatch", func(k *ptx.Func, p ptx.Reg) string {
			k.Add(ptx.F64, k.Mov(ptx.F32, ptx.F32Imm(1)), ptx.F64Imm(1))
			return here(-1)
		}, "register %f1 is f32, instruction type is f64"},
		{"integer immediate to float", func(k *ptx.Func, p ptx.Reg) string {
			k.Mul(ptx.F32, k.Mov(ptx.F32, ptx.F32Imm(1)), ptx.Imm(2))
			return here(-1)
		}, "integer immediate 2 given to f32 instruction"},
		{"non-ASCII comment", func(k *ptx.Func, p ptx.Reg) string {
			k.Comment("tile 64×64")
			return here(-1)
		}, "PTX text must be ASCII"},
		{"store-only cache operator on a load", func(k *ptx.Func, p ptx.Reg) string {
			k.Ld(ptx.Global, ptx.F32, 1, ptx.At(p, 0), ptx.LdOpts{Cache: ptx.CacheWriteBack})
			return here(-1)
		}, `ld: cache operator "wb"`},
		{"load-only cache operator on a store", func(k *ptx.Func, p ptx.Reg) string {
			k.St(ptx.Global, ptx.F32, ptx.At(p, 0), []ptx.Reg{k.Mov(ptx.F32, ptx.F32Imm(1))}, ptx.LdOpts{Cache: ptx.CacheLastUse})
			return here(-1)
		}, `st: cache operator "lu"`},
		{"f32 immediate to integer", func(k *ptx.Func, p ptx.Reg) string {
			k.Mov(ptx.U32, ptx.F32Imm(1))
			return here(-1)
		}, "f32 immediate given to u32 instruction"},
		{"f64 immediate to f32", func(k *ptx.Func, p ptx.Reg) string {
			k.Mov(ptx.F32, ptx.F64Imm(1))
			return here(-1)
		}, "f64 immediate given to f32 instruction"},
		{"uninitialised register", func(k *ptx.Func, p ptx.Reg) string {
			k.Add(ptx.U32, ptx.Reg{}, ptx.Imm(1))
			return here(-1)
		}, "add: uninitialised register"},
		{"unknown special register", func(k *ptx.Func, p ptx.Reg) string {
			k.Mov(ptx.U32, ptx.SReg("%tid.w"))
			return here(-1)
		}, "unknown special register %tid.w"},
		{"special register into 64 bits", func(k *ptx.Func, p ptx.Reg) string {
			k.Mov(ptx.U64, ptx.TidX)
			return here(-1)
		}, "special register %tid.x is 32-bit"},
		{"add on a bit type", func(k *ptx.Func, p ptx.Reg) string {
			k.Add(ptx.B32, k.Mov(ptx.B32, ptx.Imm(1)), ptx.Imm(1))
			return here(-1)
		}, "add needs an integer or floating-point type, not b32"},
		{"min on a predicate", func(k *ptx.Func, p ptx.Reg) string {
			q := k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(0))
			k.Min(ptx.Pred, q, q)
			return here(-1)
		}, "min needs an integer or floating-point type, not pred"},
		{"neg on unsigned", func(k *ptx.Func, p ptx.Reg) string {
			k.Neg(ptx.U32, k.Mov(ptx.U32, ptx.TidX))
			return here(-1)
		}, "neg needs a signed integer or floating-point type, not u32"},
		{"abs on unsigned", func(k *ptx.Func, p ptx.Reg) string {
			k.Abs(ptx.U64, p)
			return here(-1)
		}, "abs needs a signed integer or floating-point type, not u64"},
		{"div on f16", func(k *ptx.Func, p ptx.Reg) string {
			h := k.Cvt(ptx.F16, ptx.F32, "rn", k.Mov(ptx.F32, ptx.F32Imm(1)))
			k.Div(ptx.F16, h, h)
			return here(-1)
		}, "div needs an integer type, f32 or f64, not f16"},
		{"fma on integers", func(k *ptx.Func, p ptx.Reg) string {
			k.Fma(ptx.U32, ptx.Imm(1), ptx.Imm(2), ptx.Imm(3))
			return here(-1)
		}, "fma needs a float type, not u32"},
		{"mul.wide on 64 bits", func(k *ptx.Func, p ptx.Reg) string {
			k.MulWide(ptx.U64, p, p)
			return here(-1)
		}, "mul.wide needs u32 or s32, not u64"},
		{"shr on a float", func(k *ptx.Func, p ptx.Reg) string {
			k.Shr(ptx.F32, k.Mov(ptx.F32, ptx.F32Imm(1)), ptx.Imm(1))
			return here(-1)
		}, "shr needs a bit or integer type, not f32"},
		{"ex2 in f64", func(k *ptx.Func, p ptx.Reg) string {
			k.Rcp(ptx.F16, k.Mov(ptx.F16, k.Mov(ptx.B16, ptx.Imm(0))))
			return here(-1)
		}, "rcp.rn needs f32 or f64, not f16"},
		{"ordered compare on bits", func(k *ptx.Func, p ptx.Reg) string {
			k.Setp("lt", ptx.B32, k.Mov(ptx.B32, ptx.Imm(1)), ptx.Imm(2))
			return here(-1)
		}, "setp.lt on bit type b32"},
		{"unknown comparison", func(k *ptx.Func, p ptx.Reg) string {
			k.Setp("less", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(2))
			return here(-1)
		}, `unknown comparison "less"`},
		{"unordered compare on integers", func(k *ptx.Func, p ptx.Reg) string {
			k.Setp("ltu", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(2))
			return here(-1)
		}, "setp.ltu needs a float type, not u32"},
		{"selp on a non-predicate", func(k *ptx.Func, p ptx.Reg) string {
			r := k.Mov(ptx.U32, ptx.TidX)
			k.Selp(ptx.U32, r, r, r)
			return here(-1)
		}, "selp: %r1 is not a predicate"},
		{"cvt widening with a rounding mode", func(k *ptx.Func, p ptx.Reg) string {
			k.Cvt(ptx.F32, ptx.F16, "rn", k.Mov(ptx.B16, ptx.Imm(0)))
			return here(-1)
		}, `cvt.f32.f16 with mode "rn": needs no rounding mode`},
		{"cvt narrowing without a rounding mode", func(k *ptx.Func, p ptx.Reg) string {
			k.Cvt(ptx.F16, ptx.F32, "", k.Mov(ptx.F32, ptx.F32Imm(1)))
			return here(-1)
		}, `cvt.f16.f32 with mode "": needs a float rounding mode`},
		{"cvt float to int without an integer mode", func(k *ptx.Func, p ptx.Reg) string {
			k.Cvt(ptx.S32, ptx.F32, "rn", k.Mov(ptx.F32, ptx.F32Imm(1)))
			return here(-1)
		}, `cvt.s32.f32 with mode "rn": needs an integer rounding mode`},
		{"cvt int to int with a mode", func(k *ptx.Func, p ptx.Reg) string {
			k.Cvt(ptx.U64, ptx.U32, "rzi", k.Mov(ptx.U32, ptx.TidX))
			return here(-1)
		}, `cvt.u64.u32 with mode "rzi": needs no rounding mode`},
		{"cvt unknown mode", func(k *ptx.Func, p ptx.Reg) string {
			k.Cvt(ptx.F16, ptx.F32, "near", k.Mov(ptx.F32, ptx.F32Imm(1)))
			return here(-1)
		}, `unknown rounding mode "near"`},
		{"cvt of a packed type", func(k *ptx.Func, p ptx.Reg) string {
			k.Cvt(ptx.F32, ptx.F16x2, "", k.Mov(ptx.B32, ptx.Imm(0)))
			return here(-1)
		}, "cvt.f32.f16x2: cvt converts between integer and scalar floating-point types"},
		{"pack into f32", func(k *ptx.Func, p ptx.Reg) string {
			f := k.Mov(ptx.F32, ptx.F32Imm(1))
			k.PackHalf2(ptx.F32, f, f)
			return here(-1)
		}, "PackHalf2 needs f16x2 or bf16x2, not f32"},
		{"unpack 64 bits", func(k *ptx.Func, p ptx.Reg) string {
			k.Unpack(p)
			return here(-1)
		}, "Unpack needs a 32-bit register, got u64"},
		{"bits of 16 as f32", func(k *ptx.Func, p ptx.Reg) string {
			k.BitsToF32(k.Mov(ptx.B16, ptx.Imm(0)))
			return here(-1)
		}, "BitsToF32 needs a 32-bit register, got b16"},
		{"wrong vector length", func(k *ptx.Func, p ptx.Reg) string {
			k.Ld(ptx.Global, ptx.F32, 3, ptx.At(p, 0))
			return here(-1)
		}, "ld.global: vector of 3 elements (want 1, 2 or 4)"},
		{"vector wider than 128 bits", func(k *ptx.Func, p ptx.Reg) string {
			k.Ld(ptx.Global, ptx.F64, 4, ptx.At(p, 0))
			return here(-1)
		}, "ld.global.v4: 4 × f64 is wider than 128 bits"},
		{"store of a wrong-typed register", func(k *ptx.Func, p ptx.Reg) string {
			k.St(ptx.Global, ptx.U32, ptx.At(p, 0), []ptx.Reg{k.Mov(ptx.F32, ptx.F32Imm(1))})
			return here(-1)
		}, "st.global: float register %f1 given to u32 instruction"},
		{"ld.nc outside global", func(k *ptx.Func, p ptx.Reg) string {
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(p, 0), ptx.LdOpts{NC: true})
			return here(-1)
		}, "ld.nc needs the global space, not shared"},
		{"32-bit global address", func(k *ptx.Func, p ptx.Reg) string {
			k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Mov(ptx.U32, ptx.TidX), 0))
			return here(-1)
		}, "32-bit address register %r1 used for the global space"},
		{"float address register", func(k *ptx.Func, p ptx.Reg) string {
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mov(ptx.F32, ptx.F32Imm(0)), 0))
			return here(-1)
		}, "address register %f1 is not a 32- or 64-bit integer register"},
		{"immediate address", func(k *ptx.Func, p ptx.Reg) string {
			k.Ld(ptx.Global, ptx.F32, 1, ptx.At(ptx.Imm(64), 0))
			return here(-1)
		}, "address base 64 must be a register or symbol"},
		{"atom exch on unsigned", func(k *ptx.Func, p ptx.Reg) string {
			k.Atom(ptx.Global, "exch", ptx.U32, ptx.At(p, 0), ptx.Imm(1))
			return here(-1)
		}, "atom.exch does not take type u32"},
		{"atom add on bits", func(k *ptx.Func, p ptx.Reg) string {
			k.Atom(ptx.Global, "add", ptx.B32, ptx.At(p, 0), ptx.Imm(1))
			return here(-1)
		}, "atom.add does not take type b32"},
		{"atom unknown op", func(k *ptx.Func, p ptx.Reg) string {
			k.Atom(ptx.Global, "mul", ptx.U32, ptx.At(p, 0), ptx.Imm(1))
			return here(-1)
		}, `atom: unknown operation "mul"`},
		{"red exch", func(k *ptx.Func, p ptx.Reg) string {
			k.Red(ptx.Global, "exch", ptx.B32, ptx.At(p, 0), ptx.Imm(1))
			return here(-1)
		}, "red has no exch operation"},
		{"red acquire", func(k *ptx.Func, p ptx.Reg) string {
			k.Red(ptx.Global, "inc", ptx.U32, ptx.At(p, 0), ptx.Imm(3), ptx.AtomOpts{Sem: "acquire"})
			return here(-1)
		}, `red: memory order "acquire" (want relaxed or release)`},
		{"atom bad order", func(k *ptx.Func, p ptx.Reg) string {
			k.Atom(ptx.Global, "or", ptx.B32, ptx.At(p, 0), ptx.Imm(0), ptx.AtomOpts{Sem: "seq_cst"})
			return here(-1)
		}, `atom: memory order "seq_cst" (want relaxed, acquire, release or acq_rel)`},
		{"atom bad scope", func(k *ptx.Func, p ptx.Reg) string {
			k.Atom(ptx.Global, "or", ptx.B32, ptx.At(p, 0), ptx.Imm(0), ptx.AtomOpts{Scope: "cluster"})
			return here(-1)
		}, `atom: scope "cluster" (want cta, gpu or sys)`},
		{"red max on f32", func(k *ptx.Func, p ptx.Reg) string {
			k.Red(ptx.Global, "max", ptx.F32, ptx.At(p, 0), ptx.F32Imm(1))
			return here(-1)
		}, "red.max does not take type f32"},
		{"barrier id", func(k *ptx.Func, p ptx.Reg) string {
			k.BarSync(16)
			return here(-1)
		}, "bar.sync 16: barrier id must be 0..15"},
		{"shfl mode", func(k *ptx.Func, p ptx.Reg) string {
			k.ShflSync("xor", k.Mov(ptx.B32, ptx.Imm(1)), ptx.Imm(1), ptx.Imm(31), 0xffffffff)
			return here(-1)
		}, `shfl.sync mode "xor"`},
		{"shfl of 64 bits", func(k *ptx.Func, p ptx.Reg) string {
			k.ShflSync("idx", p, ptx.Imm(1), ptx.Imm(31), 0xffffffff)
			return here(-1)
		}, "shfl: register %rd2 is u64, instruction type is b32"},
		{"non-predicate If", func(k *ptx.Func, p ptx.Reg) string {
			k.If(k.Mov(ptx.U32, ptx.TidX), func() { k.Ret() })
			return here(-1)
		}, "If condition %r1 is not a predicate"},
		{"non-predicate IfElse", func(k *ptx.Func, p ptx.Reg) string {
			k.IfElse(k.Mov(ptx.F32, ptx.F32Imm(0)), func() {}, func() {})
			return here(-1)
		}, "If condition %f1 is not a predicate"},
		{"non-predicate While", func(k *ptx.Func, p ptx.Reg) string {
			k.While(func() ptx.Reg { return k.Mov(ptx.U32, ptx.TidX) }, func() {})
			return here(-1)
		}, "While condition %r1 is not a predicate"},
		{"float For counter", func(k *ptx.Func, p ptx.Reg) string {
			k.For(ptx.F32, ptx.F32Imm(0), ptx.F32Imm(4), ptx.F32Imm(1), func(ptx.Reg) {})
			return here(-1)
		}, "For counter type f32: want u32, u64, s32 or s64"},
		{"For step of the wrong kind", func(k *ptx.Func, p ptx.Reg) string {
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.F32Imm(1), func(ptx.Reg) {})
			return here(-1)
		}, "for step: f32 immediate given to u32 instruction"},
		{"Guard with a non-predicate", func(k *ptx.Func, p ptx.Reg) string {
			r := k.Mov(ptx.U32, ptx.TidX)
			k.Guard(r, false)
			return here(-1)
		}, "guard %r1 is not a predicate"},
		{"Guard at the start of a region", func(k *ptx.Func, p ptx.Reg) string {
			q := k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(0))
			var pos string
			k.If(q, func() {
				k.Guard(q, false)
				pos = here(-1)
			})
			return pos
		}, "Guard must follow an instruction in the same region"},
		{"Guard after a structured node", func(k *ptx.Func, p ptx.Reg) string {
			q := k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(0))
			k.If(q, func() { k.Ret() })
			k.Guard(q, true)
			return here(-1)
		}, "Guard must follow an instruction in the same region"},
		{"Guard after a comment", func(k *ptx.Func, p ptx.Reg) string {
			q := k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(0))
			k.Comment("x")
			k.Guard(q, false)
			return here(-1)
		}, "Guard must follow an instruction in the same region"},
		{"maxnreg too small", func(k *ptx.Func, p ptx.Reg) string {
			k.MaxNReg(8)
			return here(-1)
		}, ".maxnreg 8 out of range 16..255"},
		{"maxnreg too large", func(k *ptx.Func, p ptx.Reg) string {
			k.MaxNReg(256)
			return here(-1)
		}, ".maxnreg 256 out of range 16..255"},
		{"reqntid zero", func(k *ptx.Func, p ptx.Reg) string {
			k.ReqNTid(0)
			return here(-1)
		}, ".reqntid [0]: dimensions must be positive"},
		{"reqntid over 1024 threads", func(k *ptx.Func, p ptx.Reg) string {
			k.ReqNTid(64, 32)
			return here(-1)
		}, ".reqntid [64 32]: want 1 to 3 dimensions of at most 1024 threads"},
		{"reqntid four dimensions", func(k *ptx.Func, p ptx.Reg) string {
			k.ReqNTid(2, 2, 2, 2)
			return here(-1)
		}, ".reqntid [2 2 2 2]: want 1 to 3 dimensions"},
		{"reqntid none", func(k *ptx.Func, p ptx.Reg) string {
			k.ReqNTid()
			return here(-1)
		}, ".reqntid []: want 1 to 3 dimensions"},
		{"maxntid after reqntid", func(k *ptx.Func, p ptx.Reg) string {
			k.ReqNTid(128)
			k.MaxNTid(256)
			return here(-1)
		}, ".maxntid [256]: .reqntid is already set"},
		{"reqntid after maxntid", func(k *ptx.Func, p ptx.Reg) string {
			k.MaxNTid(256)
			k.ReqNTid(128)
			return here(-1)
		}, ".reqntid [128]: .maxntid is already set"},
		{"negative minnctapersm", func(k *ptx.Func, p ptx.Reg) string {
			k.MaxNTid(256)
			k.MinNCTAPerSM(-1)
			return here(-1)
		}, ".minnctapersm -1 is negative"},
		{"minnctapersm alone", func(k *ptx.Func, p ptx.Reg) string {
			k.MinNCTAPerSM(2)
			return here(-1)
		}, ".minnctapersm needs .maxntid or .reqntid"},
		{"parameter twice", func(k *ptx.Func, p ptx.Reg) string {
			k.Param("p", ptx.U64)
			return here(-1)
		}, `parameter "p" declared twice`},
		{"bad parameter name", func(k *ptx.Func, p ptx.Reg) string {
			k.Param("a-b", ptx.U64)
			return here(-1)
		}, `invalid parameter name "a-b"`},
		{"empty shared array", func(k *ptx.Func, p ptx.Reg) string {
			k.SharedArray("tile", ptx.F32, 0, 0)
			return here(-1)
		}, "shared array tile: count 0 must be positive"},
		{"shared array of predicates", func(k *ptx.Func, p ptx.Reg) string {
			k.SharedArray("flags", ptx.Pred, 4, 0)
			return here(-1)
		}, "shared array flags: type pred cannot be stored"},
		{"shared array misaligned", func(k *ptx.Func, p ptx.Reg) string {
			k.SharedArray("tile", ptx.F32, 4, 2)
			return here(-1)
		}, "shared array tile: alignment 2 must be a power of two of at least 4"},
		{"dynamic shared twice", func(k *ptx.Func, p ptx.Reg) string {
			k.DynamicShared("a", 16)
			k.DynamicShared("b", 16)
			return here(-1)
		}, "dynamic shared memory declared twice"},
		{"register of no type", func(k *ptx.Func, p ptx.Reg) string {
			k.Reg(ptx.Type(0))
			return here(-1)
		}, "register of invalid type"},
		{"branch to a label never placed", func(k *ptx.Func, p ptx.Reg) string {
			k.Raw(0, 0, "bra", ptx.Label("nowhere"))
			return here(-1)
		}, "bra branches to label nowhere, which is never placed"},
		{"label placed twice", func(k *ptx.Func, p ptx.Reg) string {
			k.Label("again")
			k.Label("again")
			return here(-1)
		}, "label again placed twice"},
		{"reserved label", func(k *ptx.Func, p ptx.Reg) string {
			k.Label("$L_if1_end")
			return here(-1)
		}, "names beginning with $L_ are reserved"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, k, p := kernel()
			pos := c.write(k, p)
			b, err := m.Build()
			if err == nil {
				t.Fatalf("Build succeeded, want an error containing %q; PTX:\n%s", c.want, b)
			}
			if b != nil {
				t.Errorf("Build returned a module along with the error")
			}
			msg := err.Error()
			var line string
			for _, l := range strings.Split(msg, "\n") {
				if strings.Contains(l, c.want) {
					line = l
					break
				}
			}
			if line == "" {
				t.Fatalf("error does not mention %q:\n%s", c.want, msg)
			}
			if !strings.HasPrefix(line, pos+": kernel k: ") {
				t.Errorf("error %q does not start with the caller's position %q", line, pos+": kernel k: ")
			}
		})
	}
}

// TestBuildCollectsErrors checks that Build reports every mistake, each
// with its own line, in the order made, and that building goes on after a
// mistake.
func TestBuildCollectsErrors(t *testing.T) {
	m, k, p := kernel()
	f := k.Mov(ptx.F32, ptx.F32Imm(1))
	var pos [3]string
	k.Add(ptx.U32, f, ptx.Imm(1))
	pos[0] = here(-1)
	k.St(ptx.Global, ptx.F32, ptx.At(p, 0), []ptx.Reg{f, f, f})
	pos[1] = here(-1)
	k.MaxNReg(1000)
	pos[2] = here(-1)
	k.St(ptx.Global, ptx.F32, ptx.At(p, 0), []ptx.Reg{f}) // fine

	m2 := m.Func("k2")
	m2.ReqNTid(2000)
	pos2 := here(-1)

	_, err := m.Build()
	if err == nil {
		t.Fatal("Build succeeded")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d errors, want 4:\n%s", len(lines), err)
	}
	for i, want := range []string{pos[0] + ": kernel k:", pos[1] + ": kernel k:", pos[2] + ": kernel k:", pos2 + ": kernel k2:"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("error %d = %q, want prefix %q", i, lines[i], want)
		}
	}
}

func TestModuleErrors(t *testing.T) {
	if _, err := ptx.NewModule().Build(); err == nil || !strings.Contains(err.Error(), "module has no kernels") {
		t.Errorf("empty module: err = %v", err)
	}
	m := ptx.NewModule()
	m.Func("k").Ret()
	m.Func("k").Ret()
	pos := here(-1)
	m.Func("9k").Ret()
	pos2 := here(-1)
	_, err := m.Build()
	if err == nil {
		t.Fatal("Build succeeded")
	}
	for _, want := range []string{pos + `: kernel k: kernel "k" defined twice`, pos2 + `: kernel 9k: invalid kernel name "9k"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func checkLabels(t *testing.T, text string) (ifs, loops int) {
	t.Helper()
	ifs, loops, problems := ptxtest.Labels(text)
	for _, p := range problems {
		t.Error(p)
	}
	return ifs, loops
}

func checkRegs(t *testing.T, text string) map[string]int {
	t.Helper()
	decls, problems := ptxtest.Regs(text)
	for _, p := range problems {
		t.Error(p)
	}
	if len(decls) == 0 {
		t.Fatal("no kernel found")
	}
	return decls[len(decls)-1]
}

func TestStructuredControlFlowLabels(t *testing.T) {
	m, k, p := kernel()
	tid := k.Mov(ptx.U32, ptx.TidX)
	q := k.Setp("lt", ptx.U32, tid, ptx.Imm(16))
	k.If(q, func() {
		k.IfElse(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.Imm(1), func(i ptx.Reg) {
				k.IfNot(k.Setp("ne", ptx.U32, i, ptx.Imm(2)), func() { k.Comment("i == 2") })
			})
		}, func() {
			n := k.Mov(ptx.U32, tid)
			k.While(func() ptx.Reg { return k.Setp("gt", ptx.U32, n, ptx.Imm(0)) }, func() {
				k.MovTo(n, k.Sub(ptx.U32, n, ptx.Imm(1)))
			})
		})
	})
	k.IfElse(q, func() {}, func() { k.St(ptx.Global, ptx.U32, ptx.At(p, 0), []ptx.Reg{tid}) })
	k.For(ptx.S64, ptx.Imm(-3), ptx.Imm(3), ptx.Imm(2), func(ptx.Reg) {})
	k.Raw(0, 0, "bra", ptx.Label("done"))
	k.Label("done")
	k2 := m.Func("k2")
	k2.If(k2.Setp("eq", ptx.U32, k2.Mov(ptx.U32, ptx.TidX), ptx.Imm(0)), func() { k2.Ret() })
	text := build(t, m)
	ifs, loops := checkLabels(t, text)
	if ifs != 5 || loops != 3 {
		t.Errorf("found %d ifs and %d loops, want 5 and 3:\n%s", ifs, loops, text)
	}
	// The ids are unique within a kernel and restart in the next one
	// (labels are local to their kernel).
	kernels := strings.Split(text, ".visible .entry ")
	for _, want := range []string{"$L_if1_end:", "$L_if2_else:", "$L_loop3_top:", "$L_if4_end:", "$L_loop5_end:", "$L_if6_else:", "$L_loop7_top:", "done:"} {
		if strings.Count(kernels[1], "\n"+want+"\n") != 1 {
			t.Errorf("label %s not defined exactly once in k:\n%s", want, text)
		}
	}
	if n := strings.Count(kernels[2], "\n$L_if1_end:\n"); n != 1 || strings.Contains(kernels[2], "$L_if2") {
		t.Errorf("k2 should number its only if 1:\n%s", kernels[2])
	}
}

func TestRegisterDeclarations(t *testing.T) {
	m, k, p := kernel() // 2 x %rd
	a := k.Mov(ptx.F32, ptx.F32Imm(1))
	b := k.Add(ptx.F32, a, a)
	k.Add(ptx.F32, b, a) // %f3
	u := k.Mov(ptx.U32, ptx.TidX)
	k.St(ptx.Global, ptx.U32, ptx.At(p, 0), []ptx.Reg{k.Add(ptx.U32, u, ptx.Imm(1))}) // %r1, %r2
	k.Setp("eq", ptx.U32, u, ptx.Imm(0))                                              // %p1
	text := build(t, m)
	decls := checkRegs(t, text)
	for c, n := range map[string]int{"%rd": 3, "%f": 4, "%r": 3, "%p": 2} {
		if decls[c] != n {
			t.Errorf("%s<%d> declared, want <%d>:\n%s", c, decls[c], n, text)
		}
	}
	for _, c := range []string{"%h", "%fd"} {
		if _, ok := decls[c]; ok {
			t.Errorf("class %s declared without registers:\n%s", c, text)
		}
	}
	// Register types map to classes: u32, s32, b32, f16x2 share %r; f16,
	// bf16, b16 share %h.
	for _, c := range []struct {
		t    ptx.Type
		want string
	}{{ptx.U32, "%r"}, {ptx.S32, "%r"}, {ptx.B32, "%r"}, {ptx.F16x2, "%r"}, {ptx.BF16x2, "%r"},
		{ptx.F16, "%h"}, {ptx.BF16, "%h"}, {ptx.U16, "%h"}, {ptx.U64, "%rd"}, {ptx.S64, "%rd"},
		{ptx.F32, "%f"}, {ptx.F64, "%fd"}, {ptx.Pred, "%p"}} {
		r := ptx.NewModule().Func("x").Reg(c.t)
		if got := r.String(); got != c.want+"1" {
			t.Errorf("first %v register is %s, want %s1", c.t, got, c.want)
		}
		if r.Type() != c.t || !r.Valid() {
			t.Errorf("register %v: Type %v, Valid %v", r, r.Type(), r.Valid())
		}
	}
	if (ptx.Reg{}).Valid() {
		t.Error("zero Reg is valid")
	}
}

func TestVersionAndTarget(t *testing.T) {
	f32 := func(k *ptx.Func) ptx.Reg { return k.Mov(ptx.F32, ptx.F32Imm(1)) }
	half := func(k *ptx.Func) ptx.Reg { return k.Mov(ptx.BF16, k.Mov(ptx.B16, ptx.Imm(0x3f80))) }
	cases := []struct {
		name            string
		write           func(k *ptx.Func)
		version, target string
	}{
		{"baseline", func(k *ptx.Func) { k.Add(ptx.F32, f32(k), f32(k)) }, "7.0", "sm_80"},
		{"f16 arithmetic", func(k *ptx.Func) { h := k.Mov(ptx.F16, k.Mov(ptx.B16, ptx.Imm(0))); k.Fma(ptx.F16, h, h, h) }, "7.0", "sm_80"},
		{"bf16 add", func(k *ptx.Func) { h := half(k); k.Add(ptx.BF16, h, h) }, "7.8", "sm_90"},
		{"bf16x2 mul", func(k *ptx.Func) { w := k.Mov(ptx.BF16x2, ptx.Imm(0)); k.Mul(ptx.BF16x2, w, w) }, "7.8", "sm_90"},
		{"bf16 setp", func(k *ptx.Func) { h := half(k); k.Setp("lt", ptx.BF16, h, h) }, "7.8", "sm_90"},
		{"bf16 to f32 is lowered", func(k *ptx.Func) { k.Cvt(ptx.F32, ptx.BF16, "", half(k)) }, "7.0", "sm_80"},
		{"f32 to bf16", func(k *ptx.Func) { k.Cvt(ptx.BF16, ptx.F32, "rn", f32(k)) }, "7.0", "sm_80"},
		{"f32 pair to bf16x2", func(k *ptx.Func) { k.PackHalf2(ptx.BF16x2, f32(k), f32(k)) }, "7.0", "sm_80"},
		{"f16 to bf16", func(k *ptx.Func) {
			k.Cvt(ptx.BF16, ptx.F16, "rn", k.Mov(ptx.F16, k.Mov(ptx.B16, ptx.Imm(0))))
		}, "7.8", "sm_90"},
		{"u32 to bf16", func(k *ptx.Func) { k.Cvt(ptx.BF16, ptx.U32, "rn", k.Mov(ptx.U32, ptx.TidX)) }, "7.8", "sm_90"},
		{"bf16 to f16", func(k *ptx.Func) { k.Cvt(ptx.F16, ptx.BF16, "rn", half(k)) }, "7.8", "sm_90"},
		{"bf16 atomic add", func(k *ptx.Func) {
			p := k.Cvta(ptx.Global, k.LdParam(k.Param("p", ptx.U64)))
			k.Red(ptx.Global, "add", ptx.BF16, ptx.At(p, 0), half(k))
		}, "7.8", "sm_90"},
		{"f16 atomic add", func(k *ptx.Func) {
			p := k.Cvta(ptx.Global, k.LdParam(k.Param("p", ptx.U64)))
			k.Atom(ptx.Global, "add", ptx.F16, ptx.At(p, 0), k.Mov(ptx.B16, ptx.Imm(0)))
		}, "7.0", "sm_80"},
		{"classic cache operators", func(k *ptx.Func) {
			p := k.Cvta(ptx.Global, k.LdParam(k.Param("p", ptx.U64)))
			v := k.Ld(ptx.Global, ptx.F32, 4, ptx.At(p, 0), ptx.LdOpts{NC: true, Cache: "cs"})
			k.St(ptx.Global, ptx.F32, ptx.At(p, 0), v, ptx.LdOpts{Cache: "cs"})
		}, "7.0", "sm_80"},
		{"L1::no_allocate load", func(k *ptx.Func) {
			p := k.Cvta(ptx.Global, k.LdParam(k.Param("p", ptx.U64)))
			k.Ld(ptx.Global, ptx.F32, 1, ptx.At(p, 0), ptx.LdOpts{NC: true, Cache: "L1::no_allocate"})
		}, "7.4", "sm_80"},
		{"L2::256B prefetch inside a loop", func(k *ptx.Func) {
			p := k.Cvta(ptx.Global, k.LdParam(k.Param("p", ptx.U64)))
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.Imm(1), func(ptx.Reg) {
				k.Ld(ptx.Global, ptx.B32, 2, ptx.At(p, 0), ptx.LdOpts{Cache: "L2::256B"})
			})
		}, "7.4", "sm_80"},
		{"raw needs sm_86 and 7.1", func(k *ptx.Func) { k.Raw(86, 71, "nop") }, "7.1", "sm_86"},
		{"raw defaults", func(k *ptx.Func) { k.Raw(0, 0, "nop") }, "7.0", "sm_80"},
		{"highest wins", func(k *ptx.Func) { k.Raw(90, 71, "nop"); k.Raw(86, 80, "nop") }, "8.0", "sm_90"},
		{"requirement inside control flow", func(k *ptx.Func) {
			q := k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(0))
			k.If(q, func() { k.While(func() ptx.Reg { return q }, func() { h := half(k); k.Add(ptx.BF16, h, h) }) })
		}, "7.8", "sm_90"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ptx.NewModule()
			c.write(m.Func("k"))
			b, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			if b.Version() != c.version || b.Target() != c.target {
				t.Errorf("version %s target %s, want %s %s", b.Version(), b.Target(), c.version, c.target)
			}
			head := fmt.Sprintf("\n.version %s\n.target %s\n.address_size 64\n", c.version, c.target)
			if !strings.Contains(b.String(), head) {
				t.Errorf("printed module lacks %q:\n%s", head, b)
			}
			if c.name == "bf16 to f32 is lowered" && strings.Contains(b.String(), "cvt.f32.bf16") {
				t.Errorf("bf16 → f32 not lowered:\n%s", b)
			}
		})
	}
	// Requirements of several kernels combine.
	m := ptx.NewModule()
	m.Func("a").Raw(90, 70, "nop")
	m.Func("b").Raw(80, 78, "nop")
	b, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	if b.Version() != "7.8" || b.Target() != "sm_90" {
		t.Errorf("two kernels: %s %s, want 7.8 sm_90", b.Version(), b.Target())
	}
	if got := strings.Join(b.Entries(), ","); got != "a,b" {
		t.Errorf("Entries = %s, want a,b", got)
	}
}

func TestImmediates(t *testing.T) {
	cases := []struct {
		op   ptx.Operand
		want string
	}{
		{ptx.F32Imm(1), "0f3F800000"},
		{ptx.F32Imm(-2), "0fC0000000"},
		{ptx.F32Imm(0.5), "0f3F000000"},
		{ptx.F32Imm(0), "0f00000000"},
		{ptx.F32Imm(float32(math.Copysign(0, -1))), "0f80000000"},
		{ptx.F32Imm(0.1), "0f3DCCCCCD"},
		{ptx.F32Imm(float32(math.Log2E)), "0f3FB8AA3B"},
		{ptx.F32Imm(math.MaxFloat32), "0f7F7FFFFF"},
		{ptx.F32Imm(math.SmallestNonzeroFloat32), "0f00000001"},
		{ptx.F32Imm(float32(math.Inf(1))), "0f7F800000"},
		{ptx.F32Imm(float32(math.Inf(-1))), "0fFF800000"},
		{ptx.F32Imm(math.Float32frombits(0x7fc00001)), "0f7FC00001"},
		{ptx.F64Imm(1), "0d3FF0000000000000"},
		{ptx.F64Imm(0.1), "0d3FB999999999999A"},
		{ptx.F64Imm(-math.Pi), "0dC00921FB54442D18"},
		{ptx.F64Imm(math.SmallestNonzeroFloat64), "0d0000000000000001"},
		{ptx.F64Imm(math.Copysign(0, -1)), "0d8000000000000000"},
		{ptx.F64Imm(math.Inf(1)), "0d7FF0000000000000"},
		{ptx.Imm(-65536), "-65536"},
		{ptx.Imm(4294967295), "4294967295"},
		{ptx.At(ptx.Reg{}, 0), "[%invalid]"},
		{ptx.TidX, "%tid.x"},
	}
	for _, c := range cases {
		if got := c.op.String(); got != c.want {
			t.Errorf("%#v prints %s, want %s", c.op, got, c.want)
		}
	}
	// Printing is exact: the bits come back for values of every binade.
	for i := range 2000 {
		f := float32(math.Ldexp(1+float64(i)/2000, i%300-150)) * float32(1-2*(i%2))
		s := ptx.F32Imm(f).String()
		bits, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil || math.Float32frombits(uint32(bits)) != f || len(s) != 10 {
			t.Fatalf("F32Imm(%g) = %s does not round-trip", f, s)
		}
		d := float64(f) * (1 + 1e-12)
		s = ptx.F64Imm(d).String()
		bits, err = strconv.ParseUint(s[2:], 16, 64)
		if err != nil || math.Float64frombits(bits) != d || len(s) != 18 {
			t.Fatalf("F64Imm(%g) = %s does not round-trip", d, s)
		}
	}
}

func TestAddresses(t *testing.T) {
	m, k, p := kernel()
	for _, c := range []struct {
		off  int64
		want string
	}{{0, "[%rd2]"}, {16, "[%rd2+16]"}, {-8, "[%rd2+-8]"}} {
		if got := ptx.At(p, c.off).String(); got != c.want {
			t.Errorf("At(p, %d) = %s, want %s", c.off, got, c.want)
		}
	}
	s := k.SharedArray("buf", ptx.F32, 8, 0)
	if got := ptx.At(s, 12).String(); got != "[k_smem_buf+12]" {
		t.Errorf("At(sym, 12) = %s", got)
	}
	k.Ret()
	build(t, m)
}

func TestSharedMemory(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	a := k.SharedArray("a", ptx.F32, 3, 0)   // 12 bytes
	b := k.SharedArray("b", ptx.F64, 2, 0)   // aligned to 16, +16 = 32
	c := k.SharedArray("c", ptx.BF16, 5, 16) // aligned to 32, +10 = 42
	d := k.DynamicShared("dyn", 4)
	k2 := m.Func("k2")
	k2.DynamicShared("x", 64)
	if got := k.StaticSharedBytes(); got != 42 {
		t.Errorf("StaticSharedBytes = %d, want 42", got)
	}
	if got := k2.StaticSharedBytes(); got != 0 {
		t.Errorf("k2 StaticSharedBytes = %d, want 0", got)
	}
	r := k.Mov(ptx.U32, a)
	k.Ld(ptx.Shared, ptx.F64, 2, ptx.At(b, 0))
	k.Ld(ptx.Shared, ptx.B16, 1, ptx.At(c, 8))
	k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(d, 4))
	k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Add(ptx.U32, r, ptx.Imm(4)), -4)) // a[0]: a[-1] is out of bounds
	text := build(t, m)
	for _, want := range []string{
		"\n.extern .shared .align 16 .b8 k_dsmem_dyn[];\n.extern .shared .align 64 .b8 k2_dsmem_x[];\n\n.visible .entry k(",
		"\t.shared .align 4 .f32 k_smem_a[3];\n\t.shared .align 8 .f64 k_smem_b[2];\n\t.shared .align 16 .b16 k_smem_c[5];\n",
		"mov.u32 %r1, k_smem_a;",
		"ld.shared.v2.f64 {%fd1, %fd2}, [k_smem_b];",
		"ld.shared.b16 %h1, [k_smem_c+8];",
		"ld.shared.f32 %f1, [k_dsmem_dyn+4];",
		"ld.shared.f32 %f2, [%r2+-4];",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("PTX lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\t.extern") {
		t.Errorf("extern shared declared inside a kernel:\n%s", text)
	}
}

func TestRaw(t *testing.T) {
	m, k, p := kernel()
	a := k.Mov(ptx.B32, ptx.Imm(0x01020304))
	d := k.Reg(ptx.B32)
	k.Raw(0, 0, "prmt.b32", d, a, a, ptx.Imm(0x3210))
	q := k.Setp("ne", ptx.B32, d, ptx.Imm(0))
	k.Raw(0, 0, "bra.uni", ptx.Label("skip"))
	k.Guard(q, true)
	k.St(ptx.Global, ptx.B32, ptx.At(p, 0), []ptx.Reg{d})
	k.Label("skip")
	k.Raw(90, 78, "fence.proxy.async") // its row needs PTX 8.0, more than the caller states
	text := build(t, m)
	for _, want := range []string{
		"\tprmt.b32 %r2, %r1, %r1, 12816;\n",
		"\t@!%p1 bra.uni skip;\n\tst.global.b32 [%rd2], %r2;\nskip:\n\tfence.proxy.async;\n",
		".version 8.0\n.target sm_90\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("PTX lacks %q:\n%s", want, text)
		}
	}
	checkLabels(t, text)
}

// TestTypedHelpers pins the spelling of helpers whose PTX form differs from
// the obvious one: bit types for mov/shl/logic, .rn on float arithmetic,
// .noftz on half-precision atomics.
func TestTypedHelpers(t *testing.T) {
	m, k, p := kernel()
	h := k.Mov(ptx.F16, k.Mov(ptx.B16, ptx.Imm(0)))
	w := k.Mov(ptx.F16x2, ptx.Imm(0))
	u := k.Mov(ptx.U32, ptx.TidX)
	f := k.Mov(ptx.F32, ptx.F32Imm(2))
	k.Shl(ptx.U32, u, ptx.Imm(2))
	k.Shr(ptx.S32, u, ptx.Imm(1))
	k.And(ptx.U64, p, ptx.Imm(-16))
	k.Add(ptx.F16x2, w, w)
	k.Sub(ptx.F32, f, f)
	k.Mul(ptx.U32, u, ptx.Imm(3))
	k.Div(ptx.F32, f, f)
	k.Mad(ptx.F32, f, f, f)
	k.Atom(ptx.Global, "add", ptx.F16, ptx.At(p, 0), h)
	k.Red(ptx.Global, "add", ptx.F16x2, ptx.At(p, 0), w)
	k.Atom(ptx.Global, "or", ptx.B32, ptx.At(p, 0), ptx.Imm(0), ptx.AtomOpts{Sem: "acquire"})
	k.Red(ptx.Global, "inc", ptx.U32, ptx.At(p, 0), ptx.Imm(7), ptx.AtomOpts{Sem: "release", Scope: "sys"})
	k.Atom(ptx.Shared, "add", ptx.U32, ptx.At(k.Mov(ptx.U32, ptx.Imm(0)), 0), ptx.Imm(1), ptx.AtomOpts{Scope: "cta"})
	k.Selp(ptx.F16, h, h, k.Setp("gt", ptx.F16, h, h))
	text := build(t, m)
	for _, want := range []string{
		"mov.b16 %h2, %h1;", "mov.b32 %r1, 0;", "shl.b32 %r3, %r2, 2;", "shr.s32 %r4, %r2, 1;",
		"and.b64 %rd3, %rd2, -16;", "add.rn.f16x2 %r5, %r1, %r1;", "sub.rn.f32 %f2, %f1, %f1;",
		"mul.lo.u32 %r6, %r2, 3;", "div.rn.f32 %f3, %f1, %f1;", "fma.rn.f32 %f4, %f1, %f1, %f1;",
		"atom.global.add.noftz.f16 %h3, [%rd2], %h2;", "red.global.add.noftz.f16x2 [%rd2], %r1;",
		"atom.acquire.gpu.global.or.b32 %r7, [%rd2], 0;", "red.release.sys.global.inc.u32 [%rd2], 7;",
		"atom.relaxed.cta.shared.add.u32 %r9, [%r8], 1;",
		"setp.gt.f16 %p1, %h2, %h2;", "selp.b16 %h4, %h2, %h2, %p1;",
	} {
		if !strings.Contains(text, "\t"+want+"\n") {
			t.Errorf("PTX lacks %q:\n%s", want, text)
		}
	}
}
