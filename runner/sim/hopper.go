package sim

import (
	"fmt"
	"math/bits"
	"strings"
)

// This file holds the sm_90 execution model: clusters of CTAs scheduled
// together, mbarriers, the cluster barrier, the async proxy's ordering
// rules, and the small warp instructions (elect.sync, mapa, setmaxnreg,
// stmatrix). wgmma is in wgmma.go, TMA in tma.go. The rules are stated
// in doc.go.

// Warp states beyond wsRun, wsBarrier and wsDone.
const (
	wsMbar    uint8 = iota + 10 // blocked in mbarrier.try_wait
	wsCluster                   // blocked in barrier.cluster.wait
	wsYield                     // a false test_wait, nanosleep or a release: run again once no other warp can
)

// clusterAddrShift: a shared::cluster address is a shared::cta address
// with (rank+1) in the bits from here up (0: the CTA's own memory).
const clusterAddrShift = 24

// clusterRun schedules the CTAs of one cluster (one CTA without clusters).
type clusterRun struct {
	l      *launchCtx
	ctas   []*ctaRun
	loads  []asyncCopy // in-flight TMA loads and bulk copies, in issue order
	cphase int         // completed barrier.cluster phases
}

// hopperState is a CTA's sm_90 state, nil for kernels without sm_90
// async instructions (so that they pay nothing for it).
type hopperState struct {
	mbars   map[uint32]*mbarrier
	asyncWr []uint16    // per 16-byte chunk: in-flight TMA loads writing it
	asyncRd []uint16    // per 16-byte chunk: in-flight wgmma operands and TMA stores reading it
	proxy   []proxyMark // per 2-byte granule: the last generic-proxy write
	fences  []uint32    // per thread: fence.proxy.async executed so far
	wgs     []wgLog     // per warpgroup: warpgroup-collective instructions
	// listed[ch] is the number (read) of the last wgmma operand read that
	// listed chunk ch, so that a read lists each chunk once.
	listed []uint32
	read   uint32
}

// proxyMark records a generic write: the thread (tid+1; 0 for none) and
// how many proxy fences it had executed when it wrote.
type proxyMark struct {
	tid   int32
	fence uint32
}

type mbarrier struct {
	count, pending int32
	tx             int64
	phase          uint32
	waiters        []*warp
	// For the race detector (see race.go): what the arrivals of the open
	// phase released, and what the last completed phase of each parity
	// released (a wait that finds it complete acquires that).
	rel  [32]uint32
	done [2][32]uint32
}

// hopperWarp is a warp's sm_90 state.
type hopperWarp struct {
	pend       []int32  // per slot: in-flight wgmma groups holding it
	stamp      []uint32 // per slot: the open group that counted it
	npend      int      // slots with pend > 0
	seq        uint32   // the open wgmma group's number
	open       []int32
	openChunks []uint32
	groups     []asyncGroup
	fenced     bool
	bulkOpen   []uint32
	bulk       []asyncGroup
	wait       waitRec
	carrive    int
	cwait      int
}

type asyncGroup struct {
	slots  []int32
	chunks []uint32
}

type waitRec struct {
	in     *inst
	mask   uint32
	bar    *mbarrier
	ready  func(*mbarrier) bool
	holder *ctaRun
	off    uint32
	parity uint32
}

func newClusterRun(l *launchCtx) *clusterRun {
	cl := &clusterRun{l: l}
	for i := 0; i < l.csize; i++ {
		c := newCtaRun(l)
		c.cl, c.rank = cl, i
		cl.ctas = append(cl.ctas, c)
	}
	return cl
}

func newHopperState(l *launchCtx) *hopperState {
	return &hopperState{mbars: map[uint32]*mbarrier{}, asyncWr: make([]uint16, (l.smem+15)/16),
		asyncRd: make([]uint16, (l.smem+15)/16), proxy: make([]proxyMark, (l.smem+1)/2),
		fences: make([]uint32, l.nwarps*32), wgs: make([]wgLog, (l.nwarps+3)/4), listed: make([]uint32, (l.smem+15)/16)}
}

