package ptx

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/gradtune/gradtune/kernels/ptx/isa"
)

// check verifies that operand o may be used by an instruction of type t:
// registers must have the same width, and integer instructions do not take
// f32/f64-class registers. Immediates must match the kind of t.
func (f *Func) check(what string, t Type, o Operand) {
	switch x := o.(type) {
	case Reg:
		if !x.Valid() {
			f.errorf("%s: uninitialised register", what)
			return
		}
		if x.t.Bits() != t.Bits() {
			f.errorf("%s: register %v is %v, instruction type is %v", what, x, x.t, t)
			return
		}
		c := classOf(x.t)
		if t.IsInt() && (c == clsF32 || c == clsF64) {
			f.errorf("%s: float register %v given to %v instruction", what, x, t)
		}
		if (t == F32 || t == F64) && !(c == clsF32 || c == clsF64 || c == clsB32 || c == clsB64) {
			f.errorf("%s: register %v cannot feed %v", what, x, t)
		}
	case Imm:
		if t.IsFloat() || t == Pred {
			f.errorf("%s: integer immediate %v given to %v instruction", what, x, t)
		}
	case F32Imm:
		if t != F32 && t != B32 {
			f.errorf("%s: f32 immediate given to %v instruction", what, t)
		}
	case F64Imm:
		if t != F64 && t != B64 {
			f.errorf("%s: f64 immediate given to %v instruction", what, t)
		}
	case SReg:
		if _, ok := isa.LookupSReg(string(x)); !ok {
			f.errorf("%s: unknown special register %s", what, x)
		}
		if t.Bits() != 32 {
			f.errorf("%s: special register %s is 32-bit, instruction type is %v", what, x, t)
		}
	case Sym:
		if x.tmap && t.Bits() != 64 {
			f.errorf("%s: the address of tensor map %v needs a 64-bit type, not %v", what, x, t)
		}
		if t.Bits() != 32 && t.Bits() != 64 {
			f.errorf("%s: symbol address %v needs a 32- or 64-bit type, not %v", what, x, t)
		}
	default:
		f.errorf("%s: operand %v (%T) not allowed here", what, o, o)
	}
}

// numeric records an error unless t is an integer or floating-point type:
// PTX arithmetic has no form for bit types (add.b32) or predicates.
func (f *Func) numeric(op string, t Type) {
	if !t.IsInt() && !t.IsFloat() {
		f.errorf("%s needs an integer or floating-point type, not %v", op, t)
	}
}

// signed records an error unless t is a signed integer or floating-point
// type (neg, abs).
func (f *Func) signed(op string, t Type) {
	switch t {
	case S16, S32, S64:
		return
	}
	if !t.IsFloat() {
		f.errorf("%s needs a signed integer or floating-point type, not %v", op, t)
	}
}

// op3 emits "op.t d, a, b" into a fresh register and returns it.
func (f *Func) op3(op string, t Type, a, b Operand) Reg {
	f.check(op, t, a)
	f.check(op, t, b)
	d := f.Reg(t)
	f.emit(&Inst{Op: op + "." + t.String(), Args: []Operand{d, a, b}})
	return d
}

func (f *Func) op2(op string, t Type, a Operand) Reg {
	f.check(op, t, a)
	d := f.Reg(t)
	f.emit(&Inst{Op: op + "." + t.String(), Args: []Operand{d, a}})
	return d
}

func rnd(t Type) string {
	if t.IsFloat() {
		return ".rn"
	}
	return ""
}

// Mov copies src (register, immediate, special register or symbol address)
// into a new register of type t.
// Half-precision types move as bit types (mov.b16, mov.b32), so an
// integer immediate gives their bit pattern.
func (f *Func) Mov(t Type, src Operand) Reg {
	f.check("mov", movCheckType(t), src)
	d := f.Reg(t)
	f.emit(&Inst{Op: "mov." + movType(t), Args: []Operand{d, src}})
	return d
}

// MovTo copies src into the existing register d.
func (f *Func) MovTo(d Reg, src Operand) {
	f.check("mov", d.t, d)
	f.check("mov", movCheckType(d.t), src)
	f.emit(&Inst{Op: "mov." + movType(d.t), Args: []Operand{d, src}})
}

// movCheckType is the type mov's source is checked against: the bit type
// for half-precision types, which mov knows only as bits.
func movCheckType(t Type) Type {
	switch t {
	case F16, BF16, F16x2, BF16x2:
		return bitType(t)
	}
	return t
}

