package ptx

import "fmt"

// Tensor-core and asynchronous-copy instructions of sm_80 (PTX ISA 7.0):
// mma.sync, ldmatrix and cp.async. Fragment layouts are the PTX ISA's; the
// CPU interpreter (runner/sim) implements the same ones.

// MmaSync emits mma.sync.aligned.m16n8k16.row.col.f32.ab.ab.f32 and returns
// the accumulator d = a·b + c of one warp: a 16×16 (row major) times b
// 16×8 (column major) plus c 16×8, with ab F16 or BF16 and f32 c and d.
// Every lane of the warp must execute it. Each lane holds (groupID =
// laneid>>2, tig = laneid%4):
//
//	a: four 32-bit registers of two halves (low half first), a0..a7:
//	   row groupID (+8 for a2, a3, a6, a7), column 2·tig + i%2 (+8 for i ≥ 4)
//	b: two registers, b0..b3: row 2·tig + i%2 (+8 for i ≥ 2), column groupID
//	c, d: four f32 registers, c0..c3: row groupID (+8 for c2, c3), column 2·tig + i%2
func (f *Func) MmaSync(ab Type, a [4]Reg, b [2]Reg, c [4]Reg) [4]Reg {
	var d [4]Reg
	for i := range d {
		d[i] = f.Reg(F32)
	}
	f.MmaSyncTo(ab, d, a, b, c)
	return d
}

// MmaSyncTo is MmaSync into existing registers d (which may be c, to
// accumulate in place).
func (f *Func) MmaSyncTo(ab Type, d [4]Reg, a [4]Reg, b [2]Reg, c [4]Reg) {
	if ab != F16 && ab != BF16 {
		f.errorf("mma.sync m16n8k16: multiplicand type %v (want f16 or bf16)", ab)
		return
	}
	for i, r := range a {
		f.checkFrag(fmt.Sprintf("mma.sync a[%d]", i), r)
	}
	for i, r := range b {
		f.checkFrag(fmt.Sprintf("mma.sync b[%d]", i), r)
	}
	for i := range c {
		f.checkAcc(fmt.Sprintf("mma.sync c[%d]", i), c[i])
		f.checkAcc(fmt.Sprintf("mma.sync d[%d]", i), d[i])
	}
	op := fmt.Sprintf("mma.sync.aligned.m16n8k16.row.col.f32.%v.%v.f32", ab, ab)
	f.emit(&Inst{Op: op, Args: []Operand{Vec(d[:]), Vec(a[:]), Vec(b[:]), Vec(c[:])}})
}

// checkFrag checks a multiplicand fragment register: 32 bits holding two
// halves, in the %r class (b32, f16x2 or bf16x2).
func (f *Func) checkFrag(what string, r Reg) {
	if !r.Valid() {
		f.errorf("%s: uninitialised register", what)
		return
	}
	if classOf(r.t) != clsB32 {
		f.errorf("%s: register %v is %v; want a 32-bit register of two halves (b32, f16x2, bf16x2)", what, r, r.t)
	}
}

func (f *Func) checkAcc(what string, r Reg) {
	if !r.Valid() {
		f.errorf("%s: uninitialised register", what)
		return
	}
	if r.t != F32 {
		f.errorf("%s: register %v is %v; want f32", what, r, r.t)
	}
}

// Ldmatrix emits ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 and
// returns n (1, 2 or 4) b32 registers, one per 8×8 matrix of 16-bit
// elements. Lane 8·i+r gives in addr the address of row r of matrix i (16
// bytes, 16-byte aligned, in shared memory); lanes past 8·n give ignored
// addresses. Lane t receives, of each matrix, row t/4, columns 2·(t%4) and
// 2·(t%4)+1 (low half first); with trans, the elements at rows 2·(t%4) and
// 2·(t%4)+1 of column t/4. Every lane of the warp must execute it.
func (f *Func) Ldmatrix(n int, trans bool, addr Addr) []Reg {
	if n != 1 && n != 2 && n != 4 {
		f.errorf("ldmatrix: %d matrices (want 1, 2 or 4)", n)
		return nil
	}
	f.checkAddr("ldmatrix", Shared, addr)
	d := make([]Reg, n)
	for i := range d {
		d[i] = f.Reg(B32)
	}
	op := fmt.Sprintf("ldmatrix.sync.aligned.m8n8.x%d", n)
	if trans {
		op += ".trans"
	}
	f.emit(&Inst{Op: op + ".shared.b16", Args: []Operand{Vec(d), addr}})
	return d
}

// CpAsync emits cp.async.{ca,cg}.shared.global [dst], [src], bytes: an
// asynchronous copy of bytes (4, 8 or 16; .cg takes 16 only) from global
// memory at src to shared memory at dst, both aligned to bytes. The copy
// is complete only after a CpAsyncWait that covers its group.
func (f *Func) CpAsync(cache string, dst, src Addr, bytes int) {
	switch {
	case cache != "ca" && cache != "cg":
		f.errorf("cp.async: cache operator %q (want ca or cg)", cache)
		return
	case bytes != 4 && bytes != 8 && bytes != 16:
		f.errorf("cp.async: %d bytes (want 4, 8 or 16)", bytes)
		return
	case cache == "cg" && bytes != 16:
		f.errorf("cp.async.cg copies 16 bytes, not %d", bytes)
		return
	}
	f.checkAddr("cp.async destination", Shared, dst)
	f.checkAddr("cp.async source", Global, src)
	if _, ok := src.Base.(Sym); ok {
		f.errorf("cp.async source must be a global address register, not a symbol")
	}
	f.emit(&Inst{Op: "cp.async." + cache + ".shared.global", Args: []Operand{dst, src, Imm(bytes)}})
}

// CpAsyncCommit emits cp.async.commit_group: the thread's copies issued
// since the last commit form a group.
func (f *Func) CpAsyncCommit() {
	f.emit(&Inst{Op: "cp.async.commit_group"})
}

// CpAsyncWait emits cp.async.wait_group n: the thread waits until at most
// n of its committed groups (the most recent ones) are still in flight.
// Other threads' copies need a barrier after the wait to be visible.
func (f *Func) CpAsyncWait(n int) {
	if n < 0 {
		f.errorf("cp.async.wait_group %d: want a count of at least 0", n)
		return
	}
	f.emit(&Inst{Op: "cp.async.wait_group", Args: []Operand{Imm(n)}})
}