func (hs *hopperState) reset() {
	clear(hs.mbars)
	clear(hs.asyncWr)
	clear(hs.asyncRd)
	clear(hs.proxy)
	clear(hs.fences)
	clear(hs.listed)
	hs.read = 0
	for i := range hs.wgs {
		hs.wgs[i] = wgLog{}
	}
}

// reset prepares the cluster run for cluster idx (CTA idx without clusters).
func (cl *clusterRun) reset(idx int) {
	l := cl.l
	cx, cy := l.cluster[0], l.cluster[1]
	ngx, ngy := l.grid[0]/cx, l.grid[1]/cy
	cid := [3]int{idx % ngx, idx / ngx % ngy, idx / (ngx * ngy)}
	for r, c := range cl.ctas {
		c.clusterID = cid
		c.resetAt([3]int{cid[0]*cx + r%cx, cid[1]*cy + r/cx%cy, cid[2]*l.cluster[2] + r/(cx*cy)})
	}
	cl.loads = cl.loads[:0]
	cl.cphase = 0
}

// run executes the cluster to completion: warps run until they block;
// then barriers are released, blocked warps woken, and, when nothing else
// can move, in-flight TMA loads complete. A state where nothing can move
// and some warp still waits is a deadlock.
func (cl *clusterRun) run() error {
	for {
		for _, c := range cl.ctas {
			for _, w := range c.warps {
				if w.state == wsRun {
					if err := w.exec(); err != nil {
						return err
					}
				}
			}
		}
		moved, err := cl.settle()
		if err != nil {
			return err
		}
		if !moved {
			return cl.finish()
		}
	}
}

// settle makes blocked warps runnable where it can; it reports whether
// any warp can run.
func (cl *clusterRun) settle() (bool, error) {
	for _, c := range cl.ctas {
		c.exitBars()
	}
	if cl.runnable() {
		return true, nil
	}
	if cl.l.hopper {
		if cl.wakeCluster() {
			return true, nil
		}
		if len(cl.loads) > 0 {
			return true, cl.completeLoads()
		}
	}
	moved := false
	for _, c := range cl.ctas {
		for _, w := range c.warps {
			if w.state == wsYield {
				w.state, moved = wsRun, true
			}
		}
	}
	return moved, nil
}

// runnable reports whether a warp of the cluster can run (one woken by
// another warp's arrival, or by a barrier completed in settle).
func (cl *clusterRun) runnable() bool {
	for _, c := range cl.ctas {
		for _, w := range c.warps {
			if w.state == wsRun {
				return true
			}
		}
	}
	return false
}

// finish runs when nothing can move: either every warp is done, or the
// warps still waiting never will be.
func (cl *clusterRun) finish() error {
	var blocked []*warp
	for _, c := range cl.ctas {
		for _, w := range c.warps {
			if w.state != wsDone {
				blocked = append(blocked, w)
			}
		}
	}
	if len(blocked) == 0 {
		for _, c := range cl.ctas {
			if err := c.checkCollectives(); err != nil {
				return err
			}
		}
		return nil
	}
	var lines []string
	for _, c := range cl.ctas {
		lines = append(lines, c.barWaits()...)
	}
	for _, w := range blocked {
		if w.state != wsBarrier {
			lines = append(lines, w.waitDesc())
		}
	}
	w := blocked[0]
	in := &cl.l.k.code[w.pc]
	return w.c.execError(in, w, bits.TrailingZeros32(w.active), ErrDeadlock, 0, false,
		"every warp waits and nothing is in flight (a wrong barrier count, a wait on the wrong phase parity, or a missing arrive?): "+strings.Join(lines, "; "))
}

