package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gradtune/gradtune/kernels/ptx"
)

const (
	offB     = 0     // B: 192 rows × 128 bytes, 128B swizzle
	offA     = 32768 // A (ss): 64 rows × 128 bytes per warpgroup
	offLUT   = 49152 // 16 f32
	offCodes = 50176 // code words
	offScale = 54272 // scales: 1 KB per warpgroup (a 256-byte copy per warp)
)

// The modes: A from shared memory (ss), from constant registers (rs), or
// dequantized per k-tile: rsdeq (one code word per 4 codes, an f32 table,
// a constant scale), rsreal (what the path does: two code words and their
// variable shifts per 4 codes, a 16-byte scale load per k16 step),
// rsnolut (rsreal with the table loads replaced by register moves),
// rsprmt (bf16 codebook bytes in registers, looked up by prmt, scaled by
// bf16 pairs with fma.bf16x2) and rsprmtf (the same lookup, scaled in f32
// and packed as rsreal does).
//
// A suffix changes the schedule: X issues each k16 step's wgmma right after
// dequantizing its fragment (one fence each) instead of all four after the
// k-tile's dequantization; 3 rotates three fragment sets and waits until
// two groups are pending (kt a multiple of 3).
var modes = []string{"ss", "rs", "rsdeq", "rsreal", "rsnolut", "rsprmt", "rsprmtf", "rsrealX", "rsprmtX", "rsreal3", "rsprmt3"}

func kernel(name string) *ptx.Module {
	mode := strings.TrimRight(name, "X3")
	interleave, nsets := strings.HasSuffix(name, "X"), 2
	if strings.HasSuffix(name, "3") {
		nsets = 3
	}
	m := ptx.NewModule()
	k := m.Func("probe_" + name)
	k.ReqNTid(256)
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	kt := k.LdParam(k.Param("kt", ptx.U32))
	dyn := k.DynamicShared("smem", 16)
	base := k.And(ptx.B32, k.Add(ptx.U32, k.Mov(ptx.U32, dyn), ptx.Imm(1023)), ptx.Imm(-1024))
	tid := k.Mov(ptx.U32, ptx.TidX)
	wg := k.Shr(ptx.U32, tid, ptx.Imm(7))
	acc := k.WgmmaAcc(192)
	for _, a := range acc {
		k.MovTo(a, ptx.F32Imm(0))
	}
	descB := k.WgmmaDesc(base, 16, 1024, ptx.Swizzle128B)
	sets := make([][4][4]ptx.Reg, nsets)
	for i := range sets {
		for s := range sets[i] {
			for j := range sets[i][s] {
				sets[i][s][j] = k.Reg(ptx.B32)
				k.MovTo(sets[i][s][j], k.Add(ptx.U32, tid, ptx.Imm(int64(i*16+s*4+j))))
			}
		}
	}
	lut := k.Add(ptx.U32, base, ptx.Imm(offLUT))
	codes := k.Add(ptx.U32, base, k.Add(ptx.U32, ptx.Imm(offCodes), k.Shl(ptx.U32, k.And(ptx.U32, tid, ptx.Imm(127)), ptx.Imm(2))))
	descA := k.WgmmaDesc(k.Add(ptx.U32, k.Add(ptx.U32, base, ptx.Imm(offA)), k.Shl(ptx.U32, wg, ptx.Imm(13))), 16, 1024, ptx.Swizzle128B)
	th := newThread(k, base, tid, lut)
	step := func(it ptx.Reg, frags [4][4]ptx.Reg) {
		switch mode {
		case "ss", "rs":
		case "rsdeq":
			for s := range frags {
				for h := range 2 {
					w := k.Ld(ptx.Shared, ptx.B32, 1, ptx.At(codes, int64(512*s+2048*h)))[0]
					val := func(sh int64, lo bool) ptx.Reg {
						a := k.Shr(ptx.B32, w, ptx.Imm(sh))
						if lo {
							a = k.Shl(ptx.B32, w, ptx.Imm(2))
						}
						v := k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Or(ptx.B32, k.And(ptx.B32, a, ptx.Imm(0x3C)), lut), 0))[0]
						return k.Mul(ptx.F32, v, ptx.F32Imm(0.5))
					}
					k.MovTo(frags[s][2*h], k.Mov(ptx.B32, k.PackHalf2(ptx.BF16x2, val(10, false), val(2, false))))
					k.MovTo(frags[s][2*h+1], k.Mov(ptx.B32, k.PackHalf2(ptx.BF16x2, val(6, false), val(0, true))))
				}
			}
		default:
			if !interleave {
				for s := range frags {
					th.fragment(mode, frags[s], s)
				}
			}
		}
		if !interleave {
			k.WgmmaFence()
		}
		for s := range frags {
			if interleave {
				th.fragment(mode, frags[s], s)
				k.WgmmaFence()
			}
			b := descB
			if s > 0 {
				b = k.WgmmaDescAdd(descB, 32*s)
			}
			if mode == "ss" {
				a := descA
				if s > 0 {
					a = k.WgmmaDescAdd(descA, 32*s)
				}
				k.Wgmma(ptx.BF16, acc, a, b, ptx.WgmmaOpts{})
			} else {
				k.WgmmaRegA(ptx.BF16, acc, frags[s], b, ptx.WgmmaOpts{})
			}
		}
		k.WgmmaCommit()
		k.WgmmaWait(nsets - 1)
	}
	k.For(ptx.U32, ptx.Imm(0), kt, ptx.Imm(int64(nsets)), func(it ptx.Reg) {
		for _, set := range sets {
			step(it, set)
		}
	})
	k.WgmmaWait(0)
	sum := k.Add(ptx.F32, acc[0], acc[len(acc)-1])
	gid := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(256), tid)
	k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, out, k.MulWide(ptx.U32, gid, ptx.Imm(4))), 0), []ptx.Reg{sum})
	return m
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: rsprobe DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// write writes DIR/probe_MODE.ptx for every mode and DIR/modes, their
// names in order, one per line.
func write(dir string) error {
	for _, mode := range modes {
		b, err := kernel(mode).Build()
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "probe_"+mode+".ptx"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "modes"), []byte(strings.Join(modes, "\n")+"\n"), 0o644)
}
