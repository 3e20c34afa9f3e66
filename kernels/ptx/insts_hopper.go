package ptx

import "fmt"

// Hopper (sm_90, sm_90a) instructions for tensor-core GEMMs: warpgroup
// MMA (wgmma) on shared-memory descriptors, mbarriers, TMA bulk tensor
// copies, proxy fences, register reallocation, clusters. Each helper
// raises the module to what its row needs: wgmma and setmaxnreg to sm_90a
// and PTX ISA 8.0, the others to sm_90 and PTX 7.8 or 8.0.
//
// Warpgroup-collective instructions (wgmma.*, setmaxnreg) must be
// executed by all 128 threads of a warpgroup (four consecutive warps, the
// first a multiple of 4) under warpgroup-uniform control: the analyses
// check it (analysis.go). The ordering a GEMM needs between them
// (wgmma.fence before the first wgmma and after other writes of its
// registers; reading an accumulator only after a wait_group that covers
// it; fence.proxy.async between st.shared and a wgmma or TMA store that
// reads the same bytes) is the caller's.

// Swizzle is the shared-memory layout of a wgmma operand tile, as its
// descriptor's layout field and the TMA tensor map that fills it name it.
type Swizzle int

// The layouts, by their descriptor code.
const (
	SwizzleNone Swizzle = 0 // interleaved 8×16-byte core matrices
	Swizzle128B Swizzle = 1 // 16-byte chunks XORed within 128-byte rows, 1024-byte atoms
	Swizzle64B  Swizzle = 2 // ... within 64-byte rows, 512-byte atoms
	Swizzle32B  Swizzle = 3 // ... within 32-byte rows, 256-byte atoms
)

// Span returns the bytes of one swizzled row (128, 64, 32), or 16 for
// SwizzleNone (a core-matrix row); the swizzle atom is 8 rows of it.
func (s Swizzle) Span() int {
	switch s {
	case Swizzle128B:
		return 128
	case Swizzle64B:
		return 64
	case Swizzle32B:
		return 32
	}
	return 16
}

// descNote marks WgmmaDesc's first instruction with the tile it
// describes, for the alignment rule of the analyses.
type descNote struct {
	addr Reg
	sw   Swizzle
}

// WgmmaDesc returns the 64-bit shared-memory matrix descriptor of the
// tile at addr, a 32-bit shared-window address (the u32 Mov of a shared
// symbol plus an offset): start address (addr & 0x3FFFF) >> 4 in bits
// [0,14), the leading byte offset lbo >> 4 in [16,30), the stride byte
// offset sbo >> 4 in [32,46), base offset 0 and the layout sw in [62,64).
// lbo and sbo are multiples of 16 below 2^18. K-major with Swizzle128B:
// lbo 16 (unused), sbo 1024; a k16 step is WgmmaDescAdd(desc, 32).
// MN-major (transposed) with Swizzle128B: sbo 1024, lbo the distance
// between 64-element atoms; a k16 step adds 2048 bytes.
//
// A swizzled tile starts at an atom boundary (8·Span bytes: 1024 for
// Swizzle128B) since the base offset is 0; addr may lie within the
// atom's first row (a k step of a K-major tile). The analyses report an
// addr that is provably elsewhere (RuleSwizzleAlign).
func (f *Func) WgmmaDesc(addr Reg, lbo, sbo int, sw Swizzle) Reg {
	if !addr.Valid() || classOf(addr.t) != clsB32 || addr.t.IsFloat() {
		f.errorf("wgmma descriptor: start address %v must be a 32-bit shared-window address register", addr)
		return f.Reg(B64)
	}
	for _, o := range []struct {
		name string
		v    int
	}{{"leading byte offset", lbo}, {"stride byte offset", sbo}} {
		if o.v < 0 || o.v%16 != 0 || o.v >= 1<<18 {
			f.errorf("wgmma descriptor: %s %d must be a multiple of 16 in [0, 2^18)", o.name, o.v)
		}
	}
	if sw < SwizzleNone || sw > Swizzle32B {
		f.errorf("wgmma descriptor: swizzle mode %d (want SwizzleNone, Swizzle128B, Swizzle64B or Swizzle32B)", sw)
	}
	start := f.Reg(U32)
	in := f.emit(&Inst{Op: "bfe.u32", Args: []Operand{start, addr, Imm(4), Imm(14)}})
	in.desc = &descNote{addr: addr, sw: sw}
	wide := f.Reg(U64)
	f.emit(&Inst{Op: "cvt.u64.u32", Args: []Operand{wide, start}})
	c := uint64(lbo>>4)<<16 | uint64(sbo>>4)<<32 | uint64(sw&3)<<62
	d := f.Reg(B64)
	f.emit(&Inst{Op: "or.b64", Args: []Operand{d, wide, Imm(int64(c))}})
	return d
}