// waitDesc says what a blocked warp waits for.
func (w *warp) waitDesc() string {
	c := w.c
	in := &c.l.k.code[w.pc]
	where := fmt.Sprintf("CTA (%d,%d,%d) warp %d at line %d `%s`", c.ctaid[0], c.ctaid[1], c.ctaid[2], w.id, in.line, in.text)
	switch w.state {
	case wsMbar:
		m := w.hw.wait.bar
		return fmt.Sprintf("%s waits on the mbarrier at shared %#x for a phase that never completes (current phase %d, parity %d; %d of %d arrivals pending, tx-count %d)",
			where, w.hw.wait.off, m.phase, m.phase&1, m.pending, m.count, m.tx)
	case wsCluster:
		return where + " waits at barrier.cluster.wait for warps that never arrive"
	case wsBarrier:
		return fmt.Sprintf("%s waits at barrier %d", where, in.imm)
	}
	return where + " cannot run"
}

func (w *warp) hwState() *hopperWarp {
	if w.hw == nil {
		n := w.c.l.k.nslots
		w.hw = &hopperWarp{pend: make([]int32, n), stamp: make([]uint32, n), seq: 1}
	}
	return w.hw
}

func (hw *hopperWarp) reset() {
	clear(hw.pend)
	clear(hw.stamp)
	*hw = hopperWarp{pend: hw.pend, stamp: hw.stamp, seq: 1, open: hw.open[:0], openChunks: hw.openChunks[:0],
		groups: hw.groups[:0], bulkOpen: hw.bulkOpen[:0], bulk: hw.bulk[:0]}
}

// hopperOp executes an sm_90 instruction; stop reports that the warp
// blocked (its state says on what) and must not advance.
func (w *warp) hopperOp(in *inst, mask uint32) (stop bool, err error) {
	if mask == 0 {
		return false, nil
	}
	switch in.op {
	case opWgmma:
		return false, w.wgmma(in, mask)
	case opWgFence:
		if err := w.collective(in, mask); err != nil {
			return false, err
		}
		w.hwState().fenced = true
	case opWgCommit:
		if err := w.collective(in, mask); err != nil {
			return false, err
		}
		w.wgCommit()
	case opWgWait:
		if err := w.collective(in, mask); err != nil {
			return false, err
		}
		w.wgWait(int(in.imm))
	case opSetmaxnreg:
		if err := w.collective(in, mask); err != nil {
			return false, err
		}
		w.c.hs.wgs[w.id/4].regs = int(in.imm)
		return false, nil
	case opMbarInit, opMbarArrive, opMbarExpectTx, opMbarCompleteTx:
		return false, w.mbarUpdate(in, mask)
	case opMbarWait:
		return w.mbarWait(in, mask)
	case opTmaLoad:
		return false, w.tmaLoad(in, mask)
	case opTmaStore:
		return false, w.tmaStore(in, mask)
	case opBulkS2C:
		return false, w.bulkToCluster(in, mask)
	case opBulkG2S:
		return false, w.bulkFromGlobal(in, mask)
	case opBulkS2G:
		return false, w.bulkToGlobal(in, mask)
	case opBulkCommit:
		hw := w.hwState()
		hw.bulk = append(hw.bulk, asyncGroup{chunks: hw.bulkOpen})
		hw.bulkOpen = nil
	case opBulkWait:
		w.bulkWait(int(in.imm))
	case opFenceProxy:
		fs := w.c.hs.fences
		for m := mask; m != 0; m &= m - 1 {
			fs[w.id*32+bits.TrailingZeros32(m)]++
		}
	case opClusterArrive, opClusterWait:
		return w.clusterBarrier(in, mask)
	case opMapa:
		return false, w.mapa(in, mask)
	case opElect:
		return false, w.elect(in, mask)
	case opStmatrix:
		return false, w.stmatrix(in, mask)
	}
	return false, nil
}

// asyncAccess applies the async rules to a generic access of shared
// memory: no access to bytes an in-flight TMA load writes, no write to
// bytes an in-flight wgmma or TMA store reads; writes are recorded for
// the proxy-fence rule.
func (w *warp) asyncAccess(in *inst, lane int, addr uint64, n int, write bool) error {
	hs := w.c.hs
	for ch := addr >> 4; ch <= (addr+uint64(n)-1)>>4; ch++ {
		if hs.asyncWr[ch] != 0 {
			return w.fault(in, lane, ErrAsync, addr, true,
				"accesses shared memory that an in-flight TMA or bulk load writes (wait on its mbarrier first)")
		}
		if write && hs.asyncRd[ch] != 0 {
			return w.fault(in, lane, ErrAsync, addr, true,
				"writes shared memory that an in-flight wgmma.mma_async or bulk tensor store reads (wgmma.wait_group or cp.async.bulk.wait_group first)")
		}
	}
	if write {
		tid := w.id*32 + lane
		mk := proxyMark{int32(tid + 1), hs.fences[tid]}
		for g := addr / 2; g <= (addr+uint64(n)-1)/2; g++ {
			hs.proxy[g] = mk
		}
	}
	return nil
}

