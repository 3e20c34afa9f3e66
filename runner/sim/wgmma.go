package sim

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// wgLog checks that the four warps of a warpgroup execute the same
// warpgroup-collective instructions (wgmma.*, setmaxnreg) in the same
// order: entry i is the pc of the i-th such instruction, as the first
// warp to get there executed it; n counts each warp's.
type wgLog struct {
	pcs  []int32
	who  []int
	base int
	n    [4]int
	// regs is the registers per thread of the warpgroup's last
	// setmaxnreg, 0 before its first.
	regs int
}

// collective checks a warpgroup-collective instruction: all 32 lanes of
// the warp, a complete warpgroup, and the same instruction as the
// warpgroup's other warps executed in that place.
func (w *warp) collective(in *inst, mask uint32) error {
	c := w.c
	if mask != ^uint32(0) {
		return w.fault(in, bits.TrailingZeros32(mask), ErrWarpSync, 0, false,
			fmt.Sprintf("a warpgroup-collective instruction needs all 32 lanes of warp %d; lanes %s do not execute it", w.id, laneList(^mask)))
	}
	g, q := w.id/4, w.id%4
	if 4*g+3 >= len(c.warps) || c.warps[4*g+3].full != ^uint32(0) {
		return w.fault(in, 0, ErrWarpSync, 0, false,
			fmt.Sprintf("warpgroup %d (threads %d-%d) is incomplete in a CTA of %d threads: warpgroup-collective instructions need 128 threads",
				g, 128*g, 128*g+127, c.l.nthreads))
	}
	lg := &c.hs.wgs[g]
	i := lg.n[q] - lg.base
	if i < len(lg.pcs) {
		if lg.pcs[i] != w.pc {
			other := &c.l.k.code[lg.pcs[i]]
			return w.fault(in, 0, ErrWarpSync, 0, false,
				fmt.Sprintf("warp %d executes this as warpgroup %d's collective instruction #%d, but warp %d executed line %d `%s` there",
					w.id, g, lg.n[q]+1, lg.who[i], other.line, other.text))
		}
	} else {
		lg.pcs = append(lg.pcs, w.pc)
		lg.who = append(lg.who, w.id)
	}
	lg.n[q]++
	low := min(lg.n[0], lg.n[1], lg.n[2], lg.n[3])
	if d := low - lg.base; d > 0 {
		lg.pcs, lg.who, lg.base = lg.pcs[d:], lg.who[d:], low
	}
	return nil
}

// checkCollectives, when the CTA has finished: every warp of a warpgroup
// executed as many warpgroup-collective instructions.
func (c *ctaRun) checkCollectives() error {
	if c.hs == nil {
		return nil
	}
	if err := c.checkRegisterSplit(); err != nil {
		return err
	}
	for g, lg := range c.hs.wgs {
		for q := 0; q < 4; q++ {
			if lg.n[q] < lg.base+len(lg.pcs) {
				w := c.warps[4*g+q]
				in := &c.l.k.code[lg.pcs[lg.n[q]-lg.base]]
				return w.fault(in, 0, ErrWarpSync, 0, false,
					fmt.Sprintf("warp %d exited without executing this warpgroup-collective instruction, which warp %d of warpgroup %d executed",
						w.id, lg.who[lg.n[q]-lg.base], g))
			}
		}
	}
	return nil
}

// gmmaDesc is a decoded wgmma shared-memory matrix descriptor.
type gmmaDesc struct {
	start, lbo, sbo uint32
	base            uint32
	layout          uint32 // 0 none (interleave), 1 128B, 2 64B, 3 32B swizzle
}

func decodeDesc(d uint64) gmmaDesc {
	return gmmaDesc{start: uint32(d&0x3fff) << 4, lbo: uint32(d>>16&0x3fff) << 4, sbo: uint32(d>>32&0x3fff) << 4,
		base: uint32(d >> 49 & 7), layout: uint32(d >> 62)}
}

// span is the swizzle width in bytes (16 for the interleaved layout).
func (d gmmaDesc) span() uint32 { return [4]uint32{16, 128, 64, 32}[d.layout] }

