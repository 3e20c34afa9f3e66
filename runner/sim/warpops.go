package sim

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// memberMask reads the membermask operand of a .sync instruction and
// checks it against the executing lanes: every lane it names must execute
// the instruction, and every executing lane must be named.
func (w *warp) memberMask(in *inst, mask uint32, slot int32) (uint32, error) {
	M := w.lanes(slot)
	first := bits.TrailingZeros32(mask) & 31
	member := uint32(M[first])
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		if uint32(M[l]) != member {
			return 0, w.fault(in, l, ErrWarpSync, 0, false,
				fmt.Sprintf("lanes disagree on the member mask (%#x in lane %d, %#x in lane %d)", member, first, uint32(M[l]), l))
		}
	}
	if missing := member &^ mask; missing != 0 {
		why := "inactive (divergent or guarded off)"
		if missing&^w.full != 0 {
			why = "beyond the CTA's threads"
		} else if missing&^w.live != 0 {
			why = "exited"
		}
		return 0, w.fault(in, first, ErrWarpSync, 0, false,
			fmt.Sprintf("member mask %#08x names lanes %s of warp %d, which are %s", member, laneList(missing), w.id, why))
	}
	if extra := mask &^ member; extra != 0 {
		return 0, w.fault(in, bits.TrailingZeros32(extra), ErrWarpSync, 0, false,
			fmt.Sprintf("lanes %s execute it but are not in the member mask %#08x", laneList(extra), member))
	}
	return member, nil
}

// shfl implements shfl.sync as the PTX ISA specifies it.
func (w *warp) shfl(in *inst, mask uint32) error {
	if _, err := w.memberMask(in, mask, in.a[3]); err != nil {
		return err
	}
	A, B, C := w.lanes(in.a[0]), w.lanes(in.a[1]), w.lanes(in.a[2])
	var res [32]uint64
	var pv uint32
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		lane := int(l)
		bval := int(B[l] & 31)
		cval := int(C[l] & 31)
		seg := int(C[l] >> 8 & 31)
		maxLane := lane&seg | cval&^seg
		minLane := lane & seg
		var j int
		var ok bool
		switch in.mode {
		case shUp:
			j = lane - bval
			ok = j >= maxLane
		case shDown:
			j = lane + bval
			ok = j <= maxLane
		case shBfly:
			j = lane ^ bval
			ok = j <= maxLane
		default:
			j = minLane | bval&^seg
			ok = j <= maxLane
		}
		if !ok {
			j = lane
		} else {
			pv |= 1 << l
		}
		if mask&(1<<uint(j)) == 0 {
			return w.fault(in, l, ErrWarpSync, 0, false,
				fmt.Sprintf("lane %d reads lane %d, which does not take part in the shuffle", lane, j))
		}
		res[l] = A[j&31]
	}
	D := w.lanes(in.d[0])
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		D[l] = res[l] & 0xffffffff
	}
	if in.flags&flPipe != 0 {
		w.p[in.d[1]] = w.p[in.d[1]]&^mask | pv&mask
	}
	return nil
}

func (w *warp) vote(in *inst, mask uint32) error {
	if _, err := w.memberMask(in, mask, in.a[1]); err != nil {
		return err
	}
	p := w.p[in.a[0]]
	if in.flags&flNegC != 0 {
		p = ^p
	}
	p &= mask
	if in.mode == vtBallot {
		D := w.lanes(in.d[0])
		for m := mask; m != 0; m &= m - 1 {
			D[bits.TrailingZeros32(m)&31] = uint64(p)
		}
		return nil
	}
	var r bool
	switch in.mode {
	case vtAll:
		r = p == mask
	case vtAny:
		r = p != 0
	case vtUni:
		r = p == 0 || p == mask
	}
	v := uint32(0)
	if r {
		v = mask
	}
	w.p[in.d[0]] = w.p[in.d[0]]&^mask | v
	return nil
}