// asyncRead checks that the async proxy may read the 16-byte chunk ch:
// no TMA load is writing it and every generic write to it was followed
// by a fence.proxy.async of its thread. It returns what is wrong, or "".
func (c *ctaRun) asyncRead(ch uint32) string {
	hs := c.hs
	if hs.asyncWr[ch] != 0 {
		return "an in-flight TMA or bulk load writes it (wait on its mbarrier first)"
	}
	for g := ch * 8; g < ch*8+8 && int(g) < len(hs.proxy); g++ {
		if m := hs.proxy[g]; m.tid != 0 && hs.fences[m.tid-1] == m.fence {
			return fmt.Sprintf("%s wrote through the generic proxy (st.shared, stmatrix) with no fence.proxy.async of that thread since",
				c.threadName(int(m.tid-1)))
		}
	}
	return ""
}

// sharedAt maps a shared::cta or shared::cluster address (generic when
// the instruction names no space) to the CTA holding it and its offset
// there, checking n bytes and alignment to align.
func (w *warp) sharedAt(in *inst, lane int, addr uint64, n, align int) (*ctaRun, uint32, error) {
	if in.space == spGeneric {
		if addr-sharedWindow >= windowSize {
			return nil, 0, w.fault(in, lane, ErrMemory, addr, true, "not a shared-memory address")
		}
		addr -= sharedWindow
	}
	c := w.c
	if r := addr >> clusterAddrShift; r != 0 {
		if int(r) > len(c.cl.ctas) {
			return nil, 0, w.fault(in, lane, ErrMemory, addr, true,
				fmt.Sprintf("shared::cluster address of CTA rank %d in a cluster of %d", r-1, len(c.cl.ctas)))
		}
		c, addr = c.cl.ctas[r-1], addr&(1<<clusterAddrShift-1)
	}
	if addr%uint64(align) != 0 {
		return nil, 0, w.fault(in, lane, ErrMisaligned, addr, true, fmt.Sprintf("needs %d-byte alignment", align))
	}
	if addr+uint64(n) > uint64(len(c.smem)) {
		return nil, 0, w.fault(in, lane, ErrMemory, addr, true,
			fmt.Sprintf("%d bytes outside the CTA's %d bytes of shared memory", n, len(c.smem)))
	}
	return c, uint32(addr), nil
}

// mbarAt returns the mbarrier lane's address operand names.
func (w *warp) mbarAt(in *inst, lane int, initialized bool) (*ctaRun, uint32, *mbarrier, error) {
	c, off, err := w.sharedAt(in, lane, w.lanes(in.base)[lane]+uint64(in.off), 8, 8)
	if err != nil {
		return nil, 0, nil, err
	}
	m := c.hs.mbars[off]
	if m == nil && initialized {
		return nil, 0, nil, w.fault(in, lane, ErrUninitialized, uint64(off), true, "an mbarrier that mbarrier.init never initialized")
	}
	return c, off, m, nil
}

