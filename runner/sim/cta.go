package sim

import (
	"fmt"
	"math/bits"
)

// launchCtx is one kernel launch: the kernel, its configuration and the
// memory it sees.
type launchCtx struct {
	k        *kernel
	grid     [3]int
	block    [3]int
	nthreads int
	nwarps   int
	smem     int // static + dynamic shared bytes per CTA
	params   []byte
	allocs   []*alloc
	mem      *memory
	race     bool
	maxSteps int64
	cluster  [3]int // cluster shape ({1,1,1} without clusters)
	csize    int    // CTAs per cluster
	hopper   bool   // the CTAs need sm_90 state (hopperState)
}

// shadow records, for two bytes of shared memory, who last wrote and read
// them: the thread (or tidMany, tidAtomic), the warps (a mask) and the
// stamp of the interval they accessed it in (the largest, for several).
type shadow struct {
	wEpoch, rEpoch uint32
	wTid, rTid     int32
	wWarps, rWarps uint32
}

const (
	tidMany   = -2 // several readers
	tidAtomic = -3 // atomics (by any threads)
)

// ctaRun is a worker's state for running CTAs of one launch, one after
// another. Its buffers are reused from CTA to CTA.
type ctaRun struct {
	l      *launchCtx
	ctaid  [3]int
	linear int
	warps  []*warp
	smem   []byte
	shadow []shadow
	// wgRead holds, per 16-byte chunk of shared memory and warp, the
	// stamp of the interval in which the warp's last retired wgmma read
	// the chunk (0: none); a TMA or bulk load into the chunk is checked
	// against each (race.go).
	wgRead []uint32
	// The race detector's clock: clock numbers intervals (stamps); every
	// access stamped below floor happens before everything now.
	clock, floor uint32
	bars         [16]namedBar
	done         uint32 // warps that exited
	local        []byte
	steps        int64
	insts        uint64
	last         *alloc // the global allocation hit last
	// The cluster the CTA runs in, its rank there and the cluster's index
	// in the grid; sm_90 state (nil for kernels that do not need it).
	cl        *clusterRun
	rank      int
	clusterID [3]int
	hs        *hopperState
}

// Warp states.
const (
	wsRun uint8 = iota
	wsBarrier
	wsDone
)

type warp struct {
	c      *ctaRun
	id     int
	r      []uint64 // slot s of lane l at r[s*32+l]
	rw     []uint32 // per slot: lanes that have written it
	p      []uint32 // per predicate: lane bits
	pw     []uint32 // per predicate: lanes that have written it
	full   uint32   // lanes that exist
	live   uint32   // lanes not exited
	active uint32   // lanes executing at pc
	pc     int32
	next   int32 // smallest pc of a live lane outside active (merge point)
	pcs    [32]int32
	state  uint8
	cp     *[32]cpLane
	hw     *hopperWarp // sm_90 async state, allocated on first use
	// The race detector's view of the warp: the stamp of its current
	// interval, and vc[v], the stamp below which warp v's accesses happen
	// before the warp's present (vc[id] == stamp).
	stamp uint32
	vc    [32]uint32
	// bar.red contributions of the lanes waiting at the barrier.
	redPopc        int
	redAll, redAny bool
}

const noPC = int32(1<<31 - 1)

func newCtaRun(l *launchCtx) *ctaRun {
	c := &ctaRun{l: l, smem: make([]byte, l.smem)}
	if l.race && l.smem > 0 {
		c.shadow = make([]shadow, (l.smem+1)/2)
		if l.hopper {
			c.wgRead = make([]uint32, (l.smem+15)/16*l.nwarps)
		}
	}
	if l.k.localBytes > 0 {
		c.local = make([]byte, l.k.localBytes*l.nthreads)
	}
	if l.hopper {
		c.hs = newHopperState(l)
	}
	k := l.k
	for i := 0; i < l.nwarps; i++ {
		w := &warp{c: c, id: i, r: make([]uint64, k.nslots*32), rw: make([]uint32, k.nslots),
			p: make([]uint32, k.npreds), pw: make([]uint32, k.npreds)}
		n := min(32, l.nthreads-32*i)
		w.full = uint32(1<<n - 1)
		if n == 32 {
			w.full = ^uint32(0)
		}
		for _, cs := range k.consts {
			r := w.r[cs.slot*32 : cs.slot*32+32]
			for j := range r {
				r[j] = cs.val
			}
		}
		c.warps = append(c.warps, w)
	}
	return c
}

// resetAt prepares the worker for the CTA ctaid.
func (c *ctaRun) resetAt(ctaid [3]int) {
	l := c.l
	c.ctaid = ctaid
	c.linear = ctaid[0] + l.grid[0]*(ctaid[1]+l.grid[1]*ctaid[2])
	if c.hs != nil {
		c.hs.reset()
	}
	if c.clock > 1<<31 { // far from wrapping around: start the stamps again
		clear(c.shadow)
		clear(c.wgRead)
		c.clock = 0
	}
	c.done = 0
	clear(c.bars[:])
	c.steps = 0
	c.last = nil
	clear(c.smem)
	clear(c.local)
	for _, w := range c.warps {
		clear(w.rw)
		clear(w.pw)
		w.live, w.active = w.full, w.full
		w.pc, w.next = 0, noPC
		w.state = wsRun
		if w.hw != nil {
			w.hw.reset()
		}
		if w.cp != nil {
			for i := range w.cp {
				w.cp[i].ops, w.cp[i].groups = w.cp[i].ops[:0], w.cp[i].groups[:0]
			}
		}
		w.initSregs()
	}
	c.fullSync()
}