// atomic implements atom and red. Lanes apply their operation in lane
// order; global-memory atomics of concurrently running CTAs are real
// atomic read-modify-writes, so their order across CTAs is not fixed
// (as on the GPU).
func (w *warp) atomic(in *inst, mask uint32) error {
	if in.vec > 1 {
		return w.redVec(in, mask)
	}
	size := in.t.bytes()
	base := w.lanes(in.base)
	V := w.lanes(in.a[0])
	var Cmp *[32]uint64
	if in.mode == atCas {
		Cmp = w.lanes(in.a[1])
	}
	var D *[32]uint64
	if in.op == opAtom {
		D = w.lanes(in.d[0])
	}
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		addr := base[l] + uint64(in.off)
		if addr%uint64(size) != 0 {
			return w.fault(in, l, ErrMisaligned, addr, true, fmt.Sprintf("%d-byte atomic is not %d-byte aligned", size, size))
		}
		b, sp, saddr, err := w.resolve(in, l, in.space, addr, size)
		if err != nil {
			return err
		}
		v := V[l]
		var cmp uint64
		if Cmp != nil {
			cmp, v = v, Cmp[l] // atom.cas d, [a], b, c: compare b, swap in c
		}
		f := func(old uint64) uint64 { return atomicOp(in, old, v, cmp, sp == spGlobal) }
		var old uint64
		if sp == spShared {
			if w.c.shadow != nil {
				if err := w.raceCheck(in, l, saddr, size, true, true, true); err != nil {
					return err
				}
			}
			old = loadN(b, size)
			storeN(b, size, f(old))
		} else {
			old = rmw(b, size, f)
		}
		if D != nil {
			D[l] = in.t.ival(old)
		}
	}
	return nil
}

// redVec implements red.global.add.{v2,v4}.f32 (the decoder admits no
// other vector atomic): the address must be aligned to the vector's size,
// and each element is an independent atomic add (rounded as scalar
// red.add.f32 is) to consecutive 4-byte words. Lanes go in lane order,
// each lane's elements in element order.
func (w *warp) redVec(in *inst, mask uint32) error {
	n := int(in.vec)
	size := in.t.bytes()
	total := size * n
	base := w.lanes(in.base)
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		addr := base[l] + uint64(in.off)
		if addr%uint64(total) != 0 {
			return w.fault(in, l, ErrMisaligned, addr, true,
				fmt.Sprintf("%d-byte vector atomic is not %d-byte aligned", total, total))
		}
		b, sp, _, err := w.resolve(in, l, in.space, addr, total)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			v := w.lanes(in.a[i])[l]
			rmw(b[i*size:], size, func(old uint64) uint64 { return atomicOp(in, old, v, 0, sp == spGlobal) })
		}
	}
	return nil
}

// rmw applies f atomically to the size bytes at b (global memory shared by
// concurrently running CTAs).
func rmw(b []byte, size int, f func(uint64) uint64) uint64 {
	switch size {
	case 4:
		p := (*uint32)(unsafe.Pointer(&b[0]))
		for {
			old := atomic.LoadUint32(p)
			if atomic.CompareAndSwapUint32(p, old, uint32(f(uint64(old)))) {
				return uint64(old)
			}
		}
	case 8:
		p := (*uint64)(unsafe.Pointer(&b[0]))
		for {
			old := atomic.LoadUint64(p)
			if atomic.CompareAndSwapUint64(p, old, f(old)) {
				return old
			}
		}
	}
	// 16-bit: a compare-and-swap of the aligned word around it.
	mis := uintptr(unsafe.Pointer(&b[0])) & 3
	word := (*uint32)(unsafe.Add(unsafe.Pointer(&b[0]), -int(mis)))
	shift := mis * 8
	for {
		ow := atomic.LoadUint32(word)
		old := uint64(ow>>shift) & 0xffff
		nw := ow&^(0xffff<<shift) | uint32(f(old)&0xffff)<<shift
		if atomic.CompareAndSwapUint32(word, ow, nw) {
			return old
		}
	}
}

