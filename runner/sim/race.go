package sim

import (
	"fmt"
	"math/bits"
)

// Shared-memory race detection, per two-byte granule, with vector clocks
// over the warps of a CTA (the rules are in doc.go).
//
// Every warp runs in an interval numbered by a stamp from the CTA's clock;
// accesses are recorded with the accessing warp's stamp. w.vc[v] is the
// stamp below which warp v's accesses happen before warp w's present: a
// barrier phase raises it for the warps that wait, to what the arriving
// warps had released. c.floor is the same bound for every warp, raised by
// a barrier of the whole CTA (and by the orderings not modelled per warp),
// so kernels with only such barriers compare one number, as before.

// tick starts a new interval stamp.
func (c *ctaRun) tick() uint32 {
	c.clock++
	return c.clock
}

// fullSync orders everything that happened in the CTA before everything
// after: a barrier of the whole CTA.
func (c *ctaRun) fullSync() {
	s := c.tick()
	c.floor = s
	for _, w := range c.warps {
		w.stamp, w.vc[w.id] = s, s
	}
}

// before reports whether the accesses of the warps in ws, stamped e,
// happen before the warp's present.
func (w *warp) before(e, ws uint32) bool {
	if e < w.c.floor {
		return true
	}
	for m := ws; m != 0; m &= m - 1 {
		if e >= w.vc[bits.TrailingZeros32(m)] {
			return false
		}
	}
	return true
}

// releaseTo adds to rel what the warp's arrival at a barrier releases
// (everything it did, and everything ordered before it) and starts a new
// interval for it: what it does next is not ordered by the arrival.
func (w *warp) releaseTo(rel *[32]uint32) {
	c := w.c
	s := c.tick()
	for v := 0; v < c.l.nwarps; v++ {
		rel[v] = max(rel[v], w.vc[v])
	}
	rel[w.id] = s
	w.stamp, w.vc[w.id] = s, s
}

// acquireMbar orders after the warp's present what the arrivals of the
// completed phase of mb (of CTA c) with the given parity released. A
// warp of another CTA learns nothing: accesses to other CTAs' shared
// memory are not race-checked.
func (w *warp) acquireMbar(c *ctaRun, mb *mbarrier, parity uint32) {
	if c != w.c || c.shadow == nil {
		return
	}
	rel := &mb.done[parity]
	for v := 0; v < c.l.nwarps; v++ {
		w.vc[v] = max(w.vc[v], rel[v])
	}
	w.vc[w.id] = w.stamp
}

// orderPhase applies a completed phase of b to the race detector: what
// every arriving warp did before arriving happens before what the
// waiting warps do after it; warps outside the phase are not ordered.
func (c *ctaRun) orderPhase(b *namedBar) {
	if b.whole && b.waiting == b.arrived {
		c.fullSync() // every live warp waits: exited warps are ordered too, as before
		return
	}
	s := c.tick()
	j := b.release
	for m := b.waiting; m != 0; m &= m - 1 {
		w := c.warps[bits.TrailingZeros32(m)]
		for v := 0; v < c.l.nwarps; v++ {
			j[v] = max(j[v], w.vc[v])
		}
		j[w.id] = s
	}
	for m := b.waiting; m != 0; m &= m - 1 {
		w := c.warps[bits.TrailingZeros32(m)]
		w.vc, w.stamp = j, s
	}
}

func (w *warp) raceCheck(in *inst, lane int, addr uint64, n int, write, atomic, record bool) error {
	c := w.c
	if c.shadow == nil {
		return nil
	}
	tid := int32(w.id*32 + lane)
	e, floor, me := w.stamp, c.floor, uint32(1)<<w.id
	for g := addr / 2; g <= (addr+uint64(n)-1)/2; g++ {
		s := &c.shadow[g]
		if s.wEpoch >= floor && s.wTid != tid && !(atomic && s.wTid == tidAtomic) && !w.before(s.wEpoch, s.wWarps) {
			return w.raceError(in, lane, addr, write, "wrote", s.wTid, s.wWarps)
		}
		if write && s.rEpoch >= floor && s.rTid != tid && !w.before(s.rEpoch, s.rWarps) {
			return w.raceError(in, lane, addr, write, "read", s.rTid, s.rWarps)
		}
		if !record {
			continue
		}
		switch {
		case write && atomic && s.wTid == tidAtomic && s.wEpoch >= floor && !w.before(s.wEpoch, s.wWarps):
			s.wEpoch, s.wWarps = max(s.wEpoch, e), s.wWarps|me // concurrent atomics
		case write:
			s.wEpoch, s.wTid, s.wWarps = e, tid, me
			if atomic {
				s.wTid = tidAtomic
			}
		case s.rEpoch < floor || s.rTid == tid || w.before(s.rEpoch, s.rWarps):
			s.rEpoch, s.rTid, s.rWarps = e, tid, me // earlier reads are ordered before this one
		default:
			s.rEpoch, s.rTid, s.rWarps = max(s.rEpoch, e), tidMany, s.rWarps|me
		}
	}
	return nil
}

// asyncReadDone records that the warp's retired wgmma read the 16-byte
// chunk ch, in the interval of its wgmma.wait_group: the arrivals after
// the wait release the read, those before it do not.
func (w *warp) asyncReadDone(ch uint32) {
	if w.c.wgRead != nil {
		w.c.wgRead[int(ch)*w.c.l.nwarps+w.id] = w.stamp
	}
}

// asyncWriteCheck checks, at its issue, that the warp's asynchronous load
// into n bytes at addr of its own CTA comes after every other warp's
// retired wgmma read of them: what the reader did after its wait (its
// arrival on the slot's empty mbarrier) is ordered before the warp's
// present.
func (w *warp) asyncWriteCheck(in *inst, lane int, addr, n uint32) error {
	c := w.c
	if c.wgRead == nil {
		return nil
	}
	nw := c.l.nwarps
	for ch := addr >> 4; ch < (addr+n)>>4; ch++ {
		for v, e := range c.wgRead[int(ch)*nw : int(ch+1)*nw] {
			if e != 0 && v != w.id && !w.before(e, 1<<v) {
				return c.execError(in, w, lane, ErrRace, uint64(ch)*16, true,
					fmt.Sprintf("loads into shared memory that a wgmma of warp %d read with no release ordering the two (its wgmma.wait_group, then an mbarrier arrival this thread's wait acquired)", v))
			}
		}
	}
	return nil
}

func (w *warp) raceError(in *inst, lane int, addr uint64, write bool, prior string, other int32, warps uint32) error {
	c := w.c
	what := "reads"
	if write {
		what = "writes"
	}
	who := "another thread"
	switch {
	case other == tidMany:
		who = "several threads of warps " + laneList(warps)
	case other == tidAtomic:
		who = "an atomic of a thread of warps " + laneList(warps)
	case other >= 0:
		who = c.threadName(int(other))
	}
	return c.execError(in, w, lane, ErrRace, addr, true,
		fmt.Sprintf("%s shared memory that %s %s with no barrier ordering the two (missing bar.sync, or a barrier phase warp %d took no part in?)",
			what, who, prior, w.id))
}