// mbarUpdate executes mbarrier.init, arrive{.expect_tx}, expect_tx and
// complete_tx, lane by lane.
func (w *warp) mbarUpdate(in *inst, mask uint32) error {
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		c, off, mb, err := w.mbarAt(in, l, in.op != opMbarInit)
		if err != nil {
			return err
		}
		var v int64
		if in.a[0] >= 0 {
			v = int64(uint32(w.lanes(in.a[0])[l]))
		}
		switch in.op {
		case opMbarInit:
			if v < 1 || v >= 1<<20 {
				return w.fault(in, l, ErrTrap, uint64(off), true, fmt.Sprintf("mbarrier.init count %d (want 1 to 2^20-1)", v))
			}
			if mb != nil && len(mb.waiters) > 0 {
				return w.fault(in, l, ErrAsync, uint64(off), true, "mbarrier.init of an mbarrier that warps wait on")
			}
			c.hs.mbars[off] = &mbarrier{count: int32(v), pending: int32(v)}
			continue
		case opMbarExpectTx:
			mb.tx += v
			continue
		case opMbarCompleteTx:
			mb.tx -= v
		case opMbarArrive:
			if in.mode2&mbSink == 0 {
				w.lanes(in.d[0])[l] = uint64(mb.phase)
			}
			n := int32(1)
			if in.mode2&mbExpectTx != 0 {
				mb.tx += v
			} else if in.mode2&mbCount != 0 {
				n = int32(v)
			}
			if mb.pending < n {
				return w.fault(in, l, ErrTrap, uint64(off), true,
					fmt.Sprintf("arrival on an mbarrier with only %d of %d arrivals pending in its phase", mb.pending, mb.count))
			}
			mb.pending -= n
			if c == w.c && c.shadow != nil {
				w.releaseTo(&mb.rel)
			}
		}
		if mb.pending == 0 && mb.tx == 0 {
			c.completePhase(mb)
		}
	}
	return nil
}

// completePhase ends the current phase of mb (of CTA c): the next
// begins, waiters whose phase completed are released (their try_wait
// returns true), and a new race-detection interval begins.
func (c *ctaRun) completePhase(mb *mbarrier) {
	mb.done[mb.phase&1], mb.rel = mb.rel, [32]uint32{}
	mb.phase++
	mb.pending, mb.tx = mb.count, 0
	keep := mb.waiters[:0]
	for _, w := range mb.waiters {
		if !w.hw.wait.ready(mb) {
			keep = append(keep, w)
			continue
		}
		wt := w.hw.wait
		w.acquireMbar(c, mb, wt.parity)
		w.p[wt.in.d[0]] |= wt.mask
		w.pw[wt.in.d[0]] |= wt.mask
		w.pc++
		w.state = wsRun
	}
	mb.waiters = keep
}

// mbarWait executes try_wait (blocking until the phase completes: it
// then returns true, so the loop around it ends) and test_wait (never
// blocks; a false result lets other warps run before the warp spins on).
func (w *warp) mbarWait(in *inst, mask uint32) (bool, error) {
	first := bits.TrailingZeros32(mask)
	c, off, mb, err := w.mbarAt(in, first, true)
	if err != nil {
		return false, err
	}
	for m := mask & (mask - 1); m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		if c2, off2, _, err := w.mbarAt(in, l, true); err != nil {
			return false, err
		} else if c2 != c || off2 != off {
			return false, w.fault(in, l, ErrTrap, uint64(off2), true, "lanes of a warp wait on different mbarriers (not modelled)")
		}
	}
	arg := w.lanes(in.a[0])[first]
	var ready func(*mbarrier) bool
	parity := uint32(arg & 1) // of the phase waited for
	if in.mode2&mbParity != 0 {
		ready = func(mb *mbarrier) bool { return mb.phase&1 != parity }
	} else {
		ph := uint32(arg)
		ready = func(mb *mbarrier) bool { return mb.phase != ph }
	}
	p := in.d[0]
	if ready(mb) {
		w.acquireMbar(c, mb, parity)
		w.p[p] |= mask
		return false, nil
	}
	if in.mode2&mbTest != 0 {
		w.p[p] &^= mask
		w.pw[p] |= mask
		w.pc++
		w.state = wsYield
		return true, nil
	}
	hw := w.hwState()
	hw.wait = waitRec{in: in, mask: mask, bar: mb, ready: ready, parity: parity, holder: c, off: off}
	mb.waiters = append(mb.waiters, w)
	w.state = wsMbar
	return true, nil
}

