package ptx

// Static analyses run by Build on every kernel, before any launch: barrier
// safety, warp-synchronous masks and shared-memory bounds. They work on the
// structured IR (If, While and For regions know where threads diverge and
// reconverge) with two abstract domains computed together in one forward
// pass:
//
// Uniformity. Every register value is CTA-uniform (the same in every
// thread of the CTA), warpgroup-uniform (the same in the 128 threads of
// each warpgroup), warp-uniform (the same in every thread of each warp)
// or thread-varying.
//
//   - CTA-uniform: immediates, symbols, ld.param and ld.const from uniform
//     addresses, %ctaid.*, %nctaid.*, %ntid.*, %smid, the cluster special
//     registers (%cluster_ctarank ...), the result of a
//     bar.red over the whole CTA, any value the interval domain proves to
//     be one constant, and anything computed only from CTA-uniform values.
//   - Warpgroup-uniform: when .reqntid makes the x-dimension a multiple
//     of 128, %tid.y, %tid.z and floor(%tid.x / d) for d a multiple of 128
//     (shr by 7 or more, div by 128·j, and by a mask whose low seven bits
//     are clear).
//   - Warp-uniform: %warpid; when .reqntid makes the x-dimension a multiple
//     of 32 (so that warps never straddle rows of x): %tid.y, %tid.z and
//     floor(%tid.x / d) for d a multiple of 32 (shr by 5 or more, div by
//     32·j, and by a mask whose low five bits are clear); shfl.sync idx
//     with a warp-uniform source lane; vote.sync and redux.sync results.
//   - Thread-varying: %tid.*, %laneid, every load from global, shared,
//     local or generic memory (conservatively, even from uniform
//     addresses), atom results, other shfl.sync results, instructions the
//     analysis does not model, and anything mixing in a varying value.
//
// A register written under control flow that is not CTA-uniform takes at
// least the level of that control flow (a value assigned in some threads
// only is not uniform afterwards), and a guarded write joins the old and
// new values with the level of the guard. Loops are iterated to a fixpoint
// (registers redefined in a loop body flow back to its head), and the
// condition of a loop whose trip count varies makes everything written in
// its body, and in its condition block, vary too.
//
// Intervals. Integer registers carry an interval, a congruence (value ≡ r
// mod m) and, when they are an affine function c + Σ aᵢ·rᵢ of at most three
// other registers as written (add, sub, mul.lo, mul.wide, mad, shl by an
// immediate, cvt between integer types), that form, so that a bound learnt
// about rᵢ later (from an If or a guard) still bounds them. %tid.* are in
// [0, ntid−1] when .reqntid is set (unbounded above otherwise), %ntid.* are
// the .reqntid constants, %laneid is in [0, 31], %ctaid.* and parameters
// are unknown; and, or, xor, shr, div, rem, min, max, selp, neg and abs
// are bounded as usual, and any result that may wrap around its type
// becomes unknown. setp of an integer register against a bounded value
// records the bound, and If, While, For and guards apply it to the
// register (and to the register a one-term form is based on) in the
// region they control: For(i < 64) bounds i by 63 in the body, and with
// the congruence a For from 0 by steps of 32 below 256 bounds i by 224.
// Loop heads are widened, so a value that grows in a loop becomes
// unbounded there unless the loop condition bounds it again. Registers
// holding a shared array's address (mov of the symbol, then additions)
// carry the symbol and the interval of the offset.
//
// The rules, each reported as an *UnsafeError wrapping ErrUnsafe:
//
//   - RuleBarrier: bar.sync, barrier.sync and bar.red without a thread
//     count, and barrier.cluster.arrive and .wait, must be reached by the
//     whole CTA (for the cluster barrier, whether the other CTAs of the
//     cluster take the same path is not checked): every enclosing If, loop
//     condition and guard must be CTA-uniform, no ret or exit under
//     thread-varying control may precede them in program order (nor
//     follow them in the same loop), and no raw branch that is neither
//     bra.uni nor CTA-uniformly guarded may precede them. With a thread
//     count (and bar.arrive) warp-uniform control suffices. The PTX ISA
//     releases barriers for exited threads, so whole warps returning early
//     (warp-uniform exits) are allowed; a thread-varying exit is reported
//     because the threads left behind then wait for data the exited ones
//     never write.
//   - RuleWarpSync: the member mask of shfl.sync, vote.sync, bar.warp.sync,
//     redux.sync and match.sync must equal the lanes that reach the
//     instruction, and .aligned warp-collective instructions (mma.sync,
//     ldmatrix, ...) need all 32 lanes. The lanes reaching an instruction
//     are known when every warp is full (.reqntid a multiple of 32 threads,
//     or a single warp of fewer) and each enclosing condition is either
//     warp-uniform or a comparison of the lane index (%laneid, %tid.x & 31,
//     %tid.x % 32 when the x-dimension is a multiple of 32) with a
//     constant, combined with and, or and not; a thread-varying exit makes
//     them unknown. A mask that is not an immediate (or a register the
//     intervals prove constant), or lanes that cannot be proven, are
//     reported.
//   - RuleSharedBounds: ld, st, atom and red on .shared, ldmatrix,
//     stmatrix, the mbarrier instructions (8 bytes) and the
//     shared side of cp.async whose address is a static shared array plus
//     an offset must stay within the array: the bytes accessed (the
//     offset interval plus the access width) must lie in [0, size). Only a
//     bounded offset that provably leaves the array is reported; an
//     unbounded offset (an index from %ctaid, a parameter or memory, or
//     any kernel without .reqntid that indexes by %tid) cannot be proven
//     either way and is skipped silently. Dynamic shared memory has no
//     size at build time and is skipped, as are addresses not derived
//     from a shared symbol (generic addresses, absolute offsets).
//
//   - RuleWarpGroup: wgmma.* and setmaxnreg (rows with the WarpGroup
//     effect) need a CTA of whole warpgroups (.reqntid a multiple of 128),
//     warpgroup-uniform control (conditions on %tid.x/128 are fine, on
//     warps, lanes or elect.sync are not) and no thread exited under
//     control that is not warpgroup-uniform. Whether the warpgroup's
//     first warp is a multiple of 4 follows from .reqntid; that all four
//     warps take the same path through raw branches is not checked
//     beyond the taint rules above.
//   - RuleSwizzleAlign: WgmmaDesc's start address, when it is a static
//     shared array plus an offset, or a shared address rounded down with
//     and (the dynamic base rounded up to 1024 bytes) plus an offset: the
//     base must be aligned to the swizzle atom (8 rows of the swizzle
//     span, 1024 bytes for 128B) and the offset, where the intervals pin
//     it modulo the atom, must lie within the atom's first row and be a
//     multiple of 16. Dynamic shared memory used without rounding,
//     offsets known only by bounds, and descriptors not built with
//     WgmmaDesc are not checked.
//   - RuleMbarPhase: an mbarrier.try_wait.parity in a loop (its own spin
//     loop aside), not guarded nor under an If inside the loop, whose
//     barrier address and parity the loop never changes (immediates,
//     symbols, registers the loop does not write, values the intervals
//     pin): after the first completion it returns at once. Assumed: the
//     loop may run twice. Not checked: whether a parity that does change
//     follows the phases (flips once per completion), arrival counts
//     against MbarInit, expect_tx bytes against the copies, use of an
//     uninitialised barrier, and waits written with raw branches.
//
// What an instruction is (a barrier, warp-synchronous, warp-collective,
// a shared-memory access, pure, whether it writes its first operand)
// comes from its row in the ISA table (kernels/ptx/isa); how its result
// is bounded is modelled here by opcode. An opcode without a row (only
// Raw writes one) is checked by no rule, and its result varies. A raw branch is analysed conservatively: control after it (for
// the rest of the kernel, and from its target label on for backward
// branches) is as non-uniform as its guard and the control it sits in,
// unless it is bra.uni, whose promise of uniformity is trusted.
//
// Assumed: kernels are launched with the block .reqntid fixes (the driver
// refuses others); %warpid is uniform within a warp; structured regions
// reconverge where they end. Not checked: data races (a barrier between a
// shared store and another thread's load), global-memory bounds, registers
// read before written, and shared accesses through generic addresses.
// Each array is checked on its own: an access past one array is reported
// even where another array follows it.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gradtune/gradtune/kernels/ptx/isa"
)