func movType(t Type) string {
	if t == F16x2 || t == BF16x2 {
		return "b32"
	}
	if t == F16 || t == BF16 {
		return "b16"
	}
	return t.String()
}

// Add returns a+b (add.rn for floats).
func (f *Func) Add(t Type, a, b Operand) Reg {
	f.numeric("add", t)
	return f.op3("add"+rnd(t), t, a, b)
}

// Sub returns a-b (sub.rn for floats).
func (f *Func) Sub(t Type, a, b Operand) Reg {
	f.numeric("sub", t)
	return f.op3("sub"+rnd(t), t, a, b)
}

// Mul returns a*b: mul.rn for floats, mul.lo for integers.
func (f *Func) Mul(t Type, a, b Operand) Reg {
	f.numeric("mul", t)
	if t.IsInt() {
		return f.op3("mul.lo", t, a, b)
	}
	return f.op3("mul"+rnd(t), t, a, b)
}

// MulWide returns the full 64-bit product of two 32-bit integers (t is U32
// or S32; the result is U64 or S64).
func (f *Func) MulWide(t Type, a, b Operand) Reg {
	if t != U32 && t != S32 {
		f.errorf("mul.wide needs u32 or s32, not %v", t)
		return Reg{}
	}
	f.check("mul.wide", t, a)
	f.check("mul.wide", t, b)
	dt := U64
	if t == S32 {
		dt = S64
	}
	d := f.Reg(dt)
	f.emit(&Inst{Op: "mul.wide." + t.String(), Args: []Operand{d, a, b}})
	return d
}

// Mad returns a*b+c: mad.lo for integers, fma.rn for floats.
func (f *Func) Mad(t Type, a, b, c Operand) Reg {
	if t.IsFloat() {
		return f.Fma(t, a, b, c)
	}
	f.numeric("mad", t)
	for _, o := range []Operand{a, b, c} {
		f.check("mad.lo", t, o)
	}
	d := f.Reg(t)
	f.emit(&Inst{Op: "mad.lo." + t.String(), Args: []Operand{d, a, b, c}})
	return d
}

// Fma returns a*b+c rounded once (fma.rn).
func (f *Func) Fma(t Type, a, b, c Operand) Reg {
	if !t.IsFloat() {
		f.errorf("fma needs a float type, not %v", t)
	}
	for _, o := range []Operand{a, b, c} {
		f.check("fma", t, o)
	}
	d := f.Reg(t)
	f.emit(&Inst{Op: "fma.rn." + t.String(), Args: []Operand{d, a, b, c}})
	return d
}

// Min returns min(a, b).
func (f *Func) Min(t Type, a, b Operand) Reg {
	f.numeric("min", t)
	return f.op3("min", t, a, b)
}

// Max returns max(a, b).
func (f *Func) Max(t Type, a, b Operand) Reg {
	f.numeric("max", t)
	return f.op3("max", t, a, b)
}

// Neg returns -a (signed integer or floating-point t).
func (f *Func) Neg(t Type, a Operand) Reg {
	f.signed("neg", t)
	return f.op2("neg", t, a)
}

// Abs returns |a| (signed integer or floating-point t).
func (f *Func) Abs(t Type, a Operand) Reg {
	f.signed("abs", t)
	return f.op2("abs", t, a)
}

// Div returns a/b: div.rn for floats (IEEE, exactly rounded), div for
// integers. PTX has no half-precision division.
func (f *Func) Div(t Type, a, b Operand) Reg {
	if !t.IsInt() && t != F32 && t != F64 {
		f.errorf("div needs an integer type, f32 or f64, not %v", t)
	}
	return f.op3("div"+rnd(t), t, a, b)
}

// Rcp returns 1/a, exactly rounded (rcp.rn; f32 or f64).
func (f *Func) Rcp(t Type, a Operand) Reg { return f.floatOnly("rcp.rn", t, a) }

// Sqrt returns √a, exactly rounded (sqrt.rn).
func (f *Func) Sqrt(t Type, a Operand) Reg { return f.floatOnly("sqrt.rn", t, a) }

// Ex2Approx returns 2^a by ex2.approx.f32: maximum relative error 2^-22.5
// over the full range (PTX ISA); subnormal results are kept (no .ftz).
func (f *Func) Ex2Approx(a Operand) Reg { return f.floatOnly("ex2.approx", F32, a) }