// swizzle applies the shared-memory swizzle of span bytes (32, 64, 128)
// to a byte address: bits [4, 4+b) are XORed with bits [7, 7+b), b = 1,
// 2, 3 (CUTLASS Swizzle<b,4,3>).
func swizzle(addr uint32, span uint32) uint32 {
	switch span {
	case 32:
		return addr ^ (addr>>7&1)<<4
	case 64:
		return addr ^ (addr>>7&3)<<4
	case 128:
		return addr ^ (addr>>7&7)<<4
	}
	return addr
}

// The shared-memory byte address of element (mn, k) of a 16-bit operand
// described by d, K-major or MN-major (CUTLASS's canonical GMMA layouts,
// cute/arch/mma_sm90_desc.hpp), is swizzle(start + mnOffset(mn) +
// kOffset(k)), with the offsets:
//
//	K-major, interleave: (mn%8)·16 + (mn/8)·SBO + (k%8)·2 + (k/8)·LBO
//	K-major, swizzle S:  (mn%8)·S  + (mn/8)·SBO + (k%8)·2 + (k/8)·16
//	MN-major, interleave: (mn%8)·2 + (mn/8)·SBO + (k%8)·16 + (k/8)·LBO
//	MN-major, swizzle S:  (mn%(S/2))·2 + (mn/(S/2))·LBO + (k%8)·S + (k/8)·SBO
//
// then swizzled on the absolute address.
func (d gmmaDesc) mnOffset(mn uint32, mnMajor bool) uint32 {
	s := d.span()
	switch {
	case !mnMajor && d.layout == 0:
		return mn%8*16 + mn/8*d.sbo
	case !mnMajor:
		return mn%8*s + mn/8*d.sbo
	case d.layout == 0:
		return mn%8*2 + mn/8*d.sbo
	}
	return mn%(s/2)*2 + mn/(s/2)*d.lbo
}

// kOffset is the k term of an element's address (see mnOffset).
func (d gmmaDesc) kOffset(k uint32, mnMajor bool) uint32 {
	switch {
	case !mnMajor && d.layout == 0:
		return k%8*2 + k/8*d.lbo
	case !mnMajor:
		return k%8*2 + k/8*16
	case d.layout == 0:
		return k%8*16 + k/8*d.lbo
	}
	return k%8*d.span() + k/8*d.sbo
}

// uniform returns slot s's value, which every lane of the warp must hold.
func (w *warp) uniform(in *inst, s int32, what string) (uint64, error) {
	v := w.lanes(s)
	for l := 1; l < 32; l++ {
		if v[l] != v[0] {
			return 0, w.fault(in, l, ErrWarpSync, 0, false,
				fmt.Sprintf("%s differs between lanes 0 and %d (%#x, %#x): it must be warp-uniform", what, l, v[0], v[l]))
		}
	}
	return v[0], nil
}

// operand reads rows [mn0, mn0+rows) × k16 of a descriptor operand.
func (w *warp) gmmaOperand(in *inst, descSlot int32, what string, mn0, rows int, mnMajor bool, out [][16]float64,
	chunks []uint32) ([]uint32, error) {
	dv, err := w.uniform(in, descSlot, what+" descriptor")
	if err != nil {
		return nil, err
	}
	d := decodeDesc(dv)
	if d.base != 0 && (d.layout == 0 || d.base != d.start>>7&7) {
		return nil, w.fault(in, 0, ErrTrap, 0, false,
			fmt.Sprintf("%s descriptor base offset %d with start address %#x is not modelled (0, or (start>>7)&7 with a swizzle)", what, d.base, d.start))
	}
	smem := w.c.smem
	t := in.t2
	hs := w.c.hs
	span := d.span()
	var kOff [16]uint32
	for k := range kOff {
		kOff[k] = d.kOffset(uint32(k), mnMajor)
	}
	for i := 0; i < rows; i++ {
		row := d.start + d.mnOffset(uint32(mn0+i), mnMajor)
		for k := 0; k < 16; k++ {
			a := swizzle(row+kOff[k], span)
			if int(a)+2 > len(smem) {
				return nil, w.fault(in, 0, ErrMemory, uint64(a), true,
					fmt.Sprintf("%s element (%d, %d) at shared %#x is outside the CTA's %d bytes of shared memory (descriptor %#x)",
						what, mn0+i, k, a, len(smem), dv))
			}
			if a%2 != 0 {
				return nil, w.fault(in, 0, ErrMisaligned, uint64(a), true, what+" element not 2-byte aligned")
			}
			out[i][k] = halfToF64(loadN(smem[a:], 2), t)
			if ch := a >> 4; hs.listed[ch] != hs.read {
				hs.listed[ch] = hs.read
				chunks = append(chunks, ch)
			}
		}
	}
	return chunks, nil
}

