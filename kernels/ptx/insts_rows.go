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