// Ex2ApproxFtz returns 2^a by ex2.approx.ftz.f32: as Ex2Approx, but a
// subnormal input counts as 0 and a result under 2^-126 is 0. It is one
// MUFU operation; Ex2Approx adds a compare and two predicated multiplies
// around it to keep subnormal results.
func (f *Func) Ex2ApproxFtz(a Operand) Reg { return f.floatOnly("ex2.approx.ftz", F32, a) }

// RsqrtApprox returns 1/√a by rsqrt.approx.f32: maximum relative error
// 2^-22.9 (PTX ISA).
func (f *Func) RsqrtApprox(a Operand) Reg { return f.floatOnly("rsqrt.approx", F32, a) }

// TanhApprox returns tanh(a) by tanh.approx.f32 (sm_75+): maximum relative
// error 2^-10.987 (PTX ISA), too coarse for f32 references; kernels that
// need f32 accuracy build tanh from Ex2Approx instead.
func (f *Func) TanhApprox(a Operand) Reg { return f.floatOnly("tanh.approx", F32, a) }

func (f *Func) floatOnly(op string, t Type, a Operand) Reg {
	if t != F32 && t != F64 {
		f.errorf("%s needs f32 or f64, not %v", op, t)
	}
	if t == F64 && (strings.HasPrefix(op, "ex2.approx") || op == "tanh.approx") {
		f.errorf("%s has no f64 form", op)
	}
	return f.op2(op, t, a)
}

// Shl returns a << n. PTX has shl only for bit types, so an integer t is
// printed as the bit type of its width (shl.b32 for u32).
func (f *Func) Shl(t Type, a, n Operand) Reg {
	if t.IsInt() {
		t = bitType(t)
	}
	return f.shift("shl", t, a, n)
}

// Shr returns a >> n (arithmetic for signed types, logical for unsigned and
// bit types).
func (f *Func) Shr(t Type, a, n Operand) Reg { return f.shift("shr", t, a, n) }

// bitType returns the bit type of t's width (b16, b32, b64), or t itself.
func bitType(t Type) Type {
	switch t.Bits() {
	case 16:
		return B16
	case 32:
		return B32
	case 64:
		return B64
	}
	return t
}

func (f *Func) shift(op string, t Type, a, n Operand) Reg {
	switch t {
	case B16, B32, B64, U16, U32, U64, S16, S32, S64:
	default:
		f.errorf("%s needs a bit or integer type, not %v", op, t)
	}
	f.check(op, t, a)
	f.check(op, U32, n)
	d := f.Reg(t)
	f.emit(&Inst{Op: op + "." + t.String(), Args: []Operand{d, a, n}})
	return d
}

// And returns a & b (t is a bit or integer type; predicates allowed).
func (f *Func) And(t Type, a, b Operand) Reg { return f.logic("and", t, a, b) }

// Or returns a | b.
func (f *Func) Or(t Type, a, b Operand) Reg { return f.logic("or", t, a, b) }

// Xor returns a ^ b.
func (f *Func) Xor(t Type, a, b Operand) Reg { return f.logic("xor", t, a, b) }

// Prmt returns prmt.b32 a, b, sel in the default mode: byte i of the
// result is byte sel[4i+2:4i] of the 8 bytes {b, a} (a's are 0..3), or
// that byte's sign bit replicated when bit 4i+3 of sel is set.
func (f *Func) Prmt(a, b, sel Operand) Reg {
	for _, o := range []Operand{a, b, sel} {
		f.check("prmt", B32, o)
	}
	d := f.Reg(B32)
	f.emit(&Inst{Op: "prmt.b32", Args: []Operand{d, a, b, sel}})
	return d
}

func (f *Func) logic(op string, t Type, a, b Operand) Reg {
	bt := bitType(t)
	if t == Pred {
		for _, o := range []Operand{a, b} {
			if r, ok := o.(Reg); !ok || r.t != Pred {
				f.errorf("%s.pred: operand %v is not a predicate", op, o)
			}
		}
		d := f.Reg(Pred)
		f.emit(&Inst{Op: op + ".pred", Args: []Operand{d, a, b}})
		return d
	}
	return f.op3(op, bt, a, b)
}

