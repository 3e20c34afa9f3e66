package ptx

import "fmt"

// The Hopper rules of the analyses (see analysis.go for the domains):
// warpgroup-collective instructions, wgmma tile alignment and mbarrier
// phases.

// checkWarpGroup applies RuleWarpGroup to a warpgroup-collective
// instruction (wgmma.*, setmaxnreg) and reports whether it passed: the
// CTA is whole warpgroups (.reqntid a multiple of 128 threads), the
// control reaching it is warpgroup-uniform, and no thread has exited
// under control that is not.
func (a *analyzer) checkWarpGroup(in *Inst, c *ctx) bool {
	total := a.ntid[0] * a.ntid[1] * a.ntid[2]
	switch {
	case !a.known:
		a.violate(in, RuleWarpGroup, "the kernel has no .reqntid, so its warpgroups are not known")
	case total%128 != 0:
		a.violate(in, RuleWarpGroup, fmt.Sprintf(".reqntid %s makes %d threads, not whole warpgroups of 128", joinInts(a.f.reqntid), total))
	case c.lvl > wgUniform:
		a.violate(in, RuleWarpGroup, a.fmtReason(c.why))
	case a.st[exitTaint].lvl > wgUniform:
		a.violate(in, RuleWarpGroup, "some threads of a warpgroup may have exited: "+a.fmtReason(a.st[exitTaint].why))
	default:
		return true
	}
	return false
}

// checkDesc applies RuleSwizzleAlign to the start address of a
// WgmmaDesc: with base offset 0, a swizzled tile starts at an atom
// boundary (8 rows of the swizzle span: 1024 bytes for 128B), and the
// start address lies within the atom's first row (k steps of a K-major
// tile); an unswizzled one at a multiple of 16. Reported: an address
// that is a static shared array (declared aligned to less than the atom)
// plus an offset, or an absolute value known modulo the atom (a dynamic
// base rounded up with and), whose offset provably breaks this.
// Addresses the intervals do not pin modulo the atom, and offsets from
// dynamic shared memory that was not rounded, are not checked.
func (a *analyzer) checkDesc(in *Inst) {
	n := in.desc
	i := a.idx(n.addr)
	v := a.st[i]
	span := int64(n.sw.Span())
	atom := 8 * span
	if n.sw == SwizzleNone {
		atom = 16
	}
	name := "the address"
	if v.sym > 0 {
		d := a.f.shared[v.sym-1]
		name = d.sym.Name
		if int64(d.align) < atom {
			a.violate(in, RuleSwizzleAlign, fmt.Sprintf("%s is aligned to %d bytes; a tile of %s needs %d", name, d.align, swizzleName(n.sw), atom))
			return
		}
	} else if v.sym < 0 {
		return
	}
	lo, hi := a.eval(i)
	m, r := cong(lo, hi, v.cm, v.cr)
	if m != 0 && m%atom != 0 {
		return // not pinned modulo the atom
	}
	r = pmod(r, atom)
	switch {
	case r%16 != 0:
		a.violate(in, RuleSwizzleAlign, fmt.Sprintf("%s plus %d is not 16-byte aligned", name, r))
	case n.sw != SwizzleNone && r >= span:
		a.violate(in, RuleSwizzleAlign, fmt.Sprintf("the tile starts %d bytes into a %d-byte atom of %s (%s, base offset 0): its start must be %s plus a multiple of %d, or within the first %d bytes of one",
			r, atom, swizzleName(n.sw), name, name, atom, span))
	}
}

func swizzleName(s Swizzle) string {
	if s == SwizzleNone {
		return "no swizzle"
	}
	return fmt.Sprintf("a %d-byte swizzle", s.Span())
}

// checkPhase applies RuleMbarPhase to mbarrier.try_wait.parity: in a
// loop around it (not its own spin loop, with no If between), a wait
// whose barrier and parity are the same in every iteration waits for one
// phase only: from the second iteration on it returns at once, without
// the data the barrier guards. Same: the address is a symbol, a register
// the loop does not write, or a value the intervals pin; the parity an
// immediate, a register the loop does not write, or one the intervals
// pin. A guarded wait, one under an If inside the loop, and spin loops
// written with raw branches are not checked; nor is whether a parity that
// does change follows the barrier's phases.
func (a *analyzer) checkPhase(in *Inst) {
	fr := a.frames
	if len(fr) > 0 && fr[len(fr)-1].inCond {
		fr = fr[:len(fr)-1] // the spin loop of MbarWait
	}
	if len(fr) == 0 || in.Guard.Valid() || len(in.Args) < 3 {
		return
	}
	l := fr[len(fr)-1]
	if l.inCond || l.ifDepth != a.ifDepth {
		return
	}
	addr, ok := in.Args[1].(Addr)
	if !ok || !a.invariant(l.x, addr.Base) || !a.invariant(l.x, in.Args[2]) {
		return
	}
	a.violate(in, RuleMbarPhase, fmt.Sprintf("the loop $L_loop%d_top writes neither the barrier's address %v nor the parity %v, so after the first completion the wait returns at once",
		l.x.id, addr.Base, in.Args[2]))
}

// invariant reports whether operand o has the same value in every
// iteration of loop x.
func (a *analyzer) invariant(x *loopNode, o Operand) bool {
	switch v := o.(type) {
	case Imm, Sym:
		return true
	case Reg:
		i := a.idx(v)
		if lo, hi := a.eval(i); lo == hi && lo > -inf && lo < inf {
			return true
		}
		return !a.loopWrites(x)[i]
	}
	return false
}

// loopWrites returns the registers loop x writes (in its condition block
// or body), computed once per kernel.
func (a *analyzer) loopWrites(x *loopNode) map[int32]bool {
	if w, ok := a.written[x]; ok {
		return w
	}
	w := map[int32]bool{}
	add := func(o Operand) {
		switch d := o.(type) {
		case Reg:
			w[a.idx(d)] = true
		case Vec:
			for _, r := range d {
				w[a.idx(r)] = true
			}
		case DstPair:
			w[a.idx(d.P)] = true
			if r, ok := d.D.(Reg); ok {
				w[a.idx(r)] = true
			}
		}
	}
	visit := func(n node) {
		if in, ok := n.(*Inst); ok && classify(in).flags&cDest != 0 {
			add(in.Args[0])
		}
	}
	walk(x.cond.nodes, visit)
	walk(x.body.nodes, visit)
	a.written[x] = w
	return w
}
