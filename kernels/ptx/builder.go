package ptx

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"unicode"

	"github.com/gradtune/gradtune/kernels/ptx/isa"
)

// Module is a PTX module under construction: kernels plus the errors met
// while writing them.
type Module struct {
	funcs []*Func
	errs  []error
	names map[string]bool
}

// NewModule starts an empty module.
func NewModule() *Module { return &Module{names: map[string]bool{}} }

// Func starts a kernel (.visible .entry) called name and returns its build
// context.
func (m *Module) Func(name string) *Func {
	f := &Func{mod: m, name: name}
	if !validIdent(name) {
		f.errorf("invalid kernel name %q", name)
	} else if m.names[name] {
		f.errorf("kernel %q defined twice", name)
	}
	m.names[name] = true
	f.body = &f.root
	m.funcs = append(m.funcs, f)
	return f
}

// Build finishes the module. It returns every error recorded while the
// kernels were written, each prefixed with the caller's file:line; or,
// when there are none, the violations the static analyses find in the
// kernels (barriers under non-uniform control, warp-synchronous masks that
// differ from the lanes reaching them, shared-memory accesses out of
// bounds: see analysis.go), each an *UnsafeError wrapping ErrUnsafe; or
// the finished, printable module.
func (m *Module) Build() (*Built, error) {
	errs := append([]error(nil), m.errs...)
	for _, f := range m.funcs {
		if len(f.stack) != 0 {
			errs = append(errs, fmt.Errorf("kernel %s: unbalanced control flow", f.name))
		}
		errs = append(errs, f.validate()...)
	}
	if len(m.funcs) == 0 {
		errs = append(errs, errors.New("module has no kernels"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// The analyses (analysis.go) need a complete, well-typed kernel.
	for _, f := range m.funcs {
		errs = append(errs, f.analyze()...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	b := &Built{funcs: m.funcs, sm: 80, ptx: 70}
	for _, f := range m.funcs {
		b.sm, b.ptx = max(b.sm, f.dirSM), max(b.ptx, f.dirPTX)
		walk(f.root.nodes, func(n node) {
			if in, ok := n.(*Inst); ok {
				b.sm = max(b.sm, in.sm)
				b.ptx = max(b.ptx, in.ptx)
				b.specific = b.specific || in.specific
			}
		})
	}
	return b, nil
}

// Built is a finished module.
type Built struct {
	funcs    []*Func
	sm, ptx  int
	specific bool // an instruction needs the architecture-specific target
}

// Target returns the derived target, e.g. "sm_80", or "sm_90a" when an
// instruction exists only on the architecture-specific target (wgmma,
// setmaxnreg: their rows are ArchSpecific).
func (b *Built) Target() string {
	if b.specific {
		return fmt.Sprintf("sm_%da", b.sm)
	}
	return fmt.Sprintf("sm_%d", b.sm)
}

// Version returns the derived PTX ISA version, e.g. "7.0".
func (b *Built) Version() string { return fmt.Sprintf("%d.%d", b.ptx/10, b.ptx%10) }

// Entries lists the kernel names in definition order.
func (b *Built) Entries() []string {
	var n []string
	for _, f := range b.funcs {
		n = append(n, f.name)
	}
	return n
}

// Func is the build context of one kernel.
type Func struct {
	mod    *Module
	name   string
	params []Sym
	shared []sharedDecl
	dyn    *sharedDecl
	nregs  [numClasses]int
	labels int
	placed map[Label]bool // raw labels placed with Label

	maxnreg, minCTAs int
	minCTAsPos       string // where MinNCTAPerSM was called
	maxntid, reqntid []int
	cluster          []int  // .reqnctapercluster
	setmaxnregPos    string // where SetMaxNReg was first called
	dirSM, dirPTX    int    // what the kernel's directives need

	root  block
	body  *block
	stack []*block
}

type sharedDecl struct {
	sym   Sym
	count int
	align int
}

// block is a list of nodes: a structured region.
type block struct{ nodes []node }

// node is an IR element: *Inst, *ifNode, *loopNode, *labelNode or *comment.
type node interface{ isNode() }

// Inst is one instruction.
type Inst struct {
	Guard    Reg  // predicate guard, zero if none
	Negate   bool // @!p
	Op       string
	Args     []Operand
	sm, ptx  int
	specific bool       // its row is ArchSpecific (sm_90a)
	pcs      [8]uintptr // where Raw wrote it, resolved by Pos
	cls      opClass    // the analyses' reading of Op, filled by emit
	desc     *descNote  // WgmmaDesc's first instruction: the tile it describes
}

func (*Inst) isNode() {}

type ifNode struct {
	cond      Reg
	negate    bool
	then, els block
	id        int
	hasElse   bool
}

func (*ifNode) isNode() {}

type loopNode struct {
	cond  block // evaluated at the top; computes condReg
	condR Reg
	body  block
	id    int
}

func (*loopNode) isNode() {}

type labelNode struct{ l Label }

func (*labelNode) isNode() {}

type comment string

func (comment) isNode() {}

func walk(ns []node, fn func(node)) {
	for _, n := range ns {
		fn(n)
		switch x := n.(type) {
		case *ifNode:
			walk(x.then.nodes, fn)
			walk(x.els.nodes, fn)
		case *loopNode:
			walk(x.cond.nodes, fn)
			walk(x.body.nodes, fn)
		}
	}
}

// Name returns the kernel name.
func (f *Func) Name() string { return f.name }

// errorf records an error at the position of the first caller outside this
// package.
func (f *Func) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.mod.errs = append(f.mod.errs, fmt.Errorf("%s: kernel %s: %s", callerPos(), f.name, msg))
}

func callerPos() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(3, pcs)
	return framePos(pcs[:n])
}

// Pos returns the file:line of the first caller outside this package that
// wrote the instruction with Raw, or "?" for other instructions (walking
// the stack for each one would cost more than building it) and when it is
// too deep to tell.
func (in *Inst) Pos() string {
	n := 0
	for n < len(in.pcs) && in.pcs[n] != 0 {
		n++
	}
	return framePos(in.pcs[:n])
}

func framePos(pcs []uintptr) string {
	if len(pcs) == 0 {
		return "?"
	}
	frames := runtime.CallersFrames(pcs)
	for {
		fr, more := frames.Next()
		if !strings.Contains(fr.Function, "/kernels/ptx.") || strings.HasSuffix(fr.File, "_test.go") {
			return fmt.Sprintf("%s:%d", filepath.Base(fr.File), fr.Line)
		}
		if !more {
			return "?"
		}
	}
}

// Reg allocates a new virtual register of type t.
func (f *Func) Reg(t Type) Reg {
	if t.Bits() == 0 {
		f.errorf("register of invalid type %v", t)
		return Reg{}
	}
	c := classOf(t)
	f.nregs[c]++
	return Reg{t: t, id: f.nregs[c]}
}

// Param declares a kernel parameter of type t (U64 for pointers).
func (f *Func) Param(name string, t Type) Sym {
	s := Sym{Name: f.name + "_param_" + name, typ: t}
	if !validIdent(name) {
		f.errorf("invalid parameter name %q", name)
	}
	for _, p := range f.params {
		if p.Name == s.Name {
			f.errorf("parameter %q declared twice", name)
		}
	}
	f.params = append(f.params, s)
	return s
}

// SharedArray declares a static shared-memory array of count elements of
// type t with the given alignment (0: natural).
func (f *Func) SharedArray(name string, t Type, count, align int) Sym {
	if !validIdent(name) {
		f.errorf("invalid shared array name %q", name)
	}
	if count <= 0 {
		f.errorf("shared array %s: count %d must be positive", name, count)
	}
	if t.Bits() < 16 {
		f.errorf("shared array %s: type %v cannot be stored", name, t)
		t = B32
	}
	if align == 0 {
		align = t.Bits() / 8
	}
	if align < t.Bits()/8 || align&(align-1) != 0 {
		f.errorf("shared array %s: alignment %d must be a power of two of at least %d", name, align, t.Bits()/8)
	}
	s := Sym{Name: f.name + "_smem_" + name, typ: t}
	f.shared = append(f.shared, sharedDecl{s, count, align})
	return s
}

// DynamicShared declares the kernel's dynamic shared memory (extern, size
// given at launch) and returns its symbol.
func (f *Func) DynamicShared(name string, align int) Sym {
	if f.dyn != nil {
		f.errorf("dynamic shared memory declared twice")
		return f.dyn.sym
	}
	if !validIdent(name) {
		f.errorf("invalid dynamic shared memory name %q", name)
	}
	if align&(align-1) != 0 || align < 0 {
		f.errorf("dynamic shared memory %s: alignment %d is not a power of two", name, align)
	}
	s := Sym{Name: f.name + "_dsmem_" + name}
	f.dyn = &sharedDecl{sym: s, align: max(align, 16)}
	return s
}

// StaticSharedBytes returns the bytes of static shared memory declared.
func (f *Func) StaticSharedBytes() int {
	n := 0
	for _, s := range f.shared {
		n = (n+s.align-1)/s.align*s.align + s.count*s.sym.typ.Bits()/8
	}
	return n
}

// MaxNReg sets .maxnreg (0 leaves it unset).
func (f *Func) MaxNReg(n int) {
	if n != 0 && (n < 16 || n > 255) {
		f.errorf(".maxnreg %d out of range 16..255", n)
	}
	f.maxnreg = n
}

// MaxNTid sets .maxntid. A kernel takes .maxntid or .reqntid, not both.
func (f *Func) MaxNTid(dims ...int) {
	if f.reqntid != nil {
		f.errorf(".maxntid %v: .reqntid is already set", dims)
	}
	f.maxntid = f.checkDims(".maxntid", dims)
}

// ReqNTid sets .reqntid: the kernel must be launched with exactly this block.
func (f *Func) ReqNTid(dims ...int) {
	if f.maxntid != nil {
		f.errorf(".reqntid %v: .maxntid is already set", dims)
	}
	f.reqntid = f.checkDims(".reqntid", dims)
}

// MinNCTAPerSM sets .minnctapersm. ptxas ignores it unless .maxntid or
// .reqntid is set too, so Build reports a kernel that has neither.
func (f *Func) MinNCTAPerSM(n int) {
	if n < 0 {
		f.errorf(".minnctapersm %d is negative", n)
	}
	f.minCTAs = n
	f.minCTAsPos = callerPos()
}

func (f *Func) checkDims(what string, dims []int) []int {
	prod := 1
	for _, d := range dims {
		prod *= d
		if d <= 0 {
			f.errorf("%s %v: dimensions must be positive", what, dims)
			return nil
		}
	}
	if len(dims) == 0 || len(dims) > 3 || prod > 1024 {
		f.errorf("%s %v: want 1 to 3 dimensions of at most 1024 threads in all", what, dims)
		return nil
	}
	return dims
}

// ReqNCtaPerCluster sets .reqnctapercluster: the kernel runs in clusters
// of this shape (sm_90, PTX ISA 7.8, which it raises the module to), and
// its launch must give the same shape (kernels.Launch.Cluster). At most 8
// CTAs, the portable cluster size.
func (f *Func) ReqNCtaPerCluster(dims ...int) {
	n := 1
	for _, d := range dims {
		n *= max(d, 0)
	}
	if len(dims) == 0 || len(dims) > 3 || n == 0 || n > 8 {
		f.errorf(".reqnctapercluster %v: want 1 to 3 positive dimensions of at most 8 CTAs in all", dims)
		return
	}
	d, _ := isa.LookupDirective(".reqnctapercluster")
	f.dirSM, f.dirPTX = max(f.dirSM, d.SM), max(f.dirPTX, d.PTX)
	f.cluster = dims
}

// ReqNTidCount returns the number of threads .reqntid fixes, or 0.
func (f *Func) ReqNTidCount() int {
	if f.reqntid == nil {
		return 0
	}
	n := 1
	for _, d := range f.reqntid {
		n *= d
	}
	return n
}

func (f *Func) label() int {
	f.labels++
	return f.labels
}

// emit appends an instruction to the current region. It needs what its
// row in the ISA table says (isa.Lookup), at least the builder's floor of
// sm_80 and PTX ISA 7.0, and what Raw's caller states; its operands must
// be of the kinds the row lists. An opcode without a row (Raw only) is
// taken as written.
func (f *Func) emit(in *Inst) *Inst {
	in.sm, in.ptx = max(in.sm, 80), max(in.ptx, 70)
	if r, ok := isa.Lookup(in.Op); ok {
		sm, pv := r.Target(in.Op)
		in.sm, in.ptx = max(in.sm, sm), max(in.ptx, pv)
		in.specific = r.ArchSpecific
		f.checkArgs(r, in)
	}
	for _, a := range in.Args {
		if s, ok := a.(SReg); ok {
			if sr, ok := isa.LookupSReg(string(s)); ok {
				in.sm, in.ptx = max(in.sm, sr.SM), max(in.ptx, sr.PTX)
			}
		}
	}
	classify(in) // now, so that Build only reads the IR
	f.body.nodes = append(f.body.nodes, in)
	return in
}

// Label places the raw label l at this point of the kernel, as a target
// for branches written with Raw (Raw(0, 0, "bra", l)). A label may be
// placed once; names beginning with "$L_" are reserved for structured
// control flow. Build reports branches to labels never placed.
func (f *Func) Label(l Label) {
	switch {
	case !validIdent(string(l)):
		f.errorf("invalid label name %q", string(l))
	case strings.HasPrefix(string(l), "$L_"):
		f.errorf("label %s: names beginning with $L_ are reserved for structured control flow", l)
	case f.placed[l]:
		f.errorf("label %s placed twice", l)
	}
	if f.placed == nil {
		f.placed = map[Label]bool{}
	}
	f.placed[l] = true
	f.body.nodes = append(f.body.nodes, &labelNode{l})
}

// Comment adds a comment line to the kernel body.
func (f *Func) Comment(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	for _, r := range text {
		if r > unicode.MaxASCII {
			f.errorf("comment %q: PTX text must be ASCII (ptxas refuses %q)", text, r)
			return
		}
	}
	f.body.nodes = append(f.body.nodes, comment(text))
}

// If runs then only in threads where p is true.
func (f *Func) If(p Reg, then func()) { f.ifElse(p, false, then, nil) }

// IfNot runs then only in threads where p is false.
func (f *Func) IfNot(p Reg, then func()) { f.ifElse(p, true, then, nil) }

// IfElse runs then where p is true and els elsewhere.
func (f *Func) IfElse(p Reg, then, els func()) { f.ifElse(p, false, then, els) }

func (f *Func) ifElse(p Reg, neg bool, then, els func()) {
	if p.t != Pred {
		f.errorf("If condition %v is not a predicate", p)
	}
	n := &ifNode{cond: p, negate: neg, id: f.label(), hasElse: els != nil}
	f.body.nodes = append(f.body.nodes, n)
	f.region(&n.then, then)
	if els != nil {
		f.region(&n.els, els)
	}
}

// While emits a loop: cond is written at the top of every iteration and
// returns a predicate; the body runs while it is true.
func (f *Func) While(cond func() Reg, body func()) {
	n := &loopNode{id: f.label()}
	f.body.nodes = append(f.body.nodes, n)
	f.region(&n.cond, func() { n.condR = cond() })
	if n.condR.t != Pred {
		f.errorf("While condition %v is not a predicate", n.condR)
	}
	f.region(&n.body, body)
}

// For emits `for i := start; i < end; i += step` over an unsigned 32- or
// 64-bit counter and calls body with the counter register. end may be a
// register or an immediate; step is a positive immediate or a register.
func (f *Func) For(t Type, start, end, step Operand, body func(i Reg)) {
	if t != U32 && t != U64 && t != S32 && t != S64 {
		f.errorf("For counter type %v: want u32, u64, s32 or s64", t)
		return
	}
	f.check("for step", t, step)
	i := f.Mov(t, start)
	f.While(func() Reg { return f.Setp("lt", t, i, end) }, func() {
		body(i)
		f.emit(&Inst{Op: "add." + t.String(), Args: []Operand{i, i, step}})
	})
}

func (f *Func) region(b *block, fn func()) {
	if fn == nil {
		return
	}
	f.stack = append(f.stack, f.body)
	f.body = b
	fn()
	f.body = f.stack[len(f.stack)-1]
	f.stack = f.stack[:len(f.stack)-1]
}

// validate checks what can only be checked once the kernel is complete.
func (f *Func) validate() []error {
	var errs []error
	walk(f.root.nodes, func(n node) {
		if in, ok := n.(*Inst); ok {
			for _, a := range in.Args {
				if l, ok := a.(Label); ok && !f.placed[l] {
					errs = append(errs, fmt.Errorf("%s: kernel %s: %s branches to label %s, which is never placed", in.Pos(), f.name, in.Op, l))
				}
			}
		}
	})
	if f.setmaxnregPos != "" && f.maxnreg == 0 {
		errs = append(errs, fmt.Errorf("%s: kernel %s: setmaxnreg needs .maxnreg (ptxas ignores it otherwise, C7508)", f.setmaxnregPos, f.name))
	}
	if f.minCTAs > 0 && f.reqntid == nil && f.maxntid == nil {
		errs = append(errs, fmt.Errorf("%s: kernel %s: .minnctapersm needs .maxntid or .reqntid (ptxas ignores it otherwise)", f.minCTAsPos, f.name))
	}
	return errs
}

func validIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