// Setp compares a and b (cmp: eq, ne, lt, le, gt, ge; for floats also the
// unordered forms equ, neu, ltu, leu, gtu, geu, num, nan) and returns a
// predicate.
func (f *Func) Setp(cmp string, t Type, a, b Operand) Reg {
	switch cmp {
	case "eq", "ne", "lt", "le", "gt", "ge":
	case "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan":
		if !t.IsFloat() {
			f.errorf("setp.%s needs a float type, not %v", cmp, t)
		}
	default:
		f.errorf("unknown comparison %q", cmp)
	}
	switch t {
	case B16, B32, B64:
		if cmp != "eq" && cmp != "ne" {
			f.errorf("setp.%s on bit type %v: bit types compare only with eq and ne", cmp, t)
		}
	case Pred, F16x2, BF16x2, invalidType:
		f.errorf("setp cannot compare %v", t)
	}
	f.check("setp", t, a)
	f.check("setp", t, b)
	d := f.Reg(Pred)
	f.emit(&Inst{Op: "setp." + cmp + "." + t.String(), Args: []Operand{d, a, b}})
	return d
}

// Selp returns p ? a : b.
func (f *Func) Selp(t Type, a, b Operand, p Reg) Reg {
	if p.t != Pred {
		f.errorf("selp: %v is not a predicate", p)
	}
	f.check("selp", t, a)
	f.check("selp", t, b)
	d := f.Reg(t)
	f.emit(&Inst{Op: "selp." + movType(t), Args: []Operand{d, a, b, p}})
	return d
}

// Cvt converts src of type from to type to with the rounding mode mode.
// PTX fixes which conversions take a mode, and the builder checks it:
// float → narrower float and integer → float need a float mode (rn, rz, rm,
// rp); float → integer needs an integer mode (rni, rzi, rmi, rpi); a float
// to the same type takes an integer mode or none; widening floats and
// integer → integer take none (""). A bf16 → f32 conversion is lowered to a
// 16-bit shift so that it runs on sm_80; other conversions from bf16, and
// to bf16 from anything but f32, need sm_90.
func (f *Func) Cvt(to, from Type, mode string, src Operand) Reg {
	f.check("cvt", from, src)
	f.checkCvt(to, from, mode)
	if from == BF16 && to == F32 {
		w := f.Reg(B32)
		f.emit(&Inst{Op: "cvt.u32.u16", Args: []Operand{w, src}})
		return f.BitsToF32(f.Shl(B32, w, Imm(16)))
	}
	d := f.Reg(to)
	op := "cvt"
	if mode != "" {
		op += "." + mode
	}
	f.emit(&Inst{Op: op + "." + to.String() + "." + from.String(), Args: []Operand{d, src}})
	return d
}

// checkCvt enforces the rounding-mode rules of cvt described at Cvt.
func (f *Func) checkCvt(to, from Type, mode string) {
	scalar := func(t Type) bool { return t.IsInt() || t == F16 || t == BF16 || t == F32 || t == F64 }
	if !scalar(to) || !scalar(from) {
		f.errorf("cvt.%v.%v: cvt converts between integer and scalar floating-point types (PackHalf2 packs pairs)", to, from)
		return
	}
	floatMode := mode == "rn" || mode == "rz" || mode == "rm" || mode == "rp"
	intMode := mode == "rni" || mode == "rzi" || mode == "rmi" || mode == "rpi"
	if mode != "" && !floatMode && !intMode {
		f.errorf("cvt: unknown rounding mode %q (rn, rz, rm, rp, rni, rzi, rmi, rpi)", mode)
		return
	}
	var ok bool
	var want string
	switch {
	case to.IsFloat() && from.IsFloat() && to == from:
		ok, want = mode == "" || intMode, "an integer rounding mode or none"
	case to.IsFloat() && from.IsFloat() && to.Bits() > from.Bits():
		ok, want = mode == "", "no rounding mode (widening is exact)"
	case to.IsFloat() && from.IsFloat():
		// Narrowing, and f16 <-> bf16 which are of equal width.
		ok, want = floatMode, "a float rounding mode (rn, rz, rm, rp)"
	case to.IsFloat():
		ok, want = floatMode, "a float rounding mode (rn, rz, rm, rp)"
	case from.IsFloat():
		ok, want = intMode, "an integer rounding mode (rni, rzi, rmi, rpi)"
	default:
		ok, want = mode == "", "no rounding mode"
	}
	if !ok {
		f.errorf("cvt.%v.%v with mode %q: needs %s", to, from, mode, want)
	}
}

