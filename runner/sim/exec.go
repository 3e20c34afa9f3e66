package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

// lanes returns slot s as an array of 32 lanes.
func (w *warp) lanes(s int32) *[32]uint64 {
	return (*[32]uint64)(w.r[int(s)<<5 : int(s)<<5+32])
}

// exec runs the warp until it waits at a barrier, finishes, or fails.
func (w *warp) exec() error {
	c := w.c
	code := c.l.k.code
	maxSteps := c.l.maxSteps
	for {
		if w.pc == w.next {
			w.setPCs(w.active, w.pc)
			w.reselect()
		}
		in := &code[w.pc]
		act := w.active
		mask := act
		if in.guard >= 0 {
			if w.pw[in.guard]&act != act {
				return w.uninit(in, act&^w.pw[in.guard], "guard predicate "+regName(c.l.k.pnames, int(in.guard)))
			}
			g := w.p[in.guard]
			if in.gneg {
				g = ^g
			}
			mask &= g
		}
		for _, s := range in.rchk {
			if w.rw[s]&mask != mask {
				return w.uninit(in, mask&^w.rw[s], w.slotName(s))
			}
		}
		for _, p := range in.pchk {
			if w.pw[p]&mask != mask {
				return w.uninit(in, mask&^w.pw[p], "predicate "+regName(c.l.k.pnames, int(p)))
			}
		}
		if w.hw != nil && w.hw.npend != 0 && in.op != opWgmma {
			if err := w.checkAsyncRegs(in, mask); err != nil {
				return err
			}
		}
		c.steps++
		if c.steps > maxSteps {
			return c.execError(in, w, bits.TrailingZeros32(act), ErrTimeout, 0, false,
				fmt.Sprintf("the CTA executed more than %d warp instructions", maxSteps))
		}
		c.insts += uint64(bits.OnesCount32(mask))

		yield := false
		switch in.op {
		case opNop:
		case opYield:
			yield = mask != 0
		case opMov:
			if in.t == tyPred {
				v := w.p[in.a[0]]
				if in.flags&flNegC != 0 {
					v = ^v
				}
				w.p[in.d[0]] = w.p[in.d[0]]&^mask | v&mask
				break
			}
			D, A := w.lanes(in.d[0]), w.lanes(in.a[0])
			if mask == ^uint32(0) {
				*D = *A
			} else {
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = A[l]
				}
			}
		case opAdd, opSub, opMulLo, opMin, opMax, opAnd, opOr, opXor, opShl, opShr, opDiv, opRem, opMulHi,
			opMulWide, opCopysign:
			if in.t == tyPred {
				a, b := w.p[in.a[0]], w.p[in.a[1]]
				var v uint32
				switch in.op {
				case opAnd:
					v = a & b
				case opOr:
					v = a | b
				default:
					v = a ^ b
				}
				w.p[in.d[0]] = w.p[in.d[0]]&^mask | v&mask
				break
			}
			D, A, B := w.lanes(in.d[0]), w.lanes(in.a[0]), w.lanes(in.a[1])
			switch {
			case in.op == opAdd && in.t == tyF32 && in.flags == 0 && in.mode <= rndRN:
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = b32(f32(A[l]) + f32(B[l]))
				}
			case in.op == opMulLo && in.t == tyF32 && in.flags == 0 && in.mode <= rndRN:
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = b32(f32(A[l]) * f32(B[l]))
				}
			case in.op == opSub && in.t == tyF32 && in.flags == 0 && in.mode <= rndRN:
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = b32(f32(A[l]) - f32(B[l]))
				}
			case (in.op == opAdd || in.op == opMulLo) && (in.t == tyU32 || in.t == tyS32) && in.flags == 0:
				if in.op == opAdd {
					for m := mask; m != 0; m &= m - 1 {
						l := bits.TrailingZeros32(m) & 31
						D[l] = uint64(uint32(A[l]) + uint32(B[l]))
					}
				} else {
					for m := mask; m != 0; m &= m - 1 {
						l := bits.TrailingZeros32(m) & 31
						D[l] = uint64(uint32(A[l]) * uint32(B[l]))
					}
				}
			case in.op == opAdd && (in.t == tyU64 || in.t == tyS64):
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = A[l] + B[l]
				}
			case in.op == opMulWide && in.t == tyU32:
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = uint64(uint32(A[l])) * uint64(uint32(B[l]))
				}
			case in.op == opAnd && in.t.bits() == 32:
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = (A[l] & B[l]) & 0xffffffff
				}
			default:
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					v, err := binary2(in, A[l], B[l])
					if err != nil {
						return w.fault(in, l, ErrTrap, 0, false, err.Error())
					}
					D[l] = v
				}
			}
		case opMad, opFma, opMadHi, opMadWide:
			D, A, B, C := w.lanes(in.d[0]), w.lanes(in.a[0]), w.lanes(in.a[1]), w.lanes(in.a[2])
			switch {
			case in.op == opFma && in.t == tyF32 && in.flags == 0 && in.mode <= rndRN:
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = b32(fmaF32(f32(A[l]), f32(B[l]), f32(C[l])))
				}
			case in.op == opMad && (in.t == tyU32 || in.t == tyS32):
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = uint64(uint32(A[l])*uint32(B[l]) + uint32(C[l]))
				}
			default:
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = ternary(in, A[l], B[l], C[l])
				}
			}
		case opNeg, opAbs, opNot, opCnot, opRcp, opSqrt, opEx2, opLg2, opRcpApprox, opRsqrt, opSqrtApprox,
			opTanh, opSin, opCos, opPopc, opClz, opBrev, opBfind:
			if in.t == tyPred {
				w.p[in.d[0]] = w.p[in.d[0]]&^mask | ^w.p[in.a[0]]&mask
				break
			}
			D, A := w.lanes(in.d[0]), w.lanes(in.a[0])
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				D[l] = unary(in, A[l])
			}
		case opBfe, opPrmt:
			D, A, B, C := w.lanes(in.d[0]), w.lanes(in.a[0]), w.lanes(in.a[1]), w.lanes(in.a[2])
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				D[l] = bitsOp(in, A[l], B[l], C[l])
			}
		case opSetp:
			A, B := w.lanes(in.a[0]), w.lanes(in.a[1])
			var v uint32
			if in.t == tyF32 && in.flags == 0 {
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					if cmpFloat(in.mode, float64(f32(A[l])), float64(f32(B[l]))) {
						v |= 1 << l
					}
				}
			} else {
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					if compare(in, A[l], B[l]) {
						v |= 1 << l
					}
				}
			}
			nv := ^v
			if in.flags&flBool != 0 {
				c := w.p[in.a[2]]
				if in.flags&flNegC != 0 {
					c = ^c
				}
				v, nv = boolOp(in.mode2, v, c), boolOp(in.mode2, nv, c)
			}
			w.p[in.d[0]] = w.p[in.d[0]]&^mask | v&mask
			if in.nd == 2 {
				w.p[in.d[1]] = w.p[in.d[1]]&^mask | nv&mask
			}
		case opSelp:
			D, A, B := w.lanes(in.d[0]), w.lanes(in.a[0]), w.lanes(in.a[1])
			p := w.p[in.a[2]]
			if in.flags&flNegC != 0 {
				p = ^p
			}
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				if p&(1<<l) != 0 {
					D[l] = A[l]
				} else {
					D[l] = B[l]
				}
			}
		case opCvt:
			D, A := w.lanes(in.d[0]), w.lanes(in.a[0])
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				D[l] = cvt(in, A[l])
			}
		case opCvtPack:
			D, A, B := w.lanes(in.d[0]), w.lanes(in.a[0]), w.lanes(in.a[1])
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				hi, lo := f32(A[l]), f32(B[l])
				if in.t == tyBF16x2 {
					D[l] = uint64(f32ToBF16(hi))<<16 | uint64(f32ToBF16(lo))
				} else {
					D[l] = uint64(f32ToF16(hi))<<16 | uint64(f32ToF16(lo))
				}
			}
		case opMovPack:
			D := w.lanes(in.d[0])
			n := int(in.na)
			wd := uint(in.t.bits() / n)
			pm := uint64(1)<<wd - 1
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				var v uint64
				for i := 0; i < n; i++ {
					v |= (w.lanes(in.a[i])[l] & pm) << (uint(i) * wd)
				}
				D[l] = v
			}
		case opMovUnpack:
			A := w.lanes(in.a[0])
			n := int(in.nd)
			wd := uint(in.t.bits() / n)
			pm := uint64(1)<<wd - 1
			var src [32]uint64
			src = *A
			for i := 0; i < n; i++ {
				D := w.lanes(in.d[i])
				for m := mask; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					D[l] = src[l] >> (uint(i) * wd) & pm
				}
			}
		case opLdParam:
			D := w.lanes(in.d[0])
			n := in.t.bytes()
			ps := c.l.params
			if in.off < 0 || int(in.off)+n > len(ps) {
				return w.fault(in, bits.TrailingZeros32(mask), ErrMemory, uint64(in.off), true, "parameter read out of range")
			}
			v := in.t.ival(loadN(ps[in.off:], n))
			for m := mask; m != 0; m &= m - 1 {
				D[bits.TrailingZeros32(m)&31] = v
			}
		case opLd, opSt:
			if err := w.memOp(in, mask); err != nil {
				return err
			}
		case opCvta:
			D, A := w.lanes(in.d[0]), w.lanes(in.a[0])
			var delta uint64
			switch in.space {
			case spShared:
				delta = sharedWindow
			case spLocal:
				delta = localWindow
			}
			if in.mode == 1 {
				delta = -delta
			}
			tm := in.t.mask()
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				D[l] = (A[l] + delta) & tm
			}
		case opBra:
			if mask == act {
				w.pc = in.target
				if w.next != noPC && in.target > w.next {
					w.setPCs(act, in.target)
					w.reselect()
				}
				continue
			}
			if mask == 0 {
				w.pc++
				continue
			}
			w.setPCs(mask, in.target)
			w.setPCs(act&^mask, w.pc+1)
			w.reselect()
			continue
		case opRet:
			if mask == 0 {
				break
			}
			if w.cp != nil {
				if err := w.cpFinish(in, mask); err != nil {
					return err
				}
			}
			w.live &^= mask
			w.active &^= mask
			if w.active == 0 {
				if w.live == 0 {
					if w.hw != nil {
						if err := w.exitAsync(in); err != nil {
							return err
						}
					}
					w.state = wsDone
					c.done |= 1 << w.id
					return nil
				}
				w.reselect()
				continue
			}
		case opTrap:
			if mask != 0 {
				return w.fault(in, bits.TrailingZeros32(mask), ErrTrap, 0, false, "trap executed")
			}
		case opBrkpt:
			if mask != 0 {
				return w.fault(in, bits.TrailingZeros32(mask), ErrIllegal, 0, false, "brkpt executed with no debugger attached")
			}
		case opBar:
			if mask == 0 {
				break
			}
			if err := w.barrier(in, mask); err != nil {
				return err
			}
			if in.mode&barArrive == 0 {
				if w.state == wsBarrier {
					return nil
				}
				continue // the phase completed on this arrival: the pc moved on
			}
		case opBarWarp:
			member := uint32(w.lanes(in.a[0])[bits.TrailingZeros32(mask)&31])
			if member&^mask != 0 {
				return w.fault(in, bits.TrailingZeros32(mask), ErrWarpSync, 0, false,
					fmt.Sprintf("bar.warp.sync names lanes %s, which are not here", laneList(member&^mask)))
			}
		case opShfl:
			if err := w.shfl(in, mask); err != nil {
				return err
			}
		case opVote:
			if err := w.vote(in, mask); err != nil {
				return err
			}
		case opRedux:
			if _, err := w.memberMask(in, mask, in.a[1]); err != nil {
				return err
			}
			A, D := w.lanes(in.a[0]), w.lanes(in.d[0])
			var r uint64
			first := true
			for m := mask; m != 0; m &= m - 1 {
				v := A[bits.TrailingZeros32(m)&31] & 0xffffffff
				if first {
					r, first = v, false
					continue
				}
				switch in.mode {
				case rdAdd:
					r = (r + v) & 0xffffffff
				case rdMin, rdMax:
					less := v < r
					if in.t == tyS32 {
						less = int32(v) < int32(r)
					}
					if less == (in.mode == rdMin) {
						r = v
					}
				case rdAnd:
					r &= v
				case rdOr:
					r |= v
				case rdXor:
					r ^= v
				}
			}
			for m := mask; m != 0; m &= m - 1 {
				D[bits.TrailingZeros32(m)&31] = r
			}
		case opTestp:
			A := w.lanes(in.a[0])
			var v uint32
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				if testp(in, A[l]) {
					v |= 1 << l
				}
			}
			w.p[in.d[0]] = w.p[in.d[0]]&^mask | v
		case opActivemask:
			D := w.lanes(in.d[0])
			for m := mask; m != 0; m &= m - 1 {
				D[bits.TrailingZeros32(m)&31] = uint64(act)
			}
		case opAtom, opRed:
			if err := w.atomic(in, mask); err != nil {
				return err
			}
			yield = in.mode2 == atomRelease && mask != 0
		case opMma:
			if err := w.mma(in, mask); err != nil {
				return err
			}
		case opLdmatrix:
			if err := w.ldmatrix(in, mask); err != nil {
				return err
			}
		case opCpAsync:
			if err := w.cpAsync(in, mask); err != nil {
				return err
			}
		case opCpCommit:
			w.cpCommit(mask)
		case opCpWait:
			if in.flags&flSat != 0 {
				w.cpCommit(mask)
			}
			if err := w.cpWait(in, mask, int(in.imm)); err != nil {
				return err
			}
		case opWgmma, opWgFence, opWgCommit, opWgWait, opMbarInit, opMbarArrive, opMbarExpectTx, opMbarCompleteTx,
			opMbarWait, opTmaLoad, opTmaStore, opBulkS2C, opBulkG2S, opBulkS2G, opBulkCommit, opBulkWait, opFenceProxy, opClusterArrive, opClusterWait,
			opMapa, opSetmaxnreg, opElect, opStmatrix:
			stop, err := w.hopperOp(in, mask)
			if err != nil {
				return err
			}
			if stop {
				return nil
			}
		default:
			return w.fault(in, 0, ErrParse, 0, false, "opcode not implemented")
		}
		for _, s := range in.dmark {
			w.rw[s] |= mask
		}
		for _, p := range in.pmark {
			w.pw[p] |= mask
		}
		w.pc++
		if yield {
			w.state = wsYield
			return nil
		}
	}
}