// clusterBarrier: barrier.cluster.arrive counts the warp in; wait blocks
// until every warp of the cluster that has not exited arrived as often.
func (w *warp) clusterBarrier(in *inst, mask uint32) (bool, error) {
	if mask != w.live {
		return false, w.fault(in, bits.TrailingZeros32(mask), ErrBarrier, 0, false,
			fmt.Sprintf("reached by lanes %s of warp %d only; lanes %s are elsewhere", laneList(mask), w.id, laneList(w.live&^mask)))
	}
	hw := w.hwState()
	cl := w.c.cl
	if in.op == opClusterArrive {
		hw.carrive++
		cl.advanceCluster()
		return false, nil
	}
	if hw.cwait >= hw.carrive {
		return false, w.fault(in, bits.TrailingZeros32(mask), ErrBarrier, 0, false, "barrier.cluster.wait without a barrier.cluster.arrive before it")
	}
	if cl.cphase > hw.cwait {
		hw.cwait++
		return false, nil
	}
	w.state = wsCluster
	return true, nil
}

// advanceCluster completes barrier.cluster phases every live warp has arrived at.
func (cl *clusterRun) advanceCluster() {
	low := -1
	for _, c := range cl.ctas {
		for _, w := range c.warps {
			if w.state == wsDone {
				continue
			}
			n := 0
			if w.hw != nil {
				n = w.hw.carrive
			}
			if low < 0 || n < low {
				low = n
			}
		}
	}
	if low > cl.cphase {
		cl.cphase = low
		for _, c := range cl.ctas {
			c.fullSync()
		}
	}
}

// wakeCluster releases warps blocked in barrier.cluster.wait whose phase completed.
func (cl *clusterRun) wakeCluster() bool {
	cl.advanceCluster()
	woke := false
	for _, c := range cl.ctas {
		for _, w := range c.warps {
			if w.state == wsCluster && cl.cphase > w.hw.cwait {
				w.hw.cwait++
				w.pc++
				w.state, woke = wsRun, true
			}
		}
	}
	return woke
}

// mapa maps a shared address of this CTA to the same offset in CTA rank.
func (w *warp) mapa(in *inst, mask uint32) error {
	D, A, R := w.lanes(in.d[0]), w.lanes(in.a[0]), w.lanes(in.a[1])
	n := len(w.c.cl.ctas)
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		r := R[l] & 0xffffffff
		if r >= uint64(n) {
			return w.fault(in, l, ErrTrap, 0, false, fmt.Sprintf("mapa to CTA rank %d in a cluster of %d", r, n))
		}
		a := A[l]
		win := uint64(0)
		if in.space == spGeneric {
			if a-sharedWindow >= windowSize {
				return w.fault(in, l, ErrMemory, a, true, "mapa of an address that is not in shared memory")
			}
			win, a = sharedWindow, a-sharedWindow
		}
		D[l] = (win + (a & (1<<clusterAddrShift - 1)) | (r+1)<<clusterAddrShift) & in.t.mask()
	}
	return nil
}

// elect picks the lowest lane of the member mask.
func (w *warp) elect(in *inst, mask uint32) error {
	member, err := w.memberMask(in, mask, in.a[0])
	if err != nil {
		return err
	}
	leader := bits.TrailingZeros32(member)
	if in.d[0] >= 0 {
		D := w.lanes(in.d[0])
		for m := mask; m != 0; m &= m - 1 {
			D[bits.TrailingZeros32(m)&31] = uint64(leader)
		}
	}
	p := in.d[1]
	w.p[p] = w.p[p]&^mask | 1<<leader&mask
	return nil
}