// PackHalf2 converts two f32 values to one f16x2 or bf16x2 register
// (cvt.rn.{f16x2,bf16x2}.f32): hi goes to the upper 16 bits.
func (f *Func) PackHalf2(t Type, hi, lo Operand) Reg {
	if t != F16x2 && t != BF16x2 {
		f.errorf("PackHalf2 needs f16x2 or bf16x2, not %v", t)
	}
	f.check("cvt", F32, hi)
	f.check("cvt", F32, lo)
	d := f.Reg(t)
	f.emit(&Inst{Op: "cvt.rn." + t.String() + ".f32", Args: []Operand{d, hi, lo}})
	return d
}

// Unpack splits a 32-bit register into its low and high 16-bit halves.
func (f *Func) Unpack(w Reg) (lo, hi Reg) {
	if w.t.Bits() != 32 {
		f.errorf("Unpack needs a 32-bit register, got %v", w.t)
	}
	lo, hi = f.Reg(B16), f.Reg(B16)
	f.emit(&Inst{Op: "mov.b32", Args: []Operand{Vec{lo, hi}, w}})
	return lo, hi
}

// BitsToF32 reinterprets a 32-bit register as f32 (mov.b32).
func (f *Func) BitsToF32(w Reg) Reg {
	if w.t.Bits() != 32 {
		f.errorf("BitsToF32 needs a 32-bit register, got %v", w.t)
	}
	d := f.Reg(F32)
	f.emit(&Inst{Op: "mov.b32", Args: []Operand{d, w}})
	return d
}

// LdParam loads a kernel parameter. A tensor-map parameter is not
// loaded: pass it (or TensorMapAddr's address of it) to TmaLoad.
func (f *Func) LdParam(p Sym) Reg {
	if p.tmap {
		f.errorf("ld.param: %s is a 128-byte tensor map; pass it or TensorMapAddr(%s) to TmaLoad and TmaStore", p, p)
		return f.Reg(U64)
	}
	d := f.Reg(p.typ)
	f.emit(&Inst{Op: "ld.param." + p.typ.String(), Args: []Operand{d, At(p, 0)}})
	return d
}

// Cvta converts a generic address to the given state space (cvta.to.space.u64).
func (f *Func) Cvta(sp Space, a Reg) Reg {
	f.check("cvta", U64, a)
	d := f.Reg(U64)
	f.emit(&Inst{Op: "cvta.to." + string(sp) + ".u64", Args: []Operand{d, a}})
	return d
}

// LdOpts are optional qualifiers of ld and st.
type LdOpts struct {
	NC bool // ld.global.nc: read-only data path
	// Volatile (ld only) loads again every time it executes: ptxas may
	// neither drop nor hoist it (ld.volatile).
	Volatile bool
	// Cache is a cache operator (CacheAll … CacheWriteThrough), or
	// eviction and prefetch qualifiers with "::" (L1::no_allocate,
	// L2::256B, several joined by dots), which need PTX ISA 7.4.
	Cache CacheOp
	// Acquire (ld only, one element) is ld.acquire.gpu: what the
	// releases it reads from made visible before it is visible to the
	// thread's later accesses (a flag's reader).
	Acquire bool
}

// CacheOp is a cache operator of ld and st, printed without its dot.
type CacheOp string

// The cache operators. ld takes ca, cg, cs, lu and cv; st takes wb, cg,
// cs and wt.
const (
	CacheAll          CacheOp = "ca" // ld: cache at all levels
	CacheGlobal       CacheOp = "cg" // ld, st: cache in L2, not L1
	CacheStreaming    CacheOp = "cs" // ld, st: evict first
	CacheLastUse      CacheOp = "lu" // ld: last use
	CacheVolatile     CacheOp = "cv" // ld: fetch again
	CacheWriteBack    CacheOp = "wb" // st: write back
	CacheWriteThrough CacheOp = "wt" // st: write through to system memory
)

// ldCacheOps and stCacheOps are the operators each instruction takes.
var (
	ldCacheOps = []CacheOp{CacheAll, CacheGlobal, CacheStreaming, CacheLastUse, CacheVolatile}
	stCacheOps = []CacheOp{CacheWriteBack, CacheGlobal, CacheStreaming, CacheWriteThrough}
)