func (w *warp) initSregs() {
	c, l := w.c, w.c.l
	bx, by := l.block[0], l.block[1]
	for _, s := range l.k.sregs {
		r := (*[32]uint64)(w.r[s.slot*32 : s.slot*32+32])
		for lane := 0; lane < 32; lane++ {
			tid := w.id*32 + lane
			var v uint64
			switch s.kind {
			case srTidX:
				v = uint64(tid % bx)
			case srTidY:
				v = uint64(tid / bx % by)
			case srTidZ:
				v = uint64(tid / (bx * by))
			case srNtidX:
				v = uint64(bx)
			case srNtidY:
				v = uint64(by)
			case srNtidZ:
				v = uint64(l.block[2])
			case srCtaidX:
				v = uint64(c.ctaid[0])
			case srCtaidY:
				v = uint64(c.ctaid[1])
			case srCtaidZ:
				v = uint64(c.ctaid[2])
			case srNctaidX:
				v = uint64(l.grid[0])
			case srNctaidY:
				v = uint64(l.grid[1])
			case srNctaidZ:
				v = uint64(l.grid[2])
			case srLaneid:
				v = uint64(lane)
			case srWarpid:
				v = uint64(w.id)
			case srNwarpid:
				v = 64
			case srSmid:
				v = uint64(c.linear % numSMs)
			case srNsmid:
				v = numSMs
			case srLanemaskEq:
				v = 1 << lane
			case srLanemaskLt:
				v = 1<<lane - 1
			case srLanemaskLe:
				v = 1<<(lane+1) - 1
			case srLanemaskGt:
				v = uint64(^uint32(0) << (lane + 1))
				if lane == 31 {
					v = 0
				}
			case srLanemaskGe:
				v = uint64(^uint32(0) << lane)
			case srGridid:
				v = 1
			case srClock, srClock64:
				v = 0 // updated when read: see opMov
			default:
				v = c.clusterSreg(s.kind)
			}
			r[lane] = v
		}
	}
}

// barRed completes bar.red: every waiting warp (in ws) gets the reduction
// over all of them, in the destination of its own bar.red.
func (c *ctaRun) barRed(ws uint32) {
	popc, all, any := 0, true, false
	for m := ws; m != 0; m &= m - 1 {
		w := c.warps[bits.TrailingZeros32(m)]
		popc += w.redPopc
		all = all && w.redAll
		any = any || w.redAny
	}
	for m := ws; m != 0; m &= m - 1 {
		w := c.warps[bits.TrailingZeros32(m)]
		in, lv := &c.l.k.code[w.pc], w.live
		switch in.mode2 {
		case barRedPopc:
			D := w.lanes(in.d[0])
			for l := range D {
				if lv&(1<<l) != 0 {
					D[l] = uint64(popc)
				}
			}
			w.rw[in.d[0]] |= lv
			continue
		case barRedAnd:
			w.p[in.d[0]] = w.p[in.d[0]]&^lv | boolMask(all, lv)
		case barRedOr:
			w.p[in.d[0]] = w.p[in.d[0]]&^lv | boolMask(any, lv)
		}
		w.pw[in.d[0]] |= lv
	}
}

func boolMask(b bool, m uint32) uint32 {
	if b {
		return m
	}
	return 0
}

func (c *ctaRun) barrierError(in *inst, w *warp, detail string) error {
	lane := bits.TrailingZeros32(w.full)
	return c.execError(in, w, lane, ErrBarrier, 0, false, detail)
}

func (c *ctaRun) execError(in *inst, w *warp, lane int, sentinel error, addr uint64, hasAddr bool, detail string) error {
	l := c.l
	tid := w.id*32 + lane
	bx, by := l.block[0], l.block[1]
	return &ExecError{Kernel: l.k.name, Line: int(in.line), Inst: in.text, CTA: c.ctaid,
		Thread: [3]int{tid % bx, tid / bx % by, tid / (bx * by)}, Addr: addr, HasAdd: hasAddr, Detail: detail, Err: sentinel}
}

// threadName prints a thread of the CTA by its index.
func (c *ctaRun) threadName(tid int) string {
	bx, by := c.l.block[0], c.l.block[1]
	if c.l.block[1] == 1 && c.l.block[2] == 1 {
		return fmt.Sprintf("thread %d", tid)
	}
	return fmt.Sprintf("thread (%d,%d,%d)", tid%bx, tid/bx%by, tid/(bx*by))
}

// reselect makes the lanes at the smallest pc the active group. The pcs
// of all live lanes must be current in w.pcs.
func (w *warp) reselect() {
	minPC := noPC
	for m := w.live; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		if w.pcs[l] < minPC {
			minPC = w.pcs[l]
		}
	}
	act, next := uint32(0), noPC
	for m := w.live; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		switch p := w.pcs[l]; {
		case p == minPC:
			act |= 1 << l
		case p < next:
			next = p
		}
	}
	w.pc, w.active, w.next = minPC, act, next
}

// setPCs records pc for the lanes of m.
func (w *warp) setPCs(m uint32, pc int32) {
	for ; m != 0; m &= m - 1 {
		w.pcs[bits.TrailingZeros32(m)&31] = pc
	}
}