// stmatrix implements stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16,
// the inverse of ldmatrix: lane 8·i+r gives the address of row r of
// matrix i, lane t holds row t/4, elements 2·(t%4) and 2·(t%4)+1 (or,
// with .trans, those elements of column t/4).
func (w *warp) stmatrix(in *inst, mask uint32) error {
	if mask != ^uint32(0) {
		return w.fault(in, bits.TrailingZeros32(mask), ErrWarpSync, 0, false,
			fmt.Sprintf("stmatrix.sync.aligned needs all 32 lanes of the warp; lanes %s do not execute it", laneList(^mask)))
	}
	num := int(in.vec)
	var M [4][8][8]uint16
	trans := in.flags&flTrans != 0
	for i := 0; i < num; i++ {
		S := w.lanes(in.a[i])
		for t := 0; t < 32; t++ {
			lo, hi := uint16(S[t]), uint16(S[t]>>16)
			if trans {
				M[i][2*(t%4)][t/4], M[i][2*(t%4)+1][t/4] = lo, hi
			} else {
				M[i][t/4][2*(t%4)], M[i][t/4][2*(t%4)+1] = lo, hi
			}
		}
	}
	base := w.lanes(in.base)
	for i := 0; i < num; i++ {
		for r := 0; r < 8; r++ {
			l := 8*i + r
			addr := base[l] + uint64(in.off)
			if addr-sharedWindow < windowSize {
				addr -= sharedWindow
			}
			if addr%16 != 0 {
				return w.fault(in, l, ErrMisaligned, addr, true, "stmatrix row address is not 16-byte aligned")
			}
			b, _, saddr, err := w.resolve(in, l, spShared, addr, 16)
			if err != nil {
				return err
			}
			if w.c.shadow != nil {
				if err := w.raceCheck(in, l, saddr, 16, true, false, true); err != nil {
					return err
				}
			}
			if err := w.asyncAccess(in, l, saddr, 16, true); err != nil {
				return err
			}
			for c := 0; c < 8; c++ {
				storeN(b[2*c:], 2, uint64(M[i][r][c]))
			}
		}
	}
	return nil
}

// checkAsyncRegs: no instruction but wgmma may read or write registers
// of a wgmma.mma_async (accumulators, A fragments) before the
// wgmma.wait_group that covers it.
func (w *warp) checkAsyncRegs(in *inst, mask uint32) error {
	pend := w.hw.pend
	for _, s := range in.rchk {
		if pend[s] > 0 {
			return w.fault(in, bits.TrailingZeros32(mask), ErrAsync, 0, false,
				fmt.Sprintf("reads %s, a register of a wgmma.mma_async that no wgmma.wait_group has waited for", w.slotName(s)))
		}
	}
	for _, s := range in.dmark {
		if pend[s] > 0 {
			return w.fault(in, bits.TrailingZeros32(mask), ErrAsync, 0, false,
				fmt.Sprintf("writes %s, a register of a wgmma.mma_async that no wgmma.wait_group has waited for", w.slotName(s)))
		}
	}
	return nil
}

// exitAsync: a warp that exits leaves no wgmma in flight (the
// accumulators would never be waited for); its bulk stores complete.
func (w *warp) exitAsync(in *inst) error {
	hw := w.hw
	if len(hw.open) > 0 || len(hw.groups) > 0 {
		return w.fault(in, 0, ErrAsync, 0, false,
			fmt.Sprintf("warp %d exits with wgmma.mma_async in flight (%d committed groups not waited for, %d registers pending)",
				w.id, len(hw.groups), hw.npend))
	}
	w.bulkWait(0)
	return nil
}

// clusterSreg returns the value of a cluster special register.
func (c *ctaRun) clusterSreg(k sreg) uint64 {
	l := c.l
	cs := l.cluster
	switch k {
	case srClusterCtarank:
		return uint64(c.rank)
	case srClusterNctarank:
		return uint64(l.csize)
	case srClusterCtaidX, srClusterCtaidY, srClusterCtaidZ:
		i := int(k - srClusterCtaidX)
		return uint64(c.ctaid[i] % cs[i])
	case srClusterNctaidX, srClusterNctaidY, srClusterNctaidZ:
		return uint64(cs[k-srClusterNctaidX])
	case srClusteridX, srClusteridY, srClusteridZ:
		return uint64(c.clusterID[k-srClusteridX])
	case srNclusteridX, srNclusteridY, srNclusteridZ:
		i := int(k - srNclusteridX)
		return uint64(l.grid[i] / cs[i])
	case srIsExplicitCluster:
		if l.csize > 1 || len(l.k.reqncta) > 0 {
			return 1
		}
	}
	return 0
}