// cacheQual checks c for an ld (or st) and returns it as a qualifier.
func (f *Func) cacheQual(op string, c CacheOp, allowed []CacheOp) string {
	if c == "" {
		return ""
	}
	if !strings.Contains(string(c), "::") && !slices.Contains(allowed, c) {
		f.errorf("%s: cache operator %q (want one of %v, or L1::/L2:: qualifiers)", op, c, allowed)
	}
	return "." + string(c)
}

// Ld loads n (1, 2 or 4) consecutive elements of type t from addr in space
// sp and returns them.
func (f *Func) Ld(sp Space, t Type, n int, addr Addr, o ...LdOpts) []Reg {
	out := make([]Reg, n)
	for i := range out {
		out[i] = f.Reg(t)
	}
	f.LdTo(sp, t, out, addr, o...)
	return out
}

// LdTo loads into existing registers.
func (f *Func) LdTo(sp Space, t Type, dst []Reg, addr Addr, o ...LdOpts) {
	op := "ld." + string(sp)
	if len(o) > 0 && o[0].Volatile {
		if o[0].NC || o[0].Cache != "" {
			f.errorf("ld.volatile takes no .nc and no cache operator")
		}
		op = "ld.volatile." + string(sp)
	}
	if len(o) > 0 && o[0].Acquire {
		if o[0].NC || o[0].Volatile || o[0].Cache != "" || len(dst) != 1 {
			f.errorf("ld.acquire takes one element and no .nc, .volatile or cache operator")
		}
		op = "ld.acquire.gpu." + string(sp)
	}
	if len(o) > 0 {
		if o[0].NC {
			if sp != Global {
				f.errorf("ld.nc needs the global space, not %s", sp)
			}
			op += ".nc"
		}
		op += f.cacheQual("ld", o[0].Cache, ldCacheOps)
	}
	f.memop(op, sp, t, dst, addr)
}

// St stores vals (1, 2 or 4 registers or immediates of type t) to addr.
func (f *Func) St(sp Space, t Type, addr Addr, vals []Reg, o ...LdOpts) {
	op := "st." + string(sp)
	if len(o) > 0 {
		op += f.cacheQual("st", o[0].Cache, stCacheOps)
	}
	f.memop(op, sp, t, vals, addr)
}

func (f *Func) memop(op string, sp Space, t Type, regs []Reg, addr Addr) {
	switch len(regs) {
	case 1:
	case 2, 4:
		op += fmt.Sprintf(".v%d", len(regs))
		if len(regs)*t.Bits() > 128 {
			f.errorf("%s: %d × %v is wider than 128 bits", op, len(regs), t)
		}
	default:
		f.errorf("%s: vector of %d elements (want 1, 2 or 4)", op, len(regs))
	}
	for _, r := range regs {
		f.check(op, t, r)
	}
	f.checkAddr(op, sp, addr)
	ts := t.String()
	if t == F16 || t == BF16 {
		ts = "b16"
	}
	if t == F16x2 || t == BF16x2 {
		ts = "b32"
	}
	var data Operand = Vec(regs)
	if len(regs) == 1 {
		data = regs[0]
	}
	if op[0] == 'l' {
		f.emit(&Inst{Op: op + "." + ts, Args: []Operand{data, addr}})
	} else {
		f.emit(&Inst{Op: op + "." + ts, Args: []Operand{addr, data}})
	}
}

// checkAddr checks a memory operand of space sp: the base is a symbol or
// a 64-bit register; 32-bit registers address only shared memory (ptxas
// refuses 32-bit generic and global addresses under .address_size 64).
func (f *Func) checkAddr(op string, sp Space, a Addr) {
	switch b := a.Base.(type) {
	case Reg:
		switch {
		case b.t.Bits() == 64 && classOf(b.t) == clsB64:
		case b.t.Bits() == 32 && classOf(b.t) == clsB32 && (sp == Shared || sp == SharedCluster):
		case b.t.Bits() == 32 && classOf(b.t) == clsB32:
			f.errorf("%s: 32-bit address register %v used for the %s space (only shared takes 32-bit addresses)", op, b, sp)
		default:
			f.errorf("%s: address register %v is not a 32- or 64-bit integer register", op, b)
		}
	case Sym:
	default:
		f.errorf("%s: address base %v must be a register or symbol", op, a.Base)
	}
}

