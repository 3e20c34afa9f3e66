package isa

import (
	"fmt"
	"strconv"
	"strings"
)

// Row is one PTX instruction: what the builder, the analyses and the
// interpreter know about it without looking at its operands' values.
type Row struct {
	// Name is the opcode's leading components that identify the
	// instruction: "add", "bar.sync", "cp.async.wait_group". An opcode
	// belongs to the row with the longest Name it begins with (whole
	// components only); the components after Name are its qualifiers.
	Name string
	// Args are the operand kinds in order; the last Opt of them may be
	// left out.
	Args []Kind
	Opt  int
	// Spaces are the state spaces a qualifier may name (ld.shared,
	// cp.async.ca.shared.global); zero for instructions without one.
	Spaces Space
	// Effects are what executing the instruction does besides computing
	// its destination.
	Effects Effect
	// SM and PTX are the target and PTX ISA version (times ten: 78 is
	// 7.8) every form of the instruction needs.
	SM, PTX int
	// Raise lists forms that need more than SM and PTX.
	Raise []Raise
	// ArchSpecific: the instruction exists only on the
	// architecture-specific target sm_<SM>a (wgmma, setmaxnreg need
	// sm_90a), whose code runs on that architecture alone. A module using
	// it is printed with .target sm_<SM>a.
	ArchSpecific bool
}

// Raise is a form of an instruction that needs a later target or PTX ISA
// version: the forms with the qualifier Qual, or those When reports.
type Raise struct {
	Qual    string
	When    func(quals []string) bool
	SM, PTX int
}

// Kind is the kind of an operand.
type Kind uint8

// Operand kinds.
const (
	// Dst is a register, a braced list of registers, or d|p, written.
	Dst Kind = iota + 1
	// Src is a register, an immediate, a special register, a symbol
	// address or a braced list of registers, read.
	Src
	// Addr is a memory operand [base+off].
	Addr
	// Label is a branch target.
	Label
	// Mask is the member mask of a warp-synchronous instruction: the
	// lanes that execute it together, a register or an immediate.
	Mask
)

func (k Kind) String() string {
	switch k {
	case Dst:
		return "a destination"
	case Src:
		return "a source"
	case Addr:
		return "an address"
	case Label:
		return "a label"
	case Mask:
		return "a member mask"
	}
	return "?"
}

// Space is a set of PTX state spaces.
type Space uint8

// State spaces.
const (
	Global Space = 1 << iota
	Shared
	Local
	Param
	Const
	Generic // an address without a space qualifier

	// Memory is the spaces ld and st take.
	Memory = Global | Shared | Local | Param | Const | Generic
)

var spaceNames = [...]string{"global", "shared", "local", "param", "const"}

// String names the spaces of s, joined by "|": "shared|global".
func (s Space) String() string {
	var n []string
	for i, name := range spaceNames {
		if s&(1<<i) != 0 {
			n = append(n, name)
		}
	}
	if s&Generic != 0 {
		n = append(n, "generic")
	}
	return strings.Join(n, "|")
}

// spaceOf returns the space a qualifier names ("shared::cta" is shared),
// or 0.
func spaceOf(q string) Space {
	if i := strings.Index(q, "::"); i >= 0 {
		q = q[:i]
	}
	for i, n := range spaceNames {
		if q == n {
			return 1 << i
		}
	}
	return 0
}

// Effect is a set of things an instruction does besides computing its
// destination.
type Effect uint16