func atomicOp(in *inst, old, v, cmp uint64, global bool) uint64 {
	t := in.t
	mk := t.mask()
	switch in.mode {
	case atAdd:
		switch {
		case t == tyF32:
			// atom.add.f32 rounds to nearest even and flushes subnormal
			// inputs and results to zero (PTX ISA).
			return b32(ftz32(ftz32(f32(old)) + ftz32(f32(v))))
		case t == tyF64:
			return b64(f64(old) + f64(v))
		case t.isHalf():
			return halfBinary(opAdd, t, old, v)
		case t.isHalf2():
			return halfBinary(opAdd, t, old>>16&0xffff, v>>16&0xffff)<<16 | halfBinary(opAdd, t, old&0xffff, v&0xffff)
		}
		return (old + v) & mk
	case atMin, atMax:
		if t.isFloat() {
			x, y := floatVal(t, old), floatVal(t, v)
			r := minF(x, y)
			if in.mode == atMax {
				r = maxF(x, y)
			}
			return fmtOf(t).round(r, rndRN)
		}
		less := false
		if t.signed() {
			less = sext(v, t.bits()) < sext(old, t.bits())
		} else {
			less = v&mk < old&mk
		}
		if less == (in.mode == atMin) {
			return v & mk
		}
		return old & mk
	case atInc:
		if old&mk >= v&mk {
			return 0
		}
		return (old + 1) & mk
	case atDec:
		if old&mk == 0 || old&mk > v&mk {
			return v & mk
		}
		return (old - 1) & mk
	case atAnd:
		return old & v & mk
	case atOr:
		return (old | v) & mk
	case atXor:
		return (old ^ v) & mk
	case atExch:
		return v & mk
	case atCas:
		if old&mk == cmp&mk {
			return v & mk
		}
		return old & mk
	}
	return old
}

// mma implements mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: D = A·B + C
// with A 16×16 (row major), B 16×8 (column major), C and D 16×8 in f32,
// distributed over the lanes as the PTX ISA's fragment layouts say
// (groupID = lane>>2, threadID_in_group = lane%4):
//
//	A: a0..a7 in four .b32 registers (two halves each, low half first):
//	   row = groupID (+8 for a2,a3,a6,a7), col = 2·tig + (i&1) (+8 for i ≥ 4)
//	B: b0..b3 in two registers: row = 2·tig + (i&1) (+8 for i ≥ 2), col = groupID
//	C, D: c0..c3: row = groupID (+8 for c2,c3), col = 2·tig + (i&1)
//
// Products are exact in float64; the 16 products and C are summed in
// float64 and rounded once to f32. The GPU's tensor cores sum in an
// unspecified order with at least f32 precision, so results may differ
// from the GPU's in the last bits (see the package documentation).
func (w *warp) mma(in *inst, mask uint32) error {
	if mask != ^uint32(0) {
		return w.fault(in, bits.TrailingZeros32(mask), ErrWarpSync, 0, false,
			fmt.Sprintf("mma.sync.aligned needs all 32 lanes of the warp; lanes %s do not execute it", laneList(^mask)))
	}
	ht := tyF16
	if in.flags&flBF16 != 0 {
		ht = tyBF16
	}
	var A [16][16]float64
	var B [16][8]float64
	var C [16][8]float64
	for l := 0; l < 32; l++ {
		g, tg := l>>2, l&3
		for r := 0; r < 4; r++ {
			v := w.lanes(in.x[r])[l]
			for h := 0; h < 2; h++ {
				i := 2*r + h
				row := g
				if i == 2 || i == 3 || i == 6 || i == 7 {
					row += 8
				}
				col := 2*tg + (i & 1)
				if i >= 4 {
					col += 8
				}
				A[row][col] = halfToF64(v>>(16*uint(h))&0xffff, ht)
			}
		}
		for r := 0; r < 2; r++ {
			v := w.lanes(in.x[4+r])[l]
			for h := 0; h < 2; h++ {
				i := 2*r + h
				row := 2*tg + (i & 1)
				if i >= 2 {
					row += 8
				}
				B[row][g] = halfToF64(v>>(16*uint(h))&0xffff, ht)
			}
		}
		for i := 0; i < 4; i++ {
			row, col := g, 2*tg+(i&1)
			if i >= 2 {
				row += 8
			}
			C[row][col] = float64(f32(w.lanes(in.x[6+i])[l]))
		}
	}
	var Dm [16][8]uint64
	for i := 0; i < 16; i++ {
		for j := 0; j < 8; j++ {
			s := 0.0
			for k := 0; k < 16; k++ {
				s += A[i][k] * B[k][j]
			}
			Dm[i][j] = b32(float32(s + C[i][j]))
		}
	}
	for l := 0; l < 32; l++ {
		g, tg := l>>2, l&3
		for i := 0; i < 4; i++ {
			row, col := g, 2*tg+(i&1)
			if i >= 2 {
				row += 8
			}
			w.lanes(in.d[i])[l] = Dm[row][col]
		}
	}
	return nil
}