// ErrUnsafe is wrapped by the errors Build returns for kernels that the
// analyses prove unsafe to launch (errors.Is(err, ErrUnsafe)).
var ErrUnsafe = errors.New("unsafe kernel")

// The rules the analyses check, as UnsafeError.Rule reports them.
const (
	RuleBarrier      = "barrier not reached by the whole CTA (bar.sync needs CTA-uniform control flow)"
	RuleWarpSync     = "warp-synchronous instruction whose mask is not the set of lanes that reach it"
	RuleSharedBounds = "shared-memory access outside the declared array"
	RuleWarpGroup    = "warpgroup-collective instruction not executed by whole warpgroups together (wgmma and setmaxnreg need warpgroup-uniform control flow)"
	RuleSwizzleAlign = "wgmma tile not at a swizzle-atom boundary"
	RuleMbarPhase    = "mbarrier wait on the same phase parity in every iteration of a loop"
)

// UnsafeError is one violation found by the analyses.
type UnsafeError struct {
	Kernel string // the kernel's name
	Inst   string // the instruction as printed, e.g. "bar.sync 0"
	Rule   string // one of the Rule constants
	Reason string // why, e.g. "under the condition %p3, which depends on %tid.x"
	Pos    string // file:line of a Raw instruction's writer, "" otherwise
}

