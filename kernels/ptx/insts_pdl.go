package ptx

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
	f.emit(&Inst{Op: "griddepcontrol.wait", sm: 90, ptx: 78})
}

// GridDepLaunch emits griddepcontrol.launch_dependents: once every CTA of
// this kernel has executed it (or exited), the dependent launch may begin.
func (f *Func) GridDepLaunch() {
	f.emit(&Inst{Op: "griddepcontrol.launch_dependents", sm: 90, ptx: 78})
}
