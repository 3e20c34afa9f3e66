package elementwise

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// mapFunc computes one element of every output from the same element of
// every input (f32 registers, in the order the family lists them).
type mapFunc func(k *ptx.Func, in []ptx.Reg) []ptx.Reg

// placer gives the operands of unit u: where operand i (the inputs, then
// the outputs) holds the unit's vec elements. It is called once per unit
// and its result once per operand, in operand order, just before that
// operand's access.
type placer func(u ptx.Reg) func(i int) ptx.Addr

// kernel is the emission state of one map kernel: the work split of the
// package doc over units of vec elements, with the family's placement and
// math.
type kernel struct {
	k        *ptx.Func
	dt       dtype.DType
	block    int
	vec, ept int
	ld, st   ptx.LdOpts
	nIn      int
	emit     mapFunc
	place    placer
	// units is the unit count (u32, from the runtime dim); a thread whose
	// first unit is below fullEnd has all its ept units in range.
	units, fullEnd ptx.Reg
}

// newKernel starts entry's kernel with p's launch bounds and cache policy.
func newKernel(m *ptx.Module, entry string, dt dtype.DType, p Params, nIn int, emit mapFunc) *kernel {
	kn := &kernel{k: m.Func(entry), dt: dt, block: p.Block, vec: p.Vec, ept: p.EPT, nIn: nIn, emit: emit, ld: ptx.LdOpts{NC: true}}
	// Loads take the read-only path; cache=stream adds .cs to both.
	if p.Cache == CacheStream {
		kn.ld.Cache, kn.st.Cache = ptx.CacheStreaming, ptx.CacheStreaming
	}
	kn.k.ReqNTid(p.Block)
	kn.k.MaxNReg(p.MaxNReg)
	return kn
}

// params declares the operands' pointers, in order.
func (kn *kernel) params(names []string) []ptx.Reg {
	ptrs := make([]ptx.Reg, len(names))
	for i, n := range names {
		ptrs[i] = gen.Param(kn.k, n)
	}
	return ptrs
}

// setUnits records the unit count and derives fullEnd from it.
func (kn *kernel) setUnits(units ptx.Reg) {
	k := kn.k
	kn.units, kn.fullEnd = units, units
	if span := (kn.ept - 1) * kn.block; span > 0 {
		// units − span, or 0 when there are fewer units.
		kn.fullEnd = k.Sub(ptx.U32, k.Max(ptx.U32, units, ptx.Imm(span)), ptx.Imm(span))
	}
}

// run emits the grid's walk over the units from the thread's first unit,
// which it returns.
func (kn *kernel) run(grid Grid) ptx.Reg {
	k := kn.k
	tid := k.Mov(ptx.U32, ptx.TidX)
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	chunk := kn.block * kn.ept
	first := k.Mad(ptx.U32, cta, ptx.Imm(chunk), tid)
	if grid == GridStride {
		kn.strided(first, chunk)
	} else {
		kn.once(first)
	}
	return first
}

// once: each thread does the ept units from first, unguarded when all are
// in range, else those in range.
func (kn *kernel) once(first ptx.Reg) {
	k := kn.k
	full := k.Setp("lt", ptx.U32, first, kn.fullEnd)
	if kn.ept == 1 {
		k.If(full, func() { kn.body(first, false) })
		return
	}
	k.IfElse(full, func() { kn.body(first, false) }, func() { kn.tail(first) })
}

// strided: a grid-stride loop over the iterations whose units are all in
// range (unguarded), then the one iteration that may hold the last units.
func (kn *kernel) strided(first ptx.Reg, chunk int) {
	k := kn.k
	step := k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.NCtaidX), ptx.Imm(chunk))
	u0 := k.Mov(ptx.U32, first)
	k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, u0, kn.fullEnd) }, func() {
		kn.body(u0, false)
		k.MovTo(u0, k.Add(ptx.U32, u0, step))
	})
	// The loop ends at the first u0 whose last unit is past the end; the
	// next iteration's units would all be (step ≥ chunk).
	if kn.ept > 1 {
		kn.tail(u0)
	}
}

// tail does the units from u0 that are in range.
func (kn *kernel) tail(u0 ptx.Reg) {
	k := kn.k
	k.If(k.Setp("lt", ptx.U32, u0, kn.units), func() { kn.body(u0, true) })
}

// body does units u0, u0+block, …: all loads issued first, so that ept
// units' requests are in flight. guarded: unit 0 is known in range, the
// others are checked against the unit count.
func (kn *kernel) body(u0 ptx.Reg, guarded bool) {
	k := kn.k
	type unit struct {
		ok ptx.Reg
		at func(int) ptx.Addr
		in [][]ptx.Reg
	}
	us := make([]unit, kn.ept)
	for j := range us {
		u := k.Add(ptx.U32, u0, ptx.Imm(j*kn.block))
		if guarded && j > 0 {
			us[j].ok = k.Setp("lt", ptx.U32, u, kn.units)
		}
		us[j].at = kn.place(u)
		for i := range kn.nIn {
			us[j].in = append(us[j].in, gen.LdVals(k, ptx.Global, kn.dt, kn.vec, us[j].at(i), us[j].ok, kn.ld))
		}
	}
	for _, un := range us {
		kn.store(un.at, kn.lanes(un.in, kn.vec), un.ok)
	}
}

// lanes applies the map to each of the vec lanes of the inputs' vectors
// and returns the outputs' vectors.
func (kn *kernel) lanes(in [][]ptx.Reg, vec int) [][]ptx.Reg {
	var out [][]ptx.Reg
	for l := range vec {
		args := make([]ptx.Reg, len(in))
		for i := range in {
			args[i] = in[i][l]
		}
		for o, r := range kn.emit(kn.k, args) {
			if l == 0 {
				out = append(out, make([]ptx.Reg, vec))
			}
			out[o][l] = r
		}
	}
	return out
}

// store writes the outputs' vectors, operand nIn+o for output o.
func (kn *kernel) store(at func(int) ptx.Addr, out [][]ptx.Reg, ok ptx.Reg) {
	for o, v := range out {
		gen.StVals(kn.k, kn.dt, at(kn.nIn+o), v, ok, kn.st)
	}
}
