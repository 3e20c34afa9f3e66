package gen

import "github.com/gradtune/gradtune/kernels/ptx"

// QuadRows regroups an m16n8 accumulator fragment between the lanes of a
// pair (lane and lane^1). c holds columns 2t and 2t+1 (t = lane mod 4) of
// rows g4 (c[0], c[1]) and g4+8 (c[2], c[3]); odd is lane & 1 ≠ 0. The
// even lane gets columns 2t…2t+3 of row g4, the odd lane columns
// 2t−2…2t+1 of row g4+8: one 16-byte vector each where the fragment
// holds two pairs, halving a store's or an atomic's instructions. Every
// lane of the warp must execute it (one shfl.sync.bfly per pair).
func QuadRows(k *ptx.Func, odd ptx.Reg, c [4]ptx.Reg) [4]ptx.Reg {
	var v [4]ptx.Reg
	for i := range 2 {
		send := k.Selp(ptx.F32, c[i], c[2+i], odd) // the partner's row
		got := k.BitsToF32(k.ShflSync("bfly", send, ptx.Imm(1), ptx.Imm(31), 0xffffffff))
		v[i] = k.Selp(ptx.F32, got, c[i], odd)
		v[2+i] = k.Selp(ptx.F32, c[2+i], got, odd)
	}
	return v
}