// BarSync emits bar.sync id: every thread of the CTA waits.
func (f *Func) BarSync(id int) {
	if id < 0 || id > 15 {
		f.errorf("bar.sync %d: barrier id must be 0..15", id)
	}
	f.emit(&Inst{Op: "bar.sync", Args: []Operand{Imm(id)}})
}

// BarRedOr emits bar.red.or.pred at barrier id over the whole CTA: every
// thread waits, and the result (CTA-uniform) is whether p holds in any
// thread.
func (f *Func) BarRedOr(id int, p Reg) Reg {
	if id < 0 || id > 15 {
		f.errorf("bar.red %d: barrier id must be 0..15", id)
	}
	f.check("bar.red", Pred, p)
	d := f.Reg(Pred)
	f.emit(&Inst{Op: "bar.red.or.pred", Args: []Operand{d, Imm(id), p}})
	return d
}

// BarSyncN emits bar.sync id, threads: the warps that reach named
// barrier id wait until threads of them (a multiple of 32) have, so that
// some warpgroups of a CTA sync among themselves.
func (f *Func) BarSyncN(id, threads int) {
	if id < 0 || id > 15 {
		f.errorf("bar.sync %d: barrier id must be 0..15", id)
	}
	if threads <= 0 || threads%32 != 0 {
		f.errorf("bar.sync %d, %d: the thread count must be a positive multiple of 32", id, threads)
	}
	f.emit(&Inst{Op: "bar.sync", Args: []Operand{Imm(id), Imm(threads)}})
}

// ShflSync emits shfl.sync.mode.b32 (mode: idx, up, down, bfly) with lane
// operand b, clamp/segment operand c and member mask, returning the value.
func (f *Func) ShflSync(mode string, a, b, c Operand, mask uint32) Reg {
	switch mode {
	case "idx", "up", "down", "bfly":
	default:
		f.errorf("shfl.sync mode %q (want idx, up, down, bfly)", mode)
	}
	f.check("shfl", B32, a)
	f.check("shfl", B32, b)
	f.check("shfl", B32, c)
	d := f.Reg(B32)
	f.emit(&Inst{Op: "shfl.sync." + mode + ".b32", Args: []Operand{d, a, b, c, Imm(int64(mask))}})
	return d
}

// Atom performs an atomic read-modify-write and returns the old value.
// The operations and the types PTX allows them:
//
//	add        u32, s32, u64, f32, f64, f16, f16x2, bf16, bf16x2 (bf16: sm_90)
//	min, max   u32, s32, u64, s64
//	inc, dec   u32
//	and, or, xor, exch   b32, b64
//
// Half-precision adds carry the .noftz qualifier PTX requires. cas is not
// offered here. An AtomOpts gives the operation a memory order and scope
// (atom.acquire.gpu.global…); without one it is relaxed at gpu scope, as
// PTX defines an atom without qualifiers.
func (f *Func) Atom(sp Space, op string, t Type, addr Addr, v Operand, o ...AtomOpts) Reg {
	q := f.atomOp("atom", op, t)
	f.check("atom", t, v)
	f.checkAddr("atom", sp, addr)
	d := f.Reg(t)
	f.emit(&Inst{Op: "atom" + f.order("atom", o) + "." + string(sp) + "." + q + "." + t.String(), Args: []Operand{d, addr, v}})
	return d
}

// Red performs an atomic reduction without returning the old value. It
// takes the operations, types and options of Atom except exch.
func (f *Func) Red(sp Space, op string, t Type, addr Addr, v Operand, o ...AtomOpts) {
	if op == "exch" {
		f.errorf("red has no exch operation (use Atom)")
	}
	q := f.atomOp("red", op, t)
	f.check("red", t, v)
	f.checkAddr("red", sp, addr)
	f.emit(&Inst{Op: "red" + f.order("red", o) + "." + string(sp) + "." + q + "." + t.String(), Args: []Operand{addr, v}})
}

// AtomOpts are the memory-consistency qualifiers of atom and red (PTX ISA
// 6.0, sm_70, within what the builder's sm_80 and PTX 7.0 floor already
// require). Sem: relaxed, acquire (atom only), release or acq_rel (atom
// only); Scope: cta, gpu or sys. Either may be empty; a scope alone is
// relaxed, a Sem alone is at gpu scope.
type AtomOpts struct {
	Sem, Scope string
}