// ldmatrix implements ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16:
// lane 8·i+r gives the address of row r of matrix i (16 bytes, 16-byte
// aligned); lane t receives, for each matrix, row t/4 elements 2·(t%4) and
// 2·(t%4)+1 (low half first), or with .trans the elements at rows 2·(t%4)
// and 2·(t%4)+1 of column t/4.
func (w *warp) ldmatrix(in *inst, mask uint32) error {
	if mask != ^uint32(0) {
		return w.fault(in, bits.TrailingZeros32(mask), ErrWarpSync, 0, false,
			fmt.Sprintf("ldmatrix.sync.aligned needs all 32 lanes of the warp; lanes %s do not execute it", laneList(^mask)))
	}
	num := int(in.vec)
	base := w.lanes(in.base)
	var M [4][8][8]uint16
	for i := 0; i < num; i++ {
		for r := 0; r < 8; r++ {
			l := 8*i + r
			addr := base[l] + uint64(in.off)
			if addr >= sharedWindow && addr-sharedWindow < windowSize {
				addr -= sharedWindow
			}
			if addr%16 != 0 {
				return w.fault(in, l, ErrMisaligned, addr, true, "ldmatrix row address is not 16-byte aligned")
			}
			b, _, saddr, err := w.resolve(in, l, spShared, addr, 16)
			if err != nil {
				return err
			}
			if w.c.shadow != nil {
				if err := w.raceCheck(in, l, saddr, 16, false, false, true); err != nil {
					return err
				}
			}
			if w.c.hs != nil {
				if err := w.asyncAccess(in, l, saddr, 16, false); err != nil {
					return err
				}
			}
			for c := 0; c < 8; c++ {
				M[i][r][c] = uint16(loadN(b[2*c:], 2))
			}
		}
	}
	trans := in.flags&flTrans != 0
	for i := 0; i < num; i++ {
		D := w.lanes(in.d[i])
		for t := 0; t < 32; t++ {
			var lo, hi uint16
			if trans {
				lo, hi = M[i][2*(t%4)][t/4], M[i][2*(t%4)+1][t/4]
			} else {
				lo, hi = M[i][t/4][2*(t%4)], M[i][t/4][2*(t%4)+1]
			}
			D[t] = uint64(hi)<<16 | uint64(lo)
		}
	}
	return nil
}

// cp.async: each thread queues its copies; commit_group closes a group;
// wait_group N completes all but the N most recent groups. A copy is
// performed when it completes (at the wait, or when the thread exits), so
// a thread that reads the destination before waiting sees the old bytes,
// and the race detector sees the write at the wait.

type cpOp struct {
	in       *inst
	dst, src uint64
	n, srcN  int
}