// WgmmaDescAdd returns desc with its start address advanced by bytes (a
// multiple of 16, negative to go back): the next k16 step of a tile. The
// start address must stay within its 14-bit field; nothing checks it.
func (f *Func) WgmmaDescAdd(desc Reg, bytes int) Reg {
	f.check("wgmma descriptor", B64, desc)
	if bytes%16 != 0 {
		f.errorf("wgmma descriptor: advance of %d bytes is not a multiple of 16", bytes)
	}
	d := f.Reg(B64)
	f.emit(&Inst{Op: "add.s64", Args: []Operand{d, desc, Imm(bytes / 16)}})
	return d
}

// WgmmaAcc allocates the accumulator of an m64nNk16 wgmma with f32
// results: N/2 f32 registers per thread (N a multiple of 8 from 8 to
// 256). Warp w of the warpgroup, lane l holds, for j < N/8, row
// 16w + l/4 at columns 8j + 2(l%4) + {0, 1} in d[4j], d[4j+1], and row
// 16w + l/4 + 8 at the same columns in d[4j+2], d[4j+3]. The registers
// start undefined: the first Wgmma takes ScaleD Imm(0) (or zero them).
func (f *Func) WgmmaAcc(n int) []Reg {
	if n < 8 || n > 256 || n%8 != 0 {
		f.errorf("wgmma accumulator: N = %d (want a multiple of 8 from 8 to 256)", n)
		return nil
	}
	d := make([]Reg, n/2)
	for i := range d {
		d[i] = f.Reg(F32)
	}
	return d
}

// WgmmaOpts are the immediate operands of wgmma.mma_async.
type WgmmaOpts struct {
	// ScaleD is d = a·b + ScaleD·d: a predicate register, or Imm(0)
	// (overwrite: the first k step) or Imm(1); nil is Imm(1).
	ScaleD Operand
	// NegA and NegB negate A or B (imm-scale -1).
	NegA, NegB bool
	// TransA and TransB read A or B MN-major (imm-trans 1); TransA only
	// for a descriptor A.
	TransA, TransB bool
}

// Wgmma emits wgmma.mma_async.sync.aligned.m64nNk16.f32.ab.ab with A and
// B from shared memory: d = A·B + scale·d, A 64×16 (descriptor a), B
// 16×N (descriptor b), ab F16 or BF16, N = 2·len(d) (d from WgmmaAcc).
// It is asynchronous: d may be read, and the tiles overwritten, only
// after a WgmmaWait that covers its WgmmaCommit; a WgmmaFence must
// precede the first wgmma and follow other writes of d. Warpgroup-
// collective.
func (f *Func) Wgmma(ab Type, d []Reg, a, b Reg, o WgmmaOpts) {
	f.check("wgmma a descriptor", B64, a)
	f.wgmma(ab, d, a, b, o, true)
}

