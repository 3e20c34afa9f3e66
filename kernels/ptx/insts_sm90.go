package ptx

import "fmt"

// Instructions that need sm_90: programmatic dependent launch and the
// vector form of red.add.f32.
//
// Programmatic dependent launch (PDL, sm_90): a kernel launched with
// programmatic stream serialization may start while the previous kernel
// of its stream is still running. griddepcontrol.wait blocks until that
// kernel (every prerequisite grid) has completed and its memory
// operations are visible; griddepcontrol.launch_dependents lets the next,
// dependent kernel start before this one ends (by default it may start
// once every CTA of this kernel has exited). Both need PTX ISA 7.8 and
// sm_90, which they raise the module's .version and .target to. A kernel
// launched without the attribute is unaffected by either.

// GridDepWait emits griddepcontrol.wait: what the previous launches wrote
// is visible after it, and what they read may be overwritten.
func (f *Func) GridDepWait() {
	f.emit(&Inst{Op: "griddepcontrol.wait"})
}

// GridDepLaunch emits griddepcontrol.launch_dependents: once every CTA of
// this kernel has executed it (or exited), the dependent launch may begin.
func (f *Func) GridDepLaunch() {
	f.emit(&Inst{Op: "griddepcontrol.launch_dependents"})
}

// RedAddF32 adds the f32 values vals to consecutive words at addr in
// global memory, each element an independent atomic add: red.global.add.f32
// for one value, the sm_90 vector form red.global.add.v2.f32 or .v4.f32
// (PTX ISA 8.1) for two or four, which cuts the atomic operations a
// column sum sends to L2 by as much. The address must be aligned to the
// vector's size.
func (f *Func) RedAddF32(addr Addr, vals []Reg) {
	switch len(vals) {
	case 1:
		f.Red(Global, "add", F32, addr, vals[0])
		return
	case 2, 4:
	default:
		f.errorf("red.global.add.f32: vector of %d values (want 1, 2 or 4)", len(vals))
		return
	}
	for _, v := range vals {
		f.check("red.global.add.f32", F32, v)
	}
	f.checkAddr("red", Global, addr)
	f.emit(&Inst{Op: fmt.Sprintf("red.global.add.v%d.f32", len(vals)), Args: []Operand{addr, Vec(vals)}})
}