// Effects.
const (
	// Dest: the first operand is written (a destination).
	Dest Effect = 1 << iota
	// Pure: the result depends on the operands only, with no memory, no
	// other thread and no state involved.
	Pure
	// Load and Store: the instruction reads or writes memory in the space
	// its qualifiers name; Atomic: indivisibly.
	Load
	Store
	Atomic
	// Barrier: the thread waits at a CTA barrier for the threads it names
	// (all of the CTA unless a thread count is given).
	Barrier
	// WarpSync: warp-synchronous; the last operand is the member mask,
	// and every lane it names executes the instruction together.
	WarpSync
	// Aligned: warp-collective (.aligned); all 32 lanes of the warp
	// execute the same instruction together.
	Aligned
	// Branch: control continues at the label operand.
	Branch
	// Exit: the thread ends.
	Exit
	// Fence: memory accesses are ordered across the instruction.
	Fence
	// Async: the effect completes later, at a wait of its own kind.
	Async
	// WarpGroup: warpgroup-collective (wgmma, setmaxnreg): the four
	// warps of a warpgroup (threads 128·i to 128·i+127 of the CTA)
	// execute the same instruction together; every row with it is
	// Aligned too.
	WarpGroup
)

// Lookup returns the row of opcode op ("ld.global.nc.v4.f32"), or false
// if the table has none.
func Lookup(op string) (*Row, bool) {
	head := op
	if i := strings.IndexByte(op, '.'); i >= 0 {
		head = op[:i]
	}
	for _, r := range byHead[head] { // longest name first
		if op == r.Name || strings.HasPrefix(op, r.Name) && op[len(r.Name)] == '.' {
			return r, true
		}
	}
	return nil, false
}

// Quals returns the qualifiers of op, an opcode of row r.
func (r *Row) Quals(op string) []string {
	if len(op) <= len(r.Name) {
		return nil
	}
	return strings.Split(op[len(r.Name)+1:], ".")
}

// Has reports whether r has every effect in e.
func (r *Row) Has(e Effect) bool { return r.Effects&e == e }

// Space returns the state spaces op's qualifiers name among those r
// takes, or Generic for a memory instruction that names none.
func (r *Row) Space(op string) Space {
	var s Space
	for _, q := range r.Quals(op) {
		s |= spaceOf(q) & r.Spaces
	}
	if s == 0 && r.Spaces&Generic != 0 {
		s = Generic
	}
	return s
}

// Target returns the target and PTX ISA version op, an opcode of row r,
// needs.
func (r *Row) Target(op string) (sm, ptx int) {
	sm, ptx = r.SM, r.PTX
	if len(r.Raise) == 0 {
		return sm, ptx
	}
	q := r.Quals(op)
	for _, x := range r.Raise {
		if x.When != nil && x.When(q) || x.Qual != "" && has(q, x.Qual) {
			sm, ptx = max(sm, x.SM), max(ptx, x.PTX)
		}
	}
	return sm, ptx
}

// Arity returns the fewest and most operands r takes.
func (r *Row) Arity() (lo, hi int) { return len(r.Args) - r.Opt, len(r.Args) }

// ArityString describes the operand counts r takes: "3", "3 or 4".
func (r *Row) ArityString() string {
	lo, hi := r.Arity()
	if lo == hi {
		return strconv.Itoa(lo)
	}
	if hi == lo+1 {
		return fmt.Sprintf("%d or %d", lo, hi)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// Rows returns the table, sorted by name.
func Rows() []*Row { return sorted }

func has(q []string, s string) bool {
	for _, x := range q {
		if x == s {
			return true
		}
	}
	return false
}

// SpecialReg is a special register the builder may read, with the target
// and PTX ISA version that introduced it.
type SpecialReg struct {
	Name    string // "%cluster_ctarank", "%tid.x"
	SM, PTX int
}

// LookupSReg returns the special register called name, or false if the
// table has none.
func LookupSReg(name string) (SpecialReg, bool) {
	s, ok := sregs[name]
	return s, ok
}

// SRegs returns the special registers, sorted by name.
func SRegs() []SpecialReg { return sortedSRegs }

// Directive is a kernel directive (.reqnctapercluster) with the target and
// PTX ISA version it needs.
type Directive struct {
	Name    string
	SM, PTX int
}

// LookupDirective returns the directive called name (with its dot), or
// false.
func LookupDirective(name string) (Directive, bool) {
	for _, d := range directives {
		if d.Name == name {
			return d, true
		}
	}
	return Directive{}, false
}