// WgmmaRegA is Wgmma with A from registers (the RS form): each warp's 16
// rows of A in four 32-bit registers of two halves, laid out as
// MmaSync's a fragment. TransA does not apply.
func (f *Func) WgmmaRegA(ab Type, d []Reg, a [4]Reg, b Reg, o WgmmaOpts) {
	for i, r := range a {
		f.checkFrag(fmt.Sprintf("wgmma a[%d]", i), r)
	}
	if o.TransA {
		f.errorf("wgmma: imm-trans-a applies to a descriptor A only")
	}
	f.wgmma(ab, d, Vec(a[:]), b, o, false)
}

func (f *Func) wgmma(ab Type, d []Reg, a Operand, b Reg, o WgmmaOpts, descA bool) {
	if ab != F16 && ab != BF16 {
		f.errorf("wgmma: multiplicand type %v (want f16 or bf16)", ab)
		return
	}
	n := 2 * len(d)
	if n < 8 || n > 256 || n%8 != 0 {
		f.errorf("wgmma: %d accumulator registers (want N/2 for N a multiple of 8 from 8 to 256)", len(d))
		return
	}
	for i, r := range d {
		f.checkAcc(fmt.Sprintf("wgmma d[%d]", i), r)
	}
	f.check("wgmma b descriptor", B64, b)
	var scale Operand = Imm(1)
	switch s := o.ScaleD.(type) {
	case nil:
	case Reg:
		if s.t != Pred {
			f.errorf("wgmma: scale-d register %v is not a predicate", s)
		}
		scale = s
	case Imm:
		if s != 0 && s != 1 {
			f.errorf("wgmma: scale-d %d (want 0 or 1)", s)
		}
		scale = s
	default:
		f.errorf("wgmma: scale-d %v must be a predicate or 0 or 1", s)
	}
	bit := func(b bool, yes, no int64) Imm {
		if b {
			return Imm(yes)
		}
		return Imm(no)
	}
	args := []Operand{Vec(d), a, b, scale, bit(o.NegA, -1, 1), bit(o.NegB, -1, 1)}
	if descA {
		args = append(args, bit(o.TransA, 1, 0))
	}
	args = append(args, bit(o.TransB, 1, 0))
	op := fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%v.%v", n, ab, ab)
	f.emit(&Inst{Op: op, Args: args})
}

// WgmmaFence emits wgmma.fence.sync.aligned: the warpgroup's earlier
// register and shared-memory writes are ordered before its following
// wgmma.mma_async.
func (f *Func) WgmmaFence() { f.emit(&Inst{Op: "wgmma.fence.sync.aligned"}) }

// WgmmaCommit emits wgmma.commit_group.sync.aligned: the wgmma issued
// since the last commit form a group.
func (f *Func) WgmmaCommit() { f.emit(&Inst{Op: "wgmma.commit_group.sync.aligned"}) }

// WgmmaWait emits wgmma.wait_group.sync.aligned n: the warpgroup waits
// until at most n of its committed groups are pending (0..7).
func (f *Func) WgmmaWait(n int) {
	if n < 0 || n > 7 {
		f.errorf("wgmma.wait_group %d: want 0 to 7", n)
		return
	}
	f.emit(&Inst{Op: "wgmma.wait_group.sync.aligned", Args: []Operand{Imm(n)}})
}

// SetMaxNReg emits setmaxnreg.{inc,dec}.sync.aligned.u32 n: the
// warpgroup's per-thread register budget grows to (inc) or shrinks to
// (dec) n, a multiple of 8 from 24 to 256. Warpgroup-collective; the
// kernel needs .maxnreg (MaxNReg), without which ptxas ignores it, and
// Build reports that.
func (f *Func) SetMaxNReg(inc bool, n int) {
	if n < 24 || n > 256 || n%8 != 0 {
		f.errorf("setmaxnreg %d: want a multiple of 8 from 24 to 256", n)
		return
	}
	if f.setmaxnregPos == "" {
		f.setmaxnregPos = callerPos()
	}
	op := "setmaxnreg.dec.sync.aligned.u32"
	if inc {
		op = "setmaxnreg.inc.sync.aligned.u32"
	}
	f.emit(&Inst{Op: op, Args: []Operand{Imm(n)}})
}