func (w *warp) fault(in *inst, lane int, sentinel error, addr uint64, hasAddr bool, detail string) error {
	return w.c.execError(in, w, lane&31, sentinel, addr, hasAddr, detail)
}

func (w *warp) uninit(in *inst, lanes uint32, what string) error {
	return w.fault(in, bits.TrailingZeros32(lanes), ErrUninitialized, 0, false,
		fmt.Sprintf("%s read by lanes %s of warp %d, which never wrote it", what, laneList(lanes), w.id))
}

// slotName names a register slot for messages.
func (w *warp) slotName(s int32) string {
	if int(s) < w.c.l.k.nregs {
		return "register " + regName(w.c.l.k.names, int(s))
	}
	return "a constant"
}

func loadN(b []byte, n int) uint64 {
	switch n {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func storeN(b []byte, n int, v uint64) {
	switch n {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// resolve maps an address in space sp (generic resolved by window) to the
// bytes [addr, addr+n) and the space they are in.
func (w *warp) resolve(in *inst, lane int, sp uint8, addr uint64, n int) ([]byte, uint8, uint64, error) {
	c := w.c
	if sp == spGeneric {
		switch {
		case addr-sharedWindow < windowSize:
			sp, addr = spShared, addr-sharedWindow
		case addr-localWindow < windowSize:
			sp, addr = spLocal, addr-localWindow
		default:
			sp = spGlobal
		}
	}
	switch sp {
	case spGlobal:
		a := c.last
		if a == nil || addr < a.base || addr-a.base+uint64(n) > a.size {
			a = findAlloc(c.l.allocs, addr, uint64(n))
			if a == nil {
				return nil, sp, addr, w.fault(in, lane, ErrMemory, addr, true, c.l.mem.describe(c.l.allocs, addr, uint64(n)))
			}
			c.last = a
		}
		off := addr - a.base
		return a.data[off : off+uint64(n)], sp, addr, nil
	case spShared:
		if addr > uint64(len(c.smem)) || uint64(len(c.smem))-addr < uint64(n) {
			if addr>>clusterAddrShift != 0 && c.cl != nil && len(c.cl.ctas) > 1 {
				// A shared::cluster address of another CTA (mapa): its
				// accesses are not race- or proxy-checked.
				rc, off, err := w.sharedAt(&inst{space: spShared, line: in.line, text: in.text}, lane, addr, n, 1)
				if err != nil {
					return nil, sp, addr, err
				}
				return rc.smem[off : off+uint32(n)], spCluster, addr, nil
			}
			return nil, sp, addr, w.fault(in, lane, ErrMemory, addr, true,
				fmt.Sprintf("%d-byte shared access outside the CTA's %d bytes of shared memory", n, len(c.smem)))
		}
		return c.smem[addr : addr+uint64(n)], sp, addr, nil
	case spLocal:
		lb := uint64(c.l.k.localBytes)
		if addr > lb || lb-addr < uint64(n) {
			return nil, sp, addr, w.fault(in, lane, ErrMemory, addr, true,
				fmt.Sprintf("%d-byte local access outside the thread's %d bytes of local memory", n, lb))
		}
		base := uint64(w.id*32+lane) * lb
		return c.local[base+addr : base+addr+uint64(n)], sp, addr, nil
	}
	return nil, sp, addr, w.fault(in, lane, ErrMemory, addr, true, "address in an unsupported space")
}

func (w *warp) memOp(in *inst, mask uint32) error {
	size := in.t.bytes()
	total := size * int(in.vec)
	base := w.lanes(in.base)
	load := in.op == opLd
	signed := in.t.signed()
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		addr := base[l] + uint64(in.off)
		if addr%uint64(total) != 0 {
			return w.fault(in, l, ErrMisaligned, addr, true,
				fmt.Sprintf("%d-byte access is not %d-byte aligned", total, total))
		}
		b, sp, saddr, err := w.resolve(in, l, in.space, addr, total)
		if err != nil {
			return err
		}
		if sp == spShared && w.c.shadow != nil {
			if err := w.raceCheck(in, l, saddr, total, !load, false, true); err != nil {
				return err
			}
		}
		if sp == spShared && w.c.hs != nil {
			if err := w.asyncAccess(in, l, saddr, total, !load); err != nil {
				return err
			}
		}
		if load {
			for i := 0; i < int(in.vec); i++ {
				v := loadN(b[i*size:], size)
				if signed {
					v = uint64(sext(v, size*8))
				}
				w.lanes(in.d[i])[l] = v
			}
		} else {
			for i := 0; i < int(in.vec); i++ {
				storeN(b[i*size:], size, w.lanes(in.a[i])[l])
			}
		}
	}
	return nil
}

// binary2 evaluates the two-operand instructions' slow paths.
func binary2(in *inst, a, b uint64) (uint64, error) {
	t := in.t
	switch {
	case t == tyF32:
		x, y := f32(a), f32(b)
		if in.flags&flFtz != 0 {
			x, y = ftz32(x), ftz32(y)
		}
		var r float32
		switch in.op {
		case opAdd, opSub, opMulLo, opDiv:
			if in.mode > rndRN {
				return directed(in.op, tyF32, in.mode, float64(x), float64(y), 0), nil
			}
			switch in.op {
			case opAdd:
				r = x + y
			case opSub:
				r = x - y
			case opMulLo:
				r = x * y
			case opDiv:
				r = x / y
			}
		case opMin, opMax:
			if in.mode == mmNaN && (x != x || y != y) {
				return nanF32, nil
			}
			if in.op == opMin {
				r = float32(minF(float64(x), float64(y)))
			} else {
				r = float32(maxF(float64(x), float64(y)))
			}
		case opCopysign:
			r = float32(math.Copysign(float64(y), float64(x)))
		default:
			return 0, fmt.Errorf("%v on f32", in.op)
		}
		if in.flags&flFtz != 0 {
			r = ftz32(r)
		}
		if in.flags&flSat != 0 {
			r = sat(r)
		}
		return b32(r), nil
	case t == tyF64:
		x, y := f64(a), f64(b)
		switch in.op {
		case opAdd, opSub, opMulLo, opDiv:
			if in.mode > rndRN {
				return directed(in.op, tyF64, in.mode, x, y, 0), nil
			}
			switch in.op {
			case opAdd:
				return b64(x + y), nil
			case opSub:
				return b64(x - y), nil
			case opMulLo:
				return b64(x * y), nil
			}
			return b64(x / y), nil
		case opMin, opMax:
			if in.mode == mmNaN && (x != x || y != y) {
				return nanF64, nil
			}
			if in.op == opMin {
				return b64(minF(x, y)), nil
			}
			return b64(maxF(x, y)), nil
		case opCopysign:
			return b64(math.Copysign(y, x)), nil
		}
		return 0, fmt.Errorf("%v on f64", in.op)
	case t.isHalf():
		return halfOp(in, a, b), nil
	case t.isHalf2():
		lo := halfOp(in, a&0xffff, b&0xffff)
		hi := halfOp(in, a>>16&0xffff, b>>16&0xffff)
		return hi<<16 | lo, nil
	}
	// Integers and bits.
	mk := t.mask()
	nb := t.bits()
	switch in.op {
	case opAdd:
		if in.flags&flSat != 0 {
			return satS32(sext(a, 32) + sext(b, 32)), nil
		}
		return (a + b) & mk, nil
	case opSub:
		if in.flags&flSat != 0 {
			return satS32(sext(a, 32) - sext(b, 32)), nil
		}
		return (a - b) & mk, nil
	case opMulLo:
		return (a * b) & mk, nil
	case opMulHi:
		return mulHi(t, a, b), nil
	case opMulWide:
		x, y := t.ival(a), t.ival(b)
		return (x * y) & widen(t).mask(), nil
	case opAnd:
		return a & b & mk, nil
	case opOr:
		return (a | b) & mk, nil
	case opXor:
		return (a ^ b) & mk, nil
	case opShl:
		n := uint32(b)
		if n >= uint32(nb) {
			return 0, nil
		}
		return (a << n) & mk, nil
	case opShr:
		n := uint32(b)
		if t.signed() {
			if n >= uint32(nb) {
				n = uint32(nb) - 1
			}
			return uint64(sext(a, nb)>>n) & mk, nil
		}
		if n >= uint32(nb) {
			return 0, nil
		}
		return (a & mk) >> n, nil
	case opMin, opMax:
		less := false
		if t.signed() {
			less = sext(a, nb) < sext(b, nb)
		} else {
			less = a&mk < b&mk
		}
		if less == (in.op == opMin) {
			return a & mk, nil
		}
		return b & mk, nil
	case opDiv, opRem:
		if b&mk == 0 {
			// PTX leaves division by zero undefined; the GPU returns all ones
			// for the quotient.
			if in.op == opDiv {
				return mk, nil
			}
			return a & mk, nil
		}
		if t.signed() {
			x, y := sext(a, nb), sext(b, nb)
			if y == -1 {
				if in.op == opDiv {
					return uint64(-x) & mk, nil
				}
				return 0, nil
			}
			if in.op == opDiv {
				return uint64(x/y) & mk, nil
			}
			return uint64(x%y) & mk, nil
		}
		if in.op == opDiv {
			return (a & mk) / (b & mk), nil
		}
		return (a & mk) % (b & mk), nil
	}
	return 0, fmt.Errorf("unsupported %v.%v", in.op, t)
}

func sat(r float32) float32 {
	switch {
	case r != r || r <= 0:
		return float32(math.Copysign(0, float64(r))) * 0
	case r > 1:
		return 1
	}
	return r
}

func satS32(v int64) uint64 {
	if v > math.MaxInt32 {
		v = math.MaxInt32
	}
	if v < math.MinInt32 {
		v = math.MinInt32
	}
	return uint64(uint32(int32(v)))
}

func mulHi(t ptype, a, b uint64) uint64 {
	nb := t.bits()
	if nb < 64 {
		p := t.ival(a) * t.ival(b)
		return (p >> uint(nb)) & t.mask()
	}
	hi, _ := bits.Mul64(a, b)
	if t.signed() {
		if int64(a) < 0 {
			hi -= b
		}
		if int64(b) < 0 {
			hi -= a
		}
	}
	return hi
}

// halfOp is halfBinary with min.NaN and max.NaN.
func halfOp(in *inst, a, b uint64) uint64 {
	if in.mode == mmNaN && (in.op == opMin || in.op == opMax) {
		if x, y := halfToF64(a, in.t), halfToF64(b, in.t); x != x || y != y {
			return nanHalf
		}
	}
	return halfBinary(in.op, in.t, a, b)
}

func testp(in *inst, a uint64) bool {
	x := f64(a)
	if in.t == tyF32 {
		x = float64(f32(a))
	}
	ax := math.Abs(x)
	minNormal := 0x1p-1022
	if in.t == tyF32 {
		minNormal = 0x1p-126
	}
	switch in.mode {
	case tpFinite:
		return !math.IsInf(x, 0) && x == x
	case tpInfinite:
		return math.IsInf(x, 0)
	case tpNumber:
		return x == x
	case tpNotANumber:
		return x != x
	case tpNormal:
		return ax >= minNormal && !math.IsInf(x, 0)
	case tpSubnormal:
		return ax > 0 && ax < minNormal
	}
	return false
}

// halfBinary evaluates f16/bf16 arithmetic, exactly rounded.
func halfBinary(op opcode, t ptype, a, b uint64) uint64 {
	x, y := halfToF64(a, t), halfToF64(b, t)
	switch op {
	case opAdd:
		return halfRound(fmaOdd(x, 1, y), t)
	case opSub:
		return halfRound(fmaOdd(x, 1, -y), t)
	case opMulLo:
		return halfRound(fmaOdd(x, y, math.Copysign(0, -1)), t)
	case opMin:
		return halfRound(minF(x, y), t)
	case opMax:
		return halfRound(maxF(x, y), t)
	}
	return nanHalf
}

// ternary evaluates mad, fma and their wide and hi forms.
func ternary(in *inst, a, b, c uint64) uint64 {
	t := in.t
	switch {
	case t == tyF32:
		x, y, z := f32(a), f32(b), f32(c)
		if in.flags&flFtz != 0 {
			x, y, z = ftz32(x), ftz32(y), ftz32(z)
		}
		var r float32
		if in.mode > rndRN {
			return directed(opFma, tyF32, in.mode, float64(x), float64(y), float64(z))
		}
		r = fmaF32(x, y, z)
		if in.flags&flFtz != 0 {
			r = ftz32(r)
		}
		if in.flags&flSat != 0 {
			r = sat(r)
		}
		return b32(r)
	case t == tyF64:
		if in.mode > rndRN {
			return directed(opFma, tyF64, in.mode, f64(a), f64(b), f64(c))
		}
		return b64(math.FMA(f64(a), f64(b), f64(c)))
	case t.isHalf():
		return halfRound(fmaOdd(halfToF64(a, t), halfToF64(b, t), halfToF64(c, t)), t)
	case t.isHalf2():
		lo := halfRound(fmaOdd(halfToF64(a&0xffff, t), halfToF64(b&0xffff, t), halfToF64(c&0xffff, t)), t)
		hi := halfRound(fmaOdd(halfToF64(a>>16&0xffff, t), halfToF64(b>>16&0xffff, t), halfToF64(c>>16&0xffff, t)), t)
		return hi<<16 | lo
	}
	switch in.op {
	case opMadHi:
		return (mulHi(t, a, b) + c) & t.mask()
	case opMadWide:
		wt := widen(t)
		return (t.ival(a)*t.ival(b) + c) & wt.mask()
	}
	return (a*b + c) & t.mask()
}

func unary(in *inst, a uint64) uint64 {
	t := in.t
	switch in.op {
	case opNeg:
		switch {
		case t.isFloat():
			switch t.bits() {
			case 16:
				return a ^ 0x8000
			case 32:
				if t.isHalf2() {
					return a ^ 0x80008000
				}
				return b32(-f32(a))
			}
			return a ^ 1<<63
		}
		return (-a) & t.mask()
	case opAbs:
		switch {
		case t.isFloat():
			switch t.bits() {
			case 16:
				return a &^ 0x8000
			case 32:
				if t.isHalf2() {
					return a &^ 0x80008000
				}
				return b32(float32(math.Abs(float64(f32(a)))))
			}
			return a &^ (1 << 63)
		}
		v := sext(a, t.bits())
		if v < 0 {
			v = -v
		}
		return uint64(v) & t.mask()
	case opNot:
		return ^a & t.mask()
	case opCnot:
		if a&t.mask() == 0 {
			return 1
		}
		return 0
	case opPopc:
		return uint64(bits.OnesCount64(a & t.mask()))
	case opClz:
		return uint64(bits.LeadingZeros64(a&t.mask()) - (64 - t.bits()))
	case opBrev:
		return bits.Reverse64(a) >> (64 - uint(t.bits()))
	case opBfind:
		v := a & t.mask()
		if t.signed() && sext(v, t.bits()) < 0 {
			v = ^v & t.mask()
		}
		if v == 0 {
			return 0xffffffff
		}
		pos := uint64(63 - bits.LeadingZeros64(v))
		if in.mode == 1 { // .shiftamt
			return uint64(t.bits()-1) - pos
		}
		return pos
	case opRcp, opSqrt:
		if t == tyF64 {
			x := f64(a)
			if in.op == opRcp {
				return b64(1 / x)
			}
			return b64(math.Sqrt(x))
		}
		x := f32(a)
		if in.flags&flFtz != 0 {
			x = ftz32(x)
		}
		var r float32
		if in.op == opRcp {
			r = 1 / x
		} else {
			r = float32(math.Sqrt(float64(x)))
		}
		if in.flags&flFtz != 0 {
			r = ftz32(r)
		}
		return b32(r)
	}
	// Approximations (f32 only).
	x := f32(a)
	if in.flags&flFtz != 0 {
		x = ftz32(x)
	}
	r := approx(in.op, x)
	if in.flags&flFtz != 0 {
		r = ftz32(r)
	}
	return b32(r)
}

func bitsOp(in *inst, a, b, c uint64) uint64 {
	if in.op == opPrmt {
		// Default mode: each selector nibble picks a byte of {b, a}.
		src := (b&0xffffffff)<<32 | a&0xffffffff
		var r uint64
		for i := 0; i < 4; i++ {
			sel := (c >> (4 * uint(i))) & 0xf
			byt := (src >> (8 * (sel & 7))) & 0xff
			if sel&8 != 0 { // replicate the sign bit
				if byt&0x80 != 0 {
					byt = 0xff
				} else {
					byt = 0
				}
			}
			r |= byt << (8 * uint(i))
		}
		return r
	}
	// bfe: extract c bits starting at b.
	t := in.t
	nb := uint64(t.bits())
	pos, ln := b&0xff, c&0xff
	v := a & t.mask()
	if ln == 0 {
		return 0
	}
	if pos >= nb {
		if t.signed() && sext(v, int(nb)) < 0 {
			return t.mask()
		}
		return 0
	}
	r := v >> pos
	if ln < 64 {
		r &= uint64(1)<<ln - 1
	}
	if t.signed() {
		top := min(pos+ln, nb) - 1
		signBit := (v >> top) & 1
		if ln < nb && signBit == 1 && pos+ln <= nb {
			r |= ^uint64(0) << ln
		} else if pos+ln > nb && sext(v, int(nb)) < 0 {
			r |= ^uint64(0) << (nb - pos)
		}
	}
	return r & t.mask()
}

func boolOp(op uint8, a, b uint32) uint32 {
	switch op {
	case 0:
		return a & b
	case 1:
		return a | b
	}
	return a ^ b
}

func cmpFloat(c uint8, x, y float64) bool {
	nan := x != x || y != y
	switch c {
	case cmpEq:
		return x == y
	case cmpNe:
		return !nan && x != y
	case cmpLt:
		return x < y
	case cmpLe:
		return x <= y
	case cmpGt:
		return x > y
	case cmpGe:
		return x >= y
	case cmpEqu:
		return nan || x == y
	case cmpNeu:
		return nan || x != y
	case cmpLtu:
		return nan || x < y
	case cmpLeu:
		return nan || x <= y
	case cmpGtu:
		return nan || x > y
	case cmpGeu:
		return nan || x >= y
	case cmpNum:
		return !nan
	case cmpNan:
		return nan
	}
	return false
}

func compare(in *inst, a, b uint64) bool {
	t := in.t
	switch {
	case t == tyF32:
		x, y := f32(a), f32(b)
		if in.flags&flFtz != 0 {
			x, y = ftz32(x), ftz32(y)
		}
		return cmpFloat(in.mode, float64(x), float64(y))
	case t == tyF64:
		return cmpFloat(in.mode, f64(a), f64(b))
	case t.isHalf():
		return cmpFloat(in.mode, halfToF64(a, t), halfToF64(b, t))
	}
	nb := t.bits()
	mk := t.mask()
	switch in.mode {
	case cmpEq:
		return a&mk == b&mk
	case cmpNe:
		return a&mk != b&mk
	}
	if t.signed() {
		return cmpOrdered(in.mode, sext(a, nb), sext(b, nb))
	}
	return cmpOrdered(in.mode, a&mk, b&mk)
}

// cmpOrdered applies an ordered integer comparison (lt/lo, le/ls, gt/hi,
// ge/hs) to x and y.
func cmpOrdered[T int64 | uint64](mode uint8, x, y T) bool {
	switch mode {
	case cmpLt, cmpLo:
		return x < y
	case cmpLe, cmpLs:
		return x <= y
	case cmpGt, cmpHi:
		return x > y
	case cmpGe, cmpHs:
		return x >= y
	}
	return false
}

// floatVal decodes a register holding a float of type t.
func floatVal(t ptype, a uint64) float64 {
	switch t {
	case tyF32:
		return float64(f32(a))
	case tyF64:
		return f64(a)
	}
	return halfToF64(a, t)
}

func cvt(in *inst, a uint64) uint64 {
	to, from := in.t, in.t2
	switch {
	case from.isFloat() && to.isFloat():
		x := floatVal(from, a)
		if from == tyF32 && in.flags&flFtz != 0 {
			x = float64(ftz32(float32(x)))
		}
		var r uint64
		switch {
		case to == from:
			x = roundInt(x, in.mode)
			r = fmtOf(to).round(x, rndRN)
		case to.bits() > from.bits():
			r = fmtOf(to).round(x, rndRN) // exact
		default:
			r = fmtOf(to).round(x, in.mode)
		}
		if x != x {
			switch to.bits() {
			case 16:
				return nanHalf
			case 32:
				return nanF32
			}
			return nanF64
		}
		if in.flags&(flSat|flFtz) != 0 {
			v := floatVal(to, r)
			if to == tyF32 && in.flags&flFtz != 0 {
				v = float64(ftz32(float32(v)))
			}
			if in.flags&flSat != 0 {
				v = float64(sat(float32(v)))
			}
			r = fmtOf(to).round(v, rndRN)
		}
		return r
	case from.isFloat():
		x := floatVal(from, a)
		if from == tyF32 && in.flags&flFtz != 0 {
			x = float64(ftz32(float32(x)))
		}
		return floatToInt(x, in.mode, to)
	case to.isFloat():
		v := from.ival(a)
		if from.bits() == 64 {
			if from.signed() {
				if x := int64(v); x > -(1<<53) && x < 1<<53 {
					return fmtOf(to).round(float64(x), in.mode)
				}
				return roundBig(new(big.Float).SetInt64(int64(v)), to, in.mode)
			}
			if v < 1<<53 {
				return fmtOf(to).round(float64(v), in.mode)
			}
			return roundBig(new(big.Float).SetUint64(v), to, in.mode)
		}
		x := float64(int64(v))
		if !from.signed() {
			x = float64(v)
		}
		r := fmtOf(to).round(x, in.mode)
		if in.flags&flSat != 0 && to == tyF32 {
			r = b32(sat(f32(r)))
		}
		return r
	}
	// Integer to integer: extend by the source's signedness, then truncate.
	return from.ival(a) & to.mask()
}
