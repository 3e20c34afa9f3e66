package sim

import (
	"fmt"
	"math/bits"
)

// The 16 named barriers of a CTA: bar.sync, bar.arrive, bar.red and
// their barrier.* forms, with thread counts. The rules are in doc.go.

// Barrier forms (inst.mode of opBar).
const (
	barArrive  uint8 = 1 << iota // bar.arrive: count in without waiting
	barAligned                   // .aligned (every bar.* form): whole warps, one instruction
)

// namedBar is the open phase of one barrier (none while arrived is 0).
type namedBar struct {
	need     int    // warps the phase needs
	whole    bool   // the count is the CTA's: every live warp, exited warps do not hold it up
	implicit bool   // an arrival without a thread count (the whole CTA's barrier)
	red      uint8  // the phase's bar.red reduction (0: none)
	pc       int32  // the first arrival's instruction
	arrived  uint32 // warps that arrived in this phase
	waiting  uint32 // of those, the warps that wait (bar.sync, bar.red)
	release  [32]uint32
}

// barrier executes bar.sync, bar.arrive and bar.red: the warp arrives at
// its barrier and, unless it only arrives, waits there (wsBarrier). The
// arrival that completes the phase releases the waiting warps.
func (w *warp) barrier(in *inst, mask uint32) error {
	c := w.c
	if mask != w.live {
		// Live lanes are elsewhere: a barrier in a divergent branch or
		// under a guard. Exited lanes do not count, as on the GPU.
		detail := fmt.Sprintf("reached by lanes %s of warp %d only; lanes %s are elsewhere (divergent branch or guard)",
			laneList(mask), w.id, laneList(w.live&^mask))
		if in.mode&barAligned == 0 {
			detail += "; a barrier.sync without .aligned reached by part of a warp is not modelled"
		}
		return w.fault(in, bits.TrailingZeros32(mask), ErrBarrier, 0, false, detail)
	}
	need, err := w.barCount(in)
	if err != nil {
		return err
	}
	b := &c.bars[in.imm]
	if err := w.joinPhase(in, b, need); err != nil {
		return err
	}
	b.arrived |= 1 << w.id
	if in.mode&barArrive != 0 {
		if c.shadow != nil {
			w.releaseTo(&b.release)
		}
	} else {
		b.waiting |= 1 << w.id
		w.state = wsBarrier
		if in.mode2 != 0 {
			p := w.p[in.a[0]]
			if in.flags&flNegC != 0 {
				p = ^p
			}
			p &= mask
			w.redPopc, w.redAll, w.redAny = bits.OnesCount32(p), p == mask, p != 0
		}
	}
	if c.barDone(b) {
		c.completeBar(b)
	}
	return nil
}

// barCount returns the warps an instruction's thread count asks for: a
// multiple of 32 up to the CTA's warps, or the CTA's size (also without
// a count).
func (w *warp) barCount(in *inst) (int, error) {
	l := w.c.l
	n := int(in.off)
	switch {
	case in.flags&flSat == 0 || n == l.nthreads:
		return l.nwarps, nil
	case n <= 0 || n%32 != 0:
		return 0, w.fault(in, bits.TrailingZeros32(w.live), ErrBarrier, 0, false,
			fmt.Sprintf("thread count %d is not a positive multiple of 32 (barriers count whole warps)", n))
	case n > 32*l.nwarps:
		return 0, w.fault(in, bits.TrailingZeros32(w.live), ErrBarrier, 0, false,
			fmt.Sprintf("thread count %d exceeds the CTA's %d threads: the barrier can never complete", n, l.nthreads))
	}
	return n / 32, nil
}

// joinPhase opens a phase of b with the warp's arrival, or checks that
// the arrival agrees with the phase already open.
func (w *warp) joinPhase(in *inst, b *namedBar, need int) error {
	c := w.c
	implicit := in.flags&flSat == 0
	if b.arrived == 0 {
		*b = namedBar{need: need, whole: need == c.l.nwarps, implicit: implicit, red: in.mode2, pc: w.pc}
		return nil
	}
	first := &c.l.k.code[b.pc]
	phase := fmt.Sprintf("barrier %d, whose phase began at line %d `%s` with a count of %d threads (arrived: warps %s)",
		in.imm, first.line, first.text, 32*b.need, laneList(b.arrived))
	lane := bits.TrailingZeros32(w.live)
	switch {
	case b.arrived&(1<<w.id) != 0:
		return w.fault(in, lane, ErrBarrier, 0, false, fmt.Sprintf(
			"warp %d arrives a second time in one phase of %s; the GPU would count it twice, exceeding the warps the count names", w.id, phase))
	case need != b.need:
		return w.fault(in, lane, ErrBarrier, 0, false, fmt.Sprintf(
			"thread count %d does not match %s", 32*need, phase))
	case in.mode2 != b.red:
		return w.fault(in, lane, ErrBarrier, 0, false, "bar.red and other barrier instructions (or another reduction) mixed in one phase of "+phase)
	case (implicit || b.implicit) && in.mode&barAligned != 0 && w.pc != b.pc:
		fw := c.warps[bits.TrailingZeros32(b.arrived)]
		return c.barrierError(first, fw, fmt.Sprintf(
			"warps %s wait at this barrier while warp %d waits at line %d `%s` (a barrier without a thread count is the whole CTA's; .aligned: every thread executes the same instruction)",
			laneList(b.arrived), w.id, in.line, in.text))
	}
	return nil
}

// barDone reports whether b's phase has all its arrivals.
func (c *ctaRun) barDone(b *namedBar) bool {
	if b.whole {
		all := uint32(1)<<c.l.nwarps - 1
		return (b.arrived|c.done)&all == all
	}
	return bits.OnesCount32(b.arrived) == b.need
}

// completeBar ends b's phase: the waiting warps go on and the barrier is
// ready for its next phase.
func (c *ctaRun) completeBar(b *namedBar) {
	if c.shadow != nil {
		c.orderPhase(b)
	}
	if b.red != 0 {
		c.barRed(b.waiting)
	}
	for m := b.waiting; m != 0; m &= m - 1 {
		w := c.warps[bits.TrailingZeros32(m)]
		w.pc++
		w.state = wsRun
	}
	b.arrived, b.waiting = 0, 0
}

// exitBars completes the phases of whole-CTA barriers that only warps
// that have exited held up.
func (c *ctaRun) exitBars() {
	for i := range c.bars {
		if b := &c.bars[i]; b.arrived != 0 && b.whole && c.barDone(b) {
			c.completeBar(b)
		}
	}
}

// barWaits describes the open phases of the CTA's barriers, for a
// deadlock report.
func (c *ctaRun) barWaits() []string {
	var out []string
	for i := range c.bars {
		b := &c.bars[i]
		if b.arrived == 0 {
			continue
		}
		first := &c.l.k.code[b.pc]
		s := fmt.Sprintf("CTA (%d,%d,%d) barrier %d (phase begun at line %d `%s`) expects %d threads (%d warps), %d arrived (warps %s), waiting: warps %s",
			c.ctaid[0], c.ctaid[1], c.ctaid[2], i, first.line, first.text, 32*b.need, b.need,
			32*bits.OnesCount32(b.arrived), laneList(b.arrived), laneList(b.waiting))
		if b.whole && c.done != 0 {
			s += fmt.Sprintf(" (warps %s exited)", laneList(c.done))
		}
		out = append(out, s)
	}
	return out
}