type cpLane struct {
	ops    []cpOp
	groups []int // sizes of the committed groups, oldest first
}

func (w *warp) cpAsync(in *inst, mask uint32) error {
	if w.cp == nil {
		w.cp = new([32]cpLane)
	}
	Dst, Src := w.lanes(in.a[0]), w.lanes(in.a[1])
	var SrcN *[32]uint64
	if in.a[2] >= 0 {
		SrcN = w.lanes(in.a[2])
	}
	n := int(in.vec)
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		dst := Dst[l] + uint64(in.off)
		if dst >= sharedWindow && dst-sharedWindow < windowSize {
			dst -= sharedWindow
		}
		src := Src[l] + uint64(in.imm)
		srcN := n
		if SrcN != nil {
			srcN = int(uint32(SrcN[l]))
			if srcN > n {
				return w.fault(in, l, ErrMemory, src, true, fmt.Sprintf("cp.async source size %d exceeds the copy size %d", srcN, n))
			}
		}
		if dst%uint64(n) != 0 {
			return w.fault(in, l, ErrMisaligned, dst, true, fmt.Sprintf("cp.async shared destination is not %d-byte aligned", n))
		}
		if src%uint64(n) != 0 {
			return w.fault(in, l, ErrMisaligned, src, true, fmt.Sprintf("cp.async global source is not %d-byte aligned", n))
		}
		if _, _, _, err := w.resolve(in, l, spShared, dst, n); err != nil {
			return err
		}
		if srcN > 0 {
			if _, _, _, err := w.resolve(in, l, spGlobal, src, srcN); err != nil {
				return err
			}
		}
		if w.c.shadow != nil {
			// The copy may land any time from now: it must not conflict with
			// accesses of other threads in this barrier interval.
			if err := w.raceCheck(in, l, dst, n, true, false, false); err != nil {
				return err
			}
		}
		w.cp[l].ops = append(w.cp[l].ops, cpOp{in: in, dst: dst, src: src, n: n, srcN: srcN})
	}
	return nil
}

func (w *warp) cpCommit(mask uint32) {
	if w.cp == nil {
		w.cp = new([32]cpLane)
	}
	for m := mask; m != 0; m &= m - 1 {
		q := &w.cp[bits.TrailingZeros32(m)&31]
		committed := 0
		for _, g := range q.groups {
			committed += g
		}
		q.groups = append(q.groups, len(q.ops)-committed)
	}
}

func (w *warp) cpWait(in *inst, mask uint32, keep int) error {
	if w.cp == nil {
		return nil
	}
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		q := &w.cp[l]
		for len(q.groups) > keep {
			n := q.groups[0]
			for _, op := range q.ops[:n] {
				if err := w.cpDo(l, op); err != nil {
					return err
				}
			}
			q.ops = append(q.ops[:0], q.ops[n:]...)
			q.groups = append(q.groups[:0], q.groups[1:]...)
		}
	}
	return nil
}

// cpFinish completes every copy of lanes that exit.
func (w *warp) cpFinish(in *inst, mask uint32) error {
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		q := &w.cp[l]
		for _, op := range q.ops {
			if err := w.cpDo(l, op); err != nil {
				return err
			}
		}
		q.ops, q.groups = q.ops[:0], q.groups[:0]
	}
	return nil
}

func (w *warp) cpDo(l int, op cpOp) error {
	var buf [16]byte
	if op.srcN > 0 {
		b, _, _, err := w.resolve(op.in, l, spGlobal, op.src, op.srcN)
		if err != nil {
			return err
		}
		copy(buf[:], b)
	}
	d, _, _, err := w.resolve(op.in, l, spShared, op.dst, op.n)
	if err != nil {
		return err
	}
	if w.c.shadow != nil {
		if err := w.raceCheck(op.in, l, op.dst, op.n, true, false, true); err != nil {
			return err
		}
	}
	copy(d, buf[:op.n])
	return nil
}
