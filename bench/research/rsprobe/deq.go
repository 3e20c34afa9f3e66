package main

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/nf4"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// thread is a consumer thread's view of the path's k-tile: the addresses
// and shifts nf4gemm's consumer computes, and the prmt lookup's tables.
type thread struct {
	k              *ptx.Func
	codes, scales  ptx.Reg // u32 shared addresses of the thread's code word and scales
	shift, bytesel ptx.Reg // the thread's byte of a code word: as a shift, as a prmt selector
	lut            ptx.Reg // the f32 codebook
	lo, hi         [4]ptx.Reg
	negZero        ptx.Reg
}

func newThread(k *ptx.Func, base, tid, lut ptx.Reg) *thread {
	l := k.And(ptx.U32, tid, ptx.Imm(127))
	c := k.Shr(ptx.U32, tid, ptx.Imm(7))
	lane := k.And(ptx.U32, l, ptx.Imm(31))
	w, g, t := k.Shr(ptx.U32, l, ptx.Imm(5)), k.Shr(ptx.U32, lane, ptx.Imm(2)), k.And(ptx.U32, lane, ptx.Imm(3))
	byteCol := k.Xor(ptx.U32, k.Mad(ptx.U32, w, ptx.Imm(8), g), k.Shl(ptx.U32, k.Shr(ptx.U32, t, ptx.Imm(1)), ptx.Imm(4)))
	codes := k.Add(ptx.U32, k.Mad(ptx.U32, c, ptx.Imm(2048), k.Shl(ptx.U32, t, ptx.Imm(6))), k.And(ptx.U32, byteCol, ptx.Imm(-4)))
	th := &thread{k: k, lut: lut}
	th.codes = k.Add(ptx.U32, base, k.Add(ptx.U32, codes, ptx.Imm(offCodes)))
	bi := k.And(ptx.U32, byteCol, ptx.Imm(3))
	th.shift = k.Shl(ptx.U32, bi, ptx.Imm(3))
	th.bytesel = k.Or(ptx.U32, bi, k.Shl(ptx.U32, k.Add(ptx.U32, bi, ptx.Imm(4)), ptx.Imm(4)))
	th.scales = k.Add(ptx.U32, base, k.Add(ptx.U32, k.Mad(ptx.U32, c, ptx.Imm(1024), k.Mad(ptx.U32, w, ptx.Imm(256), k.Shl(ptx.U32, t, ptx.Imm(4)))), ptx.Imm(offScale)))
	var b16 [16]uint32
	for i, v := range nf4.Codebook {
		b16[i] = math.Float32bits(float32(dtype.BF16.Round(float64(v)))) >> 16
	}
	for i := range 4 {
		var lo, hi uint32
		for j := range 4 {
			lo |= (b16[4*i+j] & 0xFF) << (8 * j)
			hi |= (b16[4*i+j] >> 8) << (8 * j)
		}
		th.lo[i], th.hi[i] = k.Mov(ptx.B32, ptx.Imm(int64(lo))), k.Mov(ptx.B32, ptx.Imm(int64(hi)))
	}
	th.negZero = k.Mov(ptx.BF16x2, ptx.Imm(0x80008000))
	return th
}

// fragment writes k16 step s's fragment by mode.
func (th *thread) fragment(mode string, f [4]ptx.Reg, s int) {
	k := th.k
	var sc []ptx.Reg
	switch mode {
	case "rsprmt":
		sc = k.Ld(ptx.Shared, ptx.B32, 2, ptx.At(th.scales, int64(64*s)))
	default:
		sc = k.Ld(ptx.Shared, ptx.F32, 4, ptx.At(th.scales, int64(64*s)))
	}
	for h := range 2 {
		row := 16*s + 8*h
		w0 := k.Ld(ptx.Shared, ptx.B32, 1, ptx.At(th.codes, int64(32*row)))[0]
		w1 := k.Ld(ptx.Shared, ptx.B32, 1, ptx.At(th.codes, int64(32*(row+1))))[0]
		switch mode {
		case "rsreal", "rsnolut":
			lut := func(b ptx.Reg, lo bool) ptx.Reg {
				at := k.Shr(ptx.B32, b, ptx.Imm(2))
				if lo {
					at = k.Shl(ptx.B32, b, ptx.Imm(2))
				}
				a := k.Or(ptx.B32, k.And(ptx.B32, at, ptx.Imm(0x3C)), th.lut)
				if mode == "rsnolut" {
					return k.Mov(ptx.F32, a)
				}
				return k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(a, 0))[0]
			}
			b0, b1 := k.Shr(ptx.B32, w0, th.shift), k.Shr(ptx.B32, w1, th.shift)
			v := [4]ptx.Reg{lut(b0, true), lut(b0, false), lut(b1, true), lut(b1, false)}
			s0, s1 := sc[2*h], sc[2*h+1]
			k.MovTo(f[2*h], k.Mov(ptx.B32, k.PackHalf2(ptx.BF16x2, k.Mul(ptx.F32, v[3], s1), k.Mul(ptx.F32, v[1], s0))))
			k.MovTo(f[2*h+1], k.Mov(ptx.B32, k.PackHalf2(ptx.BF16x2, k.Mul(ptx.F32, v[2], s1), k.Mul(ptx.F32, v[0], s0))))
		case "rsprmt", "rsprmtf":
			// byte 0: row r's, byte 1: row r+1's; nibbles: r lo, r hi, r+1 lo, r+1 hi
			sel := k.Prmt(w0, w1, th.bytesel)
			idx := k.And(ptx.B32, sel, ptx.Imm(0x7777))
			pick := k.Or(ptx.B32, k.And(ptx.B32, k.Shr(ptx.B32, sel, ptx.Imm(1)), ptx.Imm(0x4444)), ptx.Imm(0x3210))
			look := func(tab [4]ptx.Reg) ptx.Reg {
				return k.Prmt(k.Prmt(tab[0], tab[1], idx), k.Prmt(tab[2], tab[3], idx), pick)
			}
			lo, hi := look(th.lo), look(th.hi)
			even := k.Prmt(lo, hi, ptx.Imm(0x7351)) // A row g: rows r, r+1
			odd := k.Prmt(lo, hi, ptx.Imm(0x6240))  // A row g+8
			if mode == "rsprmt" {
				sp := k.Mov(ptx.BF16x2, sc[h])
				k.MovTo(f[2*h], k.Mov(ptx.B32, k.Fma(ptx.BF16x2, k.Mov(ptx.BF16x2, even), sp, th.negZero)))
				k.MovTo(f[2*h+1], k.Mov(ptx.B32, k.Fma(ptx.BF16x2, k.Mov(ptx.BF16x2, odd), sp, th.negZero)))
				continue
			}
			s0, s1 := sc[2*h], sc[2*h+1]
			scale := func(p ptx.Reg) ptx.Reg {
				r0 := k.Mov(ptx.F32, k.Shl(ptx.B32, p, ptx.Imm(16)))
				r1 := k.Mov(ptx.F32, k.And(ptx.B32, p, ptx.Imm(-65536)))
				return k.Mov(ptx.B32, k.PackHalf2(ptx.BF16x2, k.Mul(ptx.F32, r1, s1), k.Mul(ptx.F32, r0, s0)))
			}
			k.MovTo(f[2*h], scale(even))
			k.MovTo(f[2*h+1], scale(odd))
		}
	}
}