// wgmma executes wgmma.mma_async for one warp of the warpgroup: its 16
// rows of D = A·B (+ D when scale-d). Each warp's rows depend only on
// its rows of A and on B, so the warps compute at their issue; the
// result is in the registers at once, and the async rules make any
// observation before the covering wait_group an error.
//
// Numerics: the 16 products are exact in float64; they are summed in k
// order in float64, added to the old accumulator and rounded once to f32.
func (w *warp) wgmma(in *inst, mask uint32) error {
	if err := w.collective(in, mask); err != nil {
		return err
	}
	hw := w.hwState()
	if !hw.fenced {
		return w.fault(in, 0, ErrAsync, 0, false, "wgmma.mma_async before the warp's first wgmma.fence")
	}
	n := int(in.imm)
	q := w.id % 4
	var A [16][16]float64
	B := make([][16]float64, n)
	chunks := hw.openChunks
	w.c.hs.read++ // a new operand read: every chunk it reads is listed once
	var err error
	if in.mode&wgRegA != 0 {
		w.regFragmentA(in, &A)
	} else if chunks, err = w.gmmaOperand(in, in.a[0], "A", 16*q, 16, in.mode&wgTransA != 0, A[:], chunks); err != nil {
		return err
	}
	if chunks, err = w.gmmaOperand(in, in.a[1], "B", 0, n, in.mode&wgTransB != 0, B, chunks); err != nil {
		return err
	}
	start := len(hw.openChunks)
	slices.Sort(chunks[start:]) // listed once each (gmmaOperand); checked in address order
	for _, ch := range chunks[start:] {
		if why := w.c.asyncRead(ch); why != "" {
			sentinel := ErrProxy
			if w.c.hs.asyncWr[ch] != 0 {
				sentinel = ErrAsync
			}
			return w.fault(in, 0, sentinel, uint64(ch)*16, true, "wgmma.mma_async reads shared memory that "+why)
		}
		w.c.hs.asyncRd[ch]++
	}
	hw.openChunks = chunks
	scaleD := in.off == 1
	if in.mode&wgScaleImm == 0 {
		scaleD = w.p[in.a[2]]&1 != 0
		if in.flags&flNegC != 0 {
			scaleD = !scaleD
		}
	}
	acc := in.x[:n/2]
	if scaleD {
		for _, s := range acc {
			if w.rw[s] != ^uint32(0) {
				return w.uninit(in, ^w.rw[s], w.slotName(s)+" (accumulator, read because scale-d is true)")
			}
		}
	}
	sa, sb := 1.0, 1.0
	if in.mode&wgNegA != 0 {
		sa = -1
	}
	if in.mode&wgNegB != 0 {
		sb = -1
	}
	if sa*sb < 0 { // (sa·a)·sb·b is exactly −(a·b): negate A once
		for r := range A {
			for k := range A[r] {
				A[r][k] = -A[r][k]
			}
		}
	}
	for j := 0; j < n/8; j++ {
		for e := 0; e < 4; e++ {
			D := w.lanes(acc[4*j+e])
			for l := 0; l < 32; l++ {
				a, b := &A[l/4+8*(e/2)], &B[8*j+2*(l%4)+e%2]
				s := 0.0
				for k := 0; k < 16; k++ {
					s += a[k] * b[k]
				}
				if scaleD {
					s += float64(f32(D[l]))
				}
				D[l] = b32(float32(s))
			}
		}
	}
	for _, s := range in.x {
		if hw.stamp[s] != hw.seq {
			hw.stamp[s] = hw.seq
			hw.open = append(hw.open, s)
			if hw.pend[s]++; hw.pend[s] == 1 {
				hw.npend++
			}
		}
	}
	return nil
}

