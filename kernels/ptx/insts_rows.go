package ptx

// Instructions added for the row families (softmax, RMSNorm and LayerNorm
// backward): the memory barrier that orders a CTA's atomic column sums
// before the ticket that elects the CTA finishing last.

// Membar emits membar.level (level: cta, gl or sys): the executing
// thread's memory accesses before it are performed, at that scope, before
// those after it (fence.sc at that scope in the PTX memory model).
func (f *Func) Membar(level string) {
	switch level {
	case "cta", "gl", "sys":
	default:
		f.errorf("membar.%s: level must be cta, gl or sys", level)
	}
	f.emit(&Inst{Op: "membar." + level})
}

// Nanosleep emits nanosleep.u32 ns: the thread pauses for about ns
// nanoseconds (PTX bounds the pause), the back-off of a spin loop on a
// flag.
func (f *Func) Nanosleep(ns Operand) {
	f.check("nanosleep", U32, ns)
	f.emit(&Inst{Op: "nanosleep.u32", Args: []Operand{ns}})
}

// BarWarpSync emits bar.warp.sync mask: the lanes of mask meet, and the
// memory accesses of each before it are ordered before those of the
// others after it.
func (f *Func) BarWarpSync(mask uint32) {
	f.emit(&Inst{Op: "bar.warp.sync", Args: []Operand{Imm(int64(int32(mask)))}})
}
