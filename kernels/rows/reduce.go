package rows

import "github.com/gradtune/gradtune/kernels/ptx"

// Reducer sums per-thread values over the threads of each row group.
type Reducer struct {
	rk    *Kernel
	w     int     // warps per row (0 or 1: no shared memory)
	base  ptx.Reg // U32: this group's slots in the current buffer
	flip  ptx.Reg // U32: base of buffer 0 + base of buffer 1 (for this group)
	wOff  ptx.Reg // U32: this warp's slot offset
	lane0 ptx.Reg // pred: lane 0 of its warp
}

func newReducer(rk *Kernel) Reducer {
	k, g := rk.K, rk.G
	r := Reducer{rk: rk, w: g.TPR / 32}
	if r.w <= 1 {
		return r
	}
	b0 := k.Mad(ptx.U32, rk.Grp, ptx.Imm(g.nq*g.wp*4), k.Add(ptx.U32, rk.Smem, ptx.Imm(g.redOff)))
	r.base = k.Mov(ptx.U32, b0)
	r.flip = k.Add(ptx.U32, k.Add(ptx.U32, b0, b0), ptx.Imm(g.redBuf))
	r.wOff = k.Shl(ptx.U32, k.Shr(ptx.U32, rk.Lt, ptx.Imm(5)), ptx.Imm(2))
	r.lane0 = k.Setp("eq", ptx.U32, k.And(ptx.U32, rk.Tid, ptx.Imm(31)), ptx.Imm(0))
	return r
}

// Sum returns the sums over the row group of each value (at most
// Config.Sums·unroll), in every thread of the group. All threads of the
// CTA call it together.
func (r *Reducer) Sum(vals []ptx.Reg) []ptx.Reg {
	k, g := r.rk.K, r.rk.G
	vals = append([]ptx.Reg(nil), vals...)
	for off := min(g.TPR, 32) / 2; off >= 1; off /= 2 {
		for i, v := range vals {
			o := k.BitsToF32(k.ShflSync("bfly", v, ptx.Imm(off), ptx.Imm(31), 0xffffffff))
			vals[i] = k.Add(ptx.F32, v, o)
		}
	}
	if r.w <= 1 {
		return vals
	}
	slot := k.Add(ptx.U32, r.base, r.wOff)
	for i, v := range vals {
		k.St(ptx.Shared, ptx.F32, ptx.At(slot, int64(i*g.wp*4)), []ptx.Reg{v})
		k.Guard(r.lane0, false)
	}
	k.BarSync(0)
	out := make([]ptx.Reg, len(vals))
	for i := range vals {
		out[i] = r.addWarps(i)
	}
	k.MovTo(r.base, k.Sub(ptx.U32, r.flip, r.base))
	return out
}

// addWarps adds the warps' slots of value i, in the same order in every
// thread (so all threads of a row agree bit for bit), with shared loads
// of up to four slots.
func (r *Reducer) addWarps(i int) ptx.Reg {
	k, g := r.rk.K, r.rk.G
	var parts []ptx.Reg
	for w := 0; w < r.w; {
		n := 4
		for n > r.w-w {
			n /= 2
		}
		parts = append(parts, k.Ld(ptx.Shared, ptx.F32, n, ptx.At(r.base, int64((i*g.wp+w)*4)))...)
		w += n
	}
	s := parts[0]
	for _, p := range parts[1:] {
		s = k.Add(ptx.F32, s, p)
	}
	return s
}