// regFragmentA reads the register form of A: four .b32 registers of two
// 16-bit values per lane, the warp's 16 rows laid out as mma.sync's A
// fragment.
func (w *warp) regFragmentA(in *inst, A *[16][16]float64) {
	n := int(in.imm)
	t := in.t2
	for l := 0; l < 32; l++ {
		g, tg := l>>2, l&3
		for r := 0; r < 4; r++ {
			v := w.lanes(in.x[n/2+r])[l]
			for h := 0; h < 2; h++ {
				i := 2*r + h
				row := g + 8*(i>>1&1)
				col := 2*tg + i&1 + 8*(i>>2)
				A[row][col] = halfToF64(v>>(16*uint(h))&0xffff, t)
			}
		}
	}
}

// wgCommit closes the open wgmma group.
func (w *warp) wgCommit() {
	hw := w.hwState()
	hw.groups = append(hw.groups, asyncGroup{slots: hw.open, chunks: hw.openChunks})
	hw.open, hw.openChunks = nil, nil
	hw.seq++
}

// wgWait retires all but the n most recent committed wgmma groups.
func (w *warp) wgWait(n int) {
	hw := w.hwState()
	rd := w.c.hs.asyncRd
	for len(hw.groups) > n {
		g := hw.groups[0]
		hw.groups = hw.groups[1:]
		for _, s := range g.slots {
			if hw.pend[s]--; hw.pend[s] == 0 {
				hw.npend--
			}
		}
		for _, ch := range g.chunks {
			rd[ch]--
			w.asyncReadDone(ch)
		}
	}
}

// bulkWait retires all but the n most recent bulk store groups.
func (w *warp) bulkWait(n int) {
	hw := w.hwState()
	rd := w.c.hs.asyncRd
	for len(hw.bulk) > n {
		for _, ch := range hw.bulk[0].chunks {
			rd[ch]--
		}
		hw.bulk = hw.bulk[1:]
	}
}

// checkRegisterSplit, when the CTA has finished: the registers its
// warpgroups hold after their setmaxnreg fit what the CTA was allocated,
// .maxnreg per thread. On the GPU a setmaxnreg.inc waits until other
// warpgroups' setmaxnreg.dec have released enough registers to the CTA's
// pool, so a split that asks for more than the CTA holds never finishes;
// the interpreter does not block there, and reports it here instead. A
// kernel without .maxnreg is not checked.
func (c *ctaRun) checkRegisterSplit() error {
	alloc := c.l.k.maxnreg
	total, split := 0, false
	for _, lg := range c.hs.wgs {
		regs := alloc
		if lg.regs > 0 {
			regs, split = lg.regs, true
		}
		total += 128 * regs
	}
	if !split || alloc == 0 {
		return nil // without .maxnreg the CTA's registers are the compiler's choice
	}
	if have := alloc * c.l.nthreads; total > have {
		return fmt.Errorf("%w: after setmaxnreg the warpgroups hold %d registers (%s), but the CTA was allocated %d (.maxnreg %d × %d threads): on the GPU a setmaxnreg.inc waits forever for registers no warpgroup releases",
			ErrDeadlock, total, c.splitString(alloc), have, alloc, c.l.nthreads)
	}
	return nil
}

// splitString lists each warpgroup's registers per thread.
func (c *ctaRun) splitString(alloc int) string {
	var parts []string
	for g, lg := range c.hs.wgs {
		r := lg.regs
		if r == 0 {
			r = alloc
		}
		parts = append(parts, fmt.Sprintf("warpgroup %d: %d", g, r))
	}
	return strings.Join(parts, ", ")
}