func (e *UnsafeError) Error() string {
	pos := ""
	if e.Pos != "" {
		pos = e.Pos + ": "
	}
	return fmt.Sprintf("%skernel %s: unsafe `%s`: %s: %s", pos, e.Kernel, e.Inst, e.Rule, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUnsafe) hold.
func (e *UnsafeError) Unwrap() error { return ErrUnsafe }

// maxViolations bounds the violations reported per kernel: an unrolled
// loop repeats one mistake many times.
const maxViolations = 8

// Uniformity levels, ordered: the join of two levels is their maximum.
const (
	ctaUniform uint8 = iota
	wgUniform        // the same in the 128 threads of each warpgroup
	warpUniform
	varying
)

// Kinds of lane sets a predicate selects in every warp (see laneOf).
const (
	laneNone    uint8 = iota // unknown
	laneExact                // exactly the lanes of the mask, in every warp
	laneOrEmpty              // in every warp, the lanes of the mask or none
)

const fullMask = ^uint32(0)

// ctx is the control context of a region.
type ctx struct {
	lvl      uint8  // uniformity of the control flow reaching the region
	why      int32  // reason for lvl (a condition), 0 when CTA-uniform
	assign   int32  // reason for values written here: "a value assigned <why>"
	lanesOK  bool   // lanes is known
	lanes    uint32 // in every warp reaching the region, the lanes that do
	lanesWhy int32  // why the lanes are not known
}

// reason kinds.
const (
	rSrc    uint8 = iota // text
	rCond                // under the condition reg, which depends on inner
	rGuard               // under the guard reg, ...
	rLoop                // in the loop whose condition reg depends on inner
	rAssign              // a value assigned <inner>
	rExit                // after `in` <inner>
	rBranch              // after the raw branch `in` <inner>
)

type reason struct {
	kind  uint8
	text  string
	reg   Reg
	inner int32
	in    *Inst
}

// analyzer holds the state of the analyses of one kernel.
type analyzer struct {
	f   *Func
	off [numClasses]int32 // state index of register id 0 of each class
	st  []aval            // abstract value of every register; 0, 1: taints
	log []undoEntry       // old values, to restore states when regions end
	ver int32             // last version handed out

	reasons []reason
	srcWhy  map[srcKey]int32
	factBuf []fact     // facts of all predicates
	factSet [][2]int32 // factBuf[s:e] of a set; factSet[0] is "none"

	report bool
	viol   []*UnsafeError
	extra  int // violations beyond maxViolations

	// Block geometry from .reqntid.
	known  bool
	ntid   [3]int64
	xWarp  bool // ntid.x is a multiple of 32: warps are rows of x
	lanes0 ctx  // lanes at the kernel's entry

	shared   map[string]int16 // shared symbol → index+1; dynamic: -1
	phi      map[int64]int32  // (loop, register) → version at the loop head
	labelLvl map[Label]aval   // level of raw branches to each label
	stamp    []uint32         // membership marks for register sets
	gen      uint32
	scr      []undoEntry // stack of register sets of enclosing regions
	heads    []undoEntry // stack of the head values of enclosing loops
	headPos  []int32     // position in heads of a register's head value
	headOf   []uint32    // ... valid when headOf[i] == the loop's stamp
	loops    uint32

	taintWhy, taintAssign int32 // the assign reason of the last raw taint

	frames  []loopFrame                  // the loops enclosing the instruction analysed
	ifDepth int                          // the Ifs enclosing it
	written map[*loopNode]map[int32]bool // registers each loop writes (mbarPhase)
}

// loopFrame is a loop enclosing the instruction analysed: in its
// condition block or its body, inside ifDepth Ifs.
type loopFrame struct {
	x       *loopNode
	inCond  bool
	ifDepth int
}

// State indices of the two taints, pseudo-registers joined like any other.
const (
	exitTaint = 0 // the level of control under which threads exited
	rawTaint  = 1 // the level of control under which raw branches were taken
	firstReg  = 2
)

type undoEntry struct {
	idx int32
	old aval
}

// srcKey names a source reason without building its text.
type srcKey struct {
	kind uint8
	s    string
	n    int64
}

// Source reason kinds.
const (
	kText   uint8 = iota // s
	kLoad                // a load from s memory
	kResult              // the result of s
	kUnmod               // the result of s, which the analysis does not model
	kWarp                // a s.sync result, warp-uniform
	kTdiv                // %tid.x / n, warp-uniform
)

// freeAnalyzers keeps analyzers for reuse: allocating their buffers
// would be most of the cost of a small kernel's analysis. (A sync.Pool
// loses them at every garbage collection, and building kernels collects
// often.)
var freeAnalyzers = make(chan *analyzer, 32)

func getAnalyzer() *analyzer {
	select {
	case a := <-freeAnalyzers:
		return a
	default:
		return &analyzer{shared: map[string]int16{}, srcWhy: map[srcKey]int32{}, phi: map[int64]int32{}, labelLvl: map[Label]aval{},
			written: map[*loopNode]map[int32]bool{}}
	}
}

func putAnalyzer(a *analyzer) {
	if cap(a.log) > 1<<16 || cap(a.st) > 1<<16 {
		return // do not hold on to the buffers of a huge kernel
	}
	a.f = nil
	select {
	case freeAnalyzers <- a:
	default:
	}
}

// resize returns s with length n, zeroed.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// analyze runs the analyses on f and returns its violations.
func (f *Func) analyze() []error {
	a := getAnalyzer()
	defer putAnalyzer(a)
	a.f = f
	base := int32(firstReg)
	for c := class(0); c < numClasses; c++ {
		a.off[c] = base - 1
		base += int32(f.nregs[c])
	}
	a.st = resize(a.st, int(base))
	a.stamp = resize(a.stamp, int(base))
	a.headPos = resize(a.headPos, int(base))
	a.headOf = resize(a.headOf, int(base))
	a.gen, a.loops, a.ver = 0, 0, 0
	a.reasons = a.reasons[:0]
	a.factBuf, a.factSet = a.factBuf[:0], a.factSet[:0]
	a.viol, a.extra = a.viol[:0], 0
	a.taintWhy, a.taintAssign = 0, 0
	clear(a.shared)
	clear(a.srcWhy)
	clear(a.phi)
	clear(a.labelLvl)
	clear(a.written)
	a.frames, a.ifDepth = a.frames[:0], 0
	for i, s := range f.shared {
		a.shared[s.sym.Name] = int16(i + 1)
	}
	if f.dyn != nil {
		a.shared[f.dyn.sym.Name] = -1
	}
	a.geometry()
	if len(f.placed) == 0 {
		a.run(true)
	} else {
		// Raw labels: iterate until the levels of the branches to each
		// label are stable (backward branches), then report.
		for range 4 {
			prev := map[Label]aval{}
			for l, v := range a.labelLvl {
				prev[l] = v
			}
			a.run(false)
			same := len(prev) == len(a.labelLvl)
			for l, v := range a.labelLvl {
				if p, ok := prev[l]; !ok || p.lvl != v.lvl {
					same = false
				}
			}
			if same {
				break
			}
		}
		a.run(true)
	}
	if len(a.viol) == 0 {
		return nil
	}
	errs := make([]error, 0, len(a.viol)+1)
	for _, v := range a.viol {
		errs = append(errs, v)
	}
	if a.extra > 0 {
		errs = append(errs, fmt.Errorf("kernel %s: %d more unsafe instructions: %w", f.name, a.extra, ErrUnsafe))
	}
	return errs
}

func (a *analyzer) run(report bool) {
	clear(a.st)
	a.log, a.scr, a.heads = a.log[:0], a.scr[:0], a.heads[:0]
	a.report = report
	c := a.lanes0
	a.block(a.f.root.nodes, &c)
}

// geometry reads .reqntid.
func (a *analyzer) geometry() {
	f := a.f
	a.lanes0 = ctx{}
	a.known, a.xWarp, a.ntid = false, false, [3]int64{}
	if f.reqntid == nil {
		a.lanes0.lanesWhy = a.src("the kernel has no .reqntid, so its last warp may be partial")
		return
	}
	a.known = true
	a.ntid = [3]int64{1, 1, 1}
	total := int64(1)
	for i, d := range f.reqntid {
		a.ntid[i] = int64(d)
		total *= int64(d)
	}
	a.xWarp = a.ntid[0]%32 == 0
	switch {
	case total%32 == 0:
		a.lanes0.lanesOK, a.lanes0.lanes = true, fullMask
	case total < 32:
		a.lanes0.lanesOK, a.lanes0.lanes = true, uint32(1)<<total-1
	default:
		a.lanes0.lanesWhy = a.src(fmt.Sprintf(".reqntid %s leaves the last warp with %d of 32 lanes", joinInts(f.reqntid), total%32))
	}
}

// src returns the reason index of a source text.
func (a *analyzer) src(text string) int32 { return a.srcK(srcKey{kind: kText, s: text}) }

// srcK returns the reason index of a source, building its text once.
func (a *analyzer) srcK(k srcKey) int32 {
	if i, ok := a.srcWhy[k]; ok {
		return i
	}
	var text string
	switch k.kind {
	case kText:
		text = k.s
	case kLoad:
		text = "a load from " + k.s + " memory"
	case kResult:
		text = "the result of " + k.s
	case kUnmod:
		text = "the result of " + k.s + ", which the analysis does not model"
	case kWarp:
		text = "a " + k.s + " result, which is uniform within each warp only"
	case kTdiv:
		text = fmt.Sprintf("%%tid.x / %d, which is uniform within each warp only", k.n)
		if a.tdivLevel(k.n) == wgUniform {
			text = fmt.Sprintf("%%tid.x / %d, which is uniform within each warpgroup only", k.n)
		}
	}
	i := a.newReason(reason{kind: rSrc, text: text})
	a.srcWhy[k] = i
	return i
}

func (a *analyzer) newReason(r reason) int32 {
	if len(a.reasons) == 0 {
		a.reasons = append(a.reasons, reason{}) // index 0: none
	}
	a.reasons = append(a.reasons, r)
	return int32(len(a.reasons) - 1)
}

func (a *analyzer) fmtReason(i int32) string {
	if i <= 0 || int(i) >= len(a.reasons) {
		return "values the analysis cannot follow"
	}
	r := a.reasons[i]
	switch r.kind {
	case rCond:
		return fmt.Sprintf("under the condition %v, which depends on %s", r.reg, a.fmtReason(r.inner))
	case rGuard:
		return fmt.Sprintf("under the guard %v, which depends on %s", r.reg, a.fmtReason(r.inner))
	case rLoop:
		return fmt.Sprintf("in the loop whose condition %v depends on %s", r.reg, a.fmtReason(r.inner))
	case rAssign:
		return "a value assigned " + a.fmtReason(r.inner)
	case rExit:
		return fmt.Sprintf("after `%s` %s", instString(r.in), a.fmtReason(r.inner))
	case rBranch:
		return fmt.Sprintf("after the raw branch `%s`, taken %s", instString(r.in), a.fmtReason(r.inner))
	}
	return r.text
}

// instString prints an instruction as the printer does, without the tab
// and semicolon.
func instString(in *Inst) string {
	var w strings.Builder
	if in.Guard.Valid() {
		if in.Negate {
			w.WriteString("@!")
		} else {
			w.WriteString("@")
		}
		w.WriteString(in.Guard.String())
		w.WriteString(" ")
	}
	w.WriteString(in.Op)
	for i, o := range in.Args {
		if i == 0 {
			w.WriteString(" ")
		} else {
			w.WriteString(", ")
		}
		w.WriteString(o.String())
	}
	return w.String()
}

func (a *analyzer) violate(in *Inst, rule, why string) {
	if !a.report {
		return
	}
	if len(a.viol) >= maxViolations {
		a.extra++
		return
	}
	pos := ""
	if in.pcs[0] != 0 {
		pos = in.Pos()
	}
	a.viol = append(a.viol, &UnsafeError{Kernel: a.f.name, Inst: instString(in), Rule: rule, Reason: why, Pos: pos})
}

// write sets the abstract value of state index i, logging the old one.
func (a *analyzer) write(i int32, v aval) {
	if a.st[i] == v {
		return
	}
	a.log = append(a.log, undoEntry{i, a.st[i]})
	a.st[i] = v
}

// undo restores the state as it was when the log had n entries.
func (a *analyzer) undo(n int) {
	for j := len(a.log) - 1; j >= n; j-- {
		a.st[a.log[j].idx] = a.log[j].old
	}
	a.log = a.log[:n]
}

// touched appends to a.scr the state indices written since log entry n,
// each once, with their values before (from the log).
func (a *analyzer) touched(n int) {
	a.gen++
	for _, e := range a.log[n:] {
		if a.stamp[e.idx] != a.gen {
			a.stamp[e.idx] = a.gen
			a.scr = append(a.scr, e)
		}
	}
}

func (a *analyzer) block(ns []node, c *ctx) {
	for _, n := range ns {
		switch x := n.(type) {
		case *Inst:
			a.inst(x, c)
		case *ifNode:
			a.ifNode(x, c)
		case *loopNode:
			a.loop(x, c)
		case *labelNode:
			if v, ok := a.labelLvl[x.l]; ok {
				a.raiseTaint(rawTaint, v.lvl, v.why)
			}
		}
	}
}

func (a *analyzer) raiseTaint(i int32, lvl uint8, why int32) {
	if lvl > a.st[i].lvl {
		v := a.st[i]
		v.lvl, v.why, v.ver = lvl, why, 1 // a version, so that joins keep it
		a.write(i, v)
	}
}

// enter returns the context of a region entered where predicate p (negated
// when neg) holds.
func (a *analyzer) enter(c ctx, p Reg, neg bool, kind uint8) ctx {
	return a.enterVal(c, p, a.st[a.idx(p)], neg, kind)
}

// enterVal is enter with the value pv of p.
func (a *analyzer) enterVal(c ctx, p Reg, pv aval, neg bool, kind uint8) ctx {
	if pv.lvl > c.lvl {
		c.lvl = pv.lvl
		c.why = a.newReason(reason{kind: kind, reg: p, inner: pv.why})
		c.assign = a.newReason(reason{kind: rAssign, inner: c.why})
	}
	if c.lanesOK {
		k, m := laneOf(pv)
		if neg {
			k, m = complement(k, m)
		}
		if k == laneNone {
			c.lanesOK = false
			c.lanesWhy = a.newReason(reason{kind: kind, reg: p, inner: pv.why})
		} else {
			c.lanes &= m
		}
	}
	return c
}

// laneOf returns the lanes where predicate value v is true, in every warp.
func laneOf(v aval) (uint8, uint32) {
	if v.lvl <= warpUniform {
		return laneOrEmpty, fullMask
	}
	return v.lkind, v.lmask
}

func complement(k uint8, m uint32) (uint8, uint32) {
	switch {
	case k == laneExact:
		return laneExact, ^m
	case k == laneOrEmpty && m == fullMask:
		return laneOrEmpty, fullMask
	case k == laneOrEmpty && m == 0:
		return laneExact, fullMask
	}
	return laneNone, 0
}

// refine applies the facts that hold in a region.
func (a *analyzer) refine(fi int32) {
	if fi == 0 {
		return
	}
	for _, ft := range a.factsOf(fi) {
		v := a.st[ft.idx]
		if v.ver != ft.ver {
			continue
		}
		lo, hi := a.eval(ft.idx)
		nlo, nhi := max(lo, ft.lo), min(hi, ft.hi)
		if nlo != v.lo || nhi != v.hi {
			v.lo, v.hi = nlo, nhi
			a.write(ft.idx, v)
		}
	}
}

// predFacts returns the facts of predicate p when it is true (or false
// when neg).
func (a *analyzer) predFacts(p Reg, neg bool) int32 {
	v := &a.st[a.idx(p)]
	if neg {
		return v.factsF
	}
	return v.factsT
}

func (a *analyzer) ifNode(x *ifNode, c *ctx) {
	tc := a.enter(*c, x.cond, x.negate, rCond)
	m0 := len(a.log)
	a.refine(a.predFacts(x.cond, x.negate))
	a.ifDepth++
	defer func() { a.ifDepth-- }()
	a.block(x.then.nodes, &tc)
	// a.scr[t0:t1]: the registers the then branch wrote, with their
	// values at its end.
	t0 := len(a.scr)
	a.touched(m0)
	t1 := len(a.scr)
	for j := t0; j < t1; j++ {
		a.scr[j].old = a.st[a.scr[j].idx]
	}
	a.undo(m0)
	if x.hasElse {
		ec := a.enter(*c, x.cond, !x.negate, rCond)
		a.refine(a.predFacts(x.cond, !x.negate))
		a.block(x.els.nodes, &ec)
	}
	// a.scr[t1:]: the registers the else branch wrote, with their values
	// before the If.
	a.touched(m0)
	// Join: for each register written in either branch, the then value
	// (or the value before) with the current (else) value.
	a.gen++
	for j := t0; j < t1; j++ {
		e := a.scr[j]
		a.stamp[e.idx] = a.gen
		a.write(e.idx, a.join(e.old, a.st[e.idx], 0))
	}
	for j := t1; j < len(a.scr); j++ {
		if e := a.scr[j]; a.stamp[e.idx] != a.gen {
			a.write(e.idx, a.join(e.old, a.st[e.idx], 0))
		}
	}
	a.scr = a.scr[:t0]
}

// maxIter bounds the fixpoint iterations of a loop; past it, the values
// still changing become unknown and varying.
const maxIter = 12

func (a *analyzer) loop(x *loopNode, c *ctx) {
	m0 := len(a.log)
	// a.heads[h0:]: values at the loop head that differ from the entry.
	h0 := len(a.heads)
	defer func() { a.heads = a.heads[:h0] }()
	var prevCond aval // the condition at the end of the previous iteration
	first := true
	for iter := 0; ; iter++ {
		a.undo(m0)
		for _, e := range a.heads[h0:] {
			a.write(e.idx, e.old)
		}
		nv, nx := len(a.viol), a.extra
		m1 := len(a.log)
		// The condition block runs on entry (context c) and after every
		// iteration (threads still looping): the join of both.
		cc := *c
		if !first {
			bc := a.enterVal(cc, x.condR, prevCond, false, rLoop)
			if bc.lanesOK && bc.lanes != cc.lanes {
				bc.lanesOK, bc.lanesWhy = false, bc.why
				if bc.why == 0 {
					bc.lanesWhy = a.newReason(reason{kind: rLoop, reg: x.condR, inner: prevCond.why})
				}
			}
			bc.lanes = cc.lanes
			cc = bc
		}
		a.frames = append(a.frames, loopFrame{x: x, inCond: true, ifDepth: a.ifDepth})
		a.block(x.cond.nodes, &cc)
		a.frames[len(a.frames)-1].inCond = false
		afterCond := len(a.log)
		cv := a.st[a.idx(x.condR)]
		bc := a.enterVal(cc, x.condR, cv, false, rLoop)
		a.refine(cv.factsT)
		a.block(x.body.nodes, &bc)
		a.frames = a.frames[:len(a.frames)-1]
		// Back edge: join into the head.
		changed := first && (cv.lvl > ctaUniform || cv.lkind != laneNone)
		if !first && (cv.lvl != prevCond.lvl || cv.lkind != prevCond.lkind || cv.lmask != prevCond.lmask) {
			changed = true
		}
		prevCond, first = cv, false
		a.loops++
		id := a.loops
		for j, e := range a.heads[h0:] {
			a.headOf[e.idx], a.headPos[e.idx] = id, int32(h0+j)
		}
		s0 := len(a.scr)
		a.touched(m1)
		for _, e := range a.scr[s0:] {
			// The head value so far: what the first write since the
			// head overrides replaced.
			prev := e.old
			cand := a.joinHead(prev, a.st[e.idx], a.phiVer(x.id, e.idx))
			if prev.ver != 0 && prev.lo <= prev.hi {
				// Widening.
				if cand.lo < prev.lo {
					cand.lo = -inf
				}
				if cand.hi > prev.hi {
					cand.hi = inf
				}
			}
			if iter >= maxIter {
				cand.lvl = varying
				if cand.why == 0 {
					cand.why = a.src("a value the analysis could not follow around a loop")
				}
				top(&cand)
				cand.tdiv, cand.lane, cand.lkind, cand.factsT, cand.factsF, cand.sym = 0, false, laneNone, 0, 0, 0
			}
			if !sameVal(cand, prev) {
				changed = true
				if a.headOf[e.idx] == id {
					a.heads[a.headPos[e.idx]].old = cand
				} else {
					a.headOf[e.idx], a.headPos[e.idx] = id, int32(len(a.heads))
					a.heads = append(a.heads, undoEntry{e.idx, cand})
				}
			}
		}
		a.scr = a.scr[:s0]
		if !changed || iter > maxIter {
			// The state after the condition, on the converged head, is
			// the state after the loop.
			a.undo(afterCond)
			return
		}
		// Not converged: drop what this iteration reported.
		a.viol, a.extra = a.viol[:nv], nx
	}
}

// phiVer returns the version of register index i at the head of loop id.
func (a *analyzer) phiVer(id int, i int32) int32 {
	// Negative versions are the loop heads': -(id·len(st) + i + 1), unless
	// that would overflow.
	if n := int64(id)*int64(len(a.st)) + int64(i) + 1; n < 1<<31 {
		return -int32(n)
	}
	k := int64(id)<<32 | int64(i)
	v, ok := a.phi[k]
	if !ok {
		a.ver++
		v = a.ver
		a.phi[k] = v
	}
	return v
}

// sameVal compares abstract values, ignoring reasons.
func sameVal(x, y aval) bool {
	x.why, y.why = 0, 0
	return x == y
}

// opClass is what the analyses read off an instruction's opcode: its row
// in the ISA table and the effects they check.
type opClass struct {
	row   *isa.Row // nil for an opcode the table lacks (Raw)
	head  string   // the opcode's first component: "ld", "bar"
	t     Type     // the type its last component names, if any
	flags uint16
}

const (
	cDone uint16 = 1 << iota
	cBarrier
	cWarpSync
	cAligned
	cShared
	cDest
	cPure
	cWarpGroup
)

// classify returns in's opcode class, computing it once. An opcode
// without a row writes its first operand, with a value that varies.
func classify(in *Inst) *opClass {
	c := &in.cls
	if c.flags&cDone != 0 {
		return c
	}
	op := in.Op
	head, _, _ := strings.Cut(op, ".")
	f := cDone
	r, ok := isa.Lookup(op)
	switch {
	case !ok:
		if len(in.Args) > 0 {
			f |= cDest
		}
	default:
		switch {
		case r.Has(isa.Barrier):
			f |= cBarrier
		case r.Has(isa.WarpSync):
			f |= cWarpSync
		case r.Has(isa.Aligned):
			f |= cAligned
		}
		if r.Effects&(isa.Load|isa.Store) != 0 && r.Space(op)&isa.Shared != 0 {
			f |= cShared
		}
		if r.Has(isa.Dest) && len(in.Args) > 0 {
			f |= cDest
		}
		if r.Has(isa.Pure) {
			f |= cPure
		}
		if r.Has(isa.WarpGroup) {
			f |= cWarpGroup
		}
	}
	c.row, c.head, c.t, c.flags = r, head, opType(op), f
	return c
}

// inst checks one instruction and applies its effect on the state.
func (a *analyzer) inst(in *Inst, c *ctx) {
	cls := classify(in)
	op, head := in.Op, cls.head
	ec := *c
	if in.Guard.Valid() {
		ec = a.enter(ec, in.Guard, in.Negate, rGuard)
	}
	// Raw branches taken under non-uniform control, and exits, make
	// control after them non-uniform.
	if t := &a.st[rawTaint]; t.lvl > ec.lvl {
		if a.taintWhy != t.why {
			a.taintWhy, a.taintAssign = t.why, a.newReason(reason{kind: rAssign, inner: t.why})
		}
		ec.lvl, ec.why, ec.assign = t.lvl, t.why, a.taintAssign
	}
	if t := &a.st[rawTaint]; t.lvl == varying && ec.lanesOK {
		ec.lanesOK, ec.lanesWhy = false, t.why
	}
	if t := &a.st[exitTaint]; t.lvl == varying && ec.lanesOK {
		ec.lanesOK, ec.lanesWhy = false, t.why
	}

	switch {
	case cls.flags&cBarrier != 0:
		a.checkBarrier(in, cls.row, &ec)
	case cls.flags&cWarpGroup != 0 && !a.checkWarpGroup(in, &ec):
		// Reported once: the lanes follow from the warpgroup.
	case cls.flags&cWarpSync != 0:
		a.checkWarp(in, &ec, true)
	case cls.flags&cAligned != 0:
		a.checkWarp(in, &ec, false)
	}
	if cls.flags&cShared != 0 {
		a.checkShared(in, op, head)
	}
	if in.desc != nil {
		a.checkDesc(in)
	}
	if head == "mbarrier" && strings.HasPrefix(op, "mbarrier.try_wait.parity") {
		a.checkPhase(in)
	}

	switch head {
	case "ret", "exit":
		if ec.lvl > ctaUniform {
			a.raiseTaint(exitTaint, ec.lvl, a.newReason(reason{kind: rExit, in: in, inner: ec.why}))
		}
		return
	case "bra":
		lvl, why := c.lvl, c.why
		if t := &a.st[rawTaint]; t.lvl > lvl {
			lvl, why = t.lvl, t.why
		}
		if op != "bra.uni" && in.Guard.Valid() {
			if g := &a.st[a.idx(in.Guard)]; g.lvl > lvl {
				lvl, why = g.lvl, a.newReason(reason{kind: rGuard, reg: in.Guard, inner: g.why})
			}
		}
		if lvl > ctaUniform {
			w := a.newReason(reason{kind: rBranch, in: in, inner: why})
			a.raiseTaint(rawTaint, lvl, w)
			for _, o := range in.Args {
				if l, ok := o.(Label); ok {
					if v, ok := a.labelLvl[l]; !ok || v.lvl < lvl {
						a.labelLvl[l] = aval{lvl: lvl, why: w}
					}
				}
			}
		}
		return
	}
	if cls.flags&cDest != 0 {
		a.transfer(in, cls, &ec)
	}
}

// checkBarrier applies RuleBarrier.
func (a *analyzer) checkBarrier(in *Inst, row *isa.Row, c *ctx) {
	// Counted: the thread count the row lets one leave out is given
	// (bar.sync a, b; bar.red.op d, a, b, c), or it is never optional
	// (bar.arrive a, b).
	lo, _ := row.Arity()
	counted := len(row.Args) > 0 && (len(in.Args) > lo || row.Opt == 0)
	red := row.Has(isa.Dest)
	need := ctaUniform
	if counted {
		need = warpUniform
	}
	switch {
	case c.lvl > need:
		a.violate(in, RuleBarrier, a.fmtReason(c.why))
	case a.st[exitTaint].lvl == varying:
		a.violate(in, RuleBarrier, a.fmtReason(a.st[exitTaint].why))
	default:
		// Barrier id and count must be uniform too.
		for _, o := range in.Args {
			if r, ok := o.(Reg); ok && r.t != Pred {
				if v := &a.st[a.idx(r)]; v.lvl > need && !(red && r == in.Args[0]) {
					a.violate(in, RuleBarrier, fmt.Sprintf("its operand %v depends on %s", r, a.fmtReason(v.why)))
					return
				}
			}
		}
	}
}

// checkWarp applies RuleWarpSync; masked says whether the last operand is
// the member mask (else all 32 lanes must take part).
func (a *analyzer) checkWarp(in *Inst, c *ctx, masked bool) {
	mask := fullMask
	if masked && len(in.Args) > 0 {
		switch m := in.Args[len(in.Args)-1].(type) {
		case Imm:
			mask = uint32(m)
		case Reg:
			lo, hi := a.eval(a.idx(m))
			if lo != hi || lo < 0 || lo > int64(fullMask) {
				a.violate(in, RuleWarpSync, fmt.Sprintf("its mask %v is not a constant the analysis can compare with the lanes that reach it", m))
				return
			}
			mask = uint32(lo)
		}
	}
	switch {
	case !c.lanesOK:
		a.violate(in, RuleWarpSync, fmt.Sprintf("mask 0x%08x, but the lanes that reach it are not known: %s", mask, a.fmtReason(c.lanesWhy)))
	case c.lanes != mask:
		why := "in every warp"
		if c.why != 0 {
			why = a.fmtReason(c.why)
		}
		a.violate(in, RuleWarpSync, fmt.Sprintf("mask 0x%08x, but the lanes that reach it are 0x%08x (%s)", mask, c.lanes, why))
	}
}

// checkShared applies RuleSharedBounds to an access of the .shared space.
func (a *analyzer) checkShared(in *Inst, op, head string) {
	var addr Addr
	found := false
	for _, o := range in.Args {
		if ad, ok := o.(Addr); ok {
			addr, found = ad, true
			break
		}
	}
	if !found {
		return
	}
	size := accessBytes(in, op, head)
	if size <= 0 {
		return
	}
	m := len(a.log)
	if in.Guard.Valid() {
		a.refine(a.predFacts(in.Guard, in.Negate))
	}
	defer a.undo(m)
	var sym int16
	var lo, hi int64
	switch b := addr.Base.(type) {
	case Sym:
		sym, lo, hi = a.shared[b.Name], 0, 0
	case Reg:
		i := a.idx(b)
		v := a.st[i]
		sym = v.sym
		lo, hi = a.eval(i)
	default:
		return
	}
	if sym <= 0 || lo > hi || lo <= -inf || hi >= inf {
		return // not a static array, unreachable, or not bounded
	}
	lo, hi = lo+addr.Off, hi+addr.Off
	d := a.f.shared[sym-1]
	bytes := int64(d.count * d.sym.typ.Bits() / 8)
	if lo < 0 || hi+size > bytes {
		a.violate(in, RuleSharedBounds, fmt.Sprintf("it accesses bytes %d to %d (%d at offsets %d to %d) of %s, which has %d bytes",
			lo, hi+size-1, size, lo, hi, d.sym.Name, bytes))
	}
}

// accessBytes returns the bytes one thread's shared access touches.
func accessBytes(in *Inst, op, head string) int64 {
	switch head {
	case "ldmatrix", "stmatrix":
		return 16 // each lane gives the address of one 16-byte row
	case "mbarrier":
		return 8
	case "cp":
		if strings.HasPrefix(op, "cp.async.bulk") || strings.HasPrefix(op, "cp.reduce.async.bulk") {
			return 0 // the box's size is in the tensor map
		}
		for _, o := range in.Args[1:] {
			if n, ok := o.(Imm); ok {
				return int64(n)
			}
		}
		return 0
	case "ld", "st", "atom", "red", "ldu":
	default:
		return 0
	}
	tt, ok := ParseType(op[strings.LastIndexByte(op, '.')+1:])
	if !ok {
		return 0
	}
	bits := int64(tt.Bits())
	n := int64(1)
	switch {
	case strings.Contains(op, ".v2."):
		n = 2
	case strings.Contains(op, ".v4."):
		n = 4
	case strings.Contains(op, ".v8."):
		n = 8
	}
	return bits * n / 8
}

// idx returns the state index of register r.
func (a *analyzer) idx(r Reg) int32 { return a.off[classOf(r.t)] + int32(r.id) }