// order returns the printed qualifiers of o (at most one), or "".
func (f *Func) order(inst string, o []AtomOpts) string {
	if len(o) > 1 {
		f.errorf("%s: %d AtomOpts (want at most one)", inst, len(o))
	}
	if len(o) == 0 || o[0] == (AtomOpts{}) {
		return ""
	}
	sem, scope := o[0].Sem, o[0].Scope
	switch {
	case sem == "":
		sem = "relaxed"
	case sem == "relaxed" || sem == "release":
	case (sem == "acquire" || sem == "acq_rel") && inst == "atom":
	case inst == "red":
		f.errorf("red: memory order %q (want relaxed or release)", sem)
	default:
		f.errorf("atom: memory order %q (want relaxed, acquire, release or acq_rel)", sem)
	}
	switch scope {
	case "":
		scope = "gpu"
	case "cta", "gpu", "sys":
	default:
		f.errorf("%s: scope %q (want cta, gpu or sys)", inst, scope)
	}
	return "." + sem + "." + scope
}

// atomOp checks op against t for atom and red and returns the operation
// qualifiers to print.
func (f *Func) atomOp(inst, op string, t Type) string {
	var ok bool
	switch op {
	case "add":
		switch t {
		case U32, S32, U64, F32, F64, F16, F16x2, BF16, BF16x2:
			ok = true
		}
	case "min", "max":
		ok = t == U32 || t == S32 || t == U64 || t == S64
	case "inc", "dec":
		ok = t == U32
	case "and", "or", "xor", "exch":
		ok = t == B32 || t == B64
	default:
		f.errorf("%s: unknown operation %q (add, min, max, inc, dec, and, or, xor, exch)", inst, op)
		return op
	}
	if !ok {
		f.errorf("%s.%s does not take type %v", inst, op, t)
	}
	if t == F16 || t == F16x2 || t == BF16 || t == BF16x2 {
		return op + ".noftz"
	}
	return op
}

// Ret ends the thread.
func (f *Func) Ret() { f.emit(&Inst{Op: "ret"}) }

// Raw emits an instruction the builder has no helper for. Its operands are
// not type-checked, only counted and matched to the kinds its row in the
// ISA table lists; it needs what the row says, and at least sm and
// ptxVersion (e.g. 80, 70) when the caller knows of more. An opcode the
// table lacks is written as given, and the analyses take its result to
// vary.
func (f *Func) Raw(sm, ptxVersion int, op string, args ...Operand) {
	in := &Inst{Op: op, Args: args, sm: sm, ptx: ptxVersion}
	runtime.Callers(2, in.pcs[:])
	f.emit(in)
}

// Guard makes the last emitted instruction conditional on p (@p, or @!p
// when negate is set).
func (f *Func) Guard(p Reg, negate bool) {
	if p.t != Pred {
		f.errorf("guard %v is not a predicate", p)
		return
	}
	ns := f.body.nodes
	if len(ns) > 0 {
		if in, ok := ns[len(ns)-1].(*Inst); ok {
			in.Guard, in.Negate = p, negate
			return
		}
	}
	f.errorf("Guard must follow an instruction in the same region")
}

// checkArgs checks in's operands against its row: their number, and each
// of the kind the row lists.
func (f *Func) checkArgs(r *isa.Row, in *Inst) {
	lo, hi := r.Arity()
	if n := len(in.Args); n < lo || n > hi {
		f.errorf("%s takes %s operands, not %d", in.Op, r.ArityString(), n)
		return
	}
	for i, a := range in.Args {
		if k := r.Args[i]; !kindOK(k, a) {
			f.errorf("%s: operand %d (%v) is not %v", in.Op, i+1, a, k)
		}
	}
}

// kindOK reports whether operand a may stand where the table wants kind k.
func kindOK(k isa.Kind, a Operand) bool {
	switch a.(type) {
	case Sink, DstPair:
		return k == isa.Dst
	case TensorAddr:
		return k == isa.Addr
	case Reg, Vec:
		return k == isa.Dst || k == isa.Src || k == isa.Mask
	case Imm:
		return k == isa.Src || k == isa.Mask
	case F32Imm, F64Imm, SReg, Sym:
		return k == isa.Src
	case Addr:
		return k == isa.Addr
	case Label:
		return k == isa.Label
	}
	return false
}
