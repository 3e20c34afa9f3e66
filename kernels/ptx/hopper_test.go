package ptx_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Shared-memory layout of hopperModule's tile, from a 1024-aligned base.
const (
	hFull   = 0     // mbarrier: the stage is loaded
	hEmpty  = 8     // mbarrier: the stage is consumed
	hA      = 1024  // A: 64×64 bf16, K-major, 128B swizzle (8 KB)
	hB      = 9216  // B: 64×128 bf16 (K 64 × N 128), K-major, 128B swizzle (16 KB)
	hC      = 25600 // C staging for the TMA store, 64×64 bf16
	hmBytes = 33792 + 1024
)

// hopperModule writes a small warp-specialized GEMM-shaped kernel that
// calls every Hopper helper: a producer warpgroup loading A and B by TMA
// (B multicast over a 2-CTA cluster) into one stage guarded by full and
// empty mbarriers, two consumer warpgroups running wgmma (descriptor and
// register A), and an epilogue through stmatrix and a TMA store.
func hopperModule() *ptx.Module {
	m := ptx.NewModule()
	k := m.Func("wgmma_tile")
	k.ReqNTid(384)
	k.MaxNReg(168)
	k.ReqNCtaPerCluster(2, 1, 1)
	tmA, tmB, tmC := k.TensorMapParam("a"), k.TensorMapParam("b"), k.TensorMapParam("c")
	kTiles := k.LdParam(k.Param("k_tiles", ptx.U32))
	dyn := k.DynamicShared("smem", 16)

	k.Comment("1024-aligned tile base: round the dynamic base up")
	base := k.And(ptx.B32, k.Add(ptx.U32, k.Mov(ptx.U32, dyn), ptx.Imm(1023)), ptx.Imm(-1024))
	full, empty := ptx.At(base, hFull), ptx.At(base, hEmpty)
	tid := k.Mov(ptx.U32, ptx.TidX)
	wg := k.Shr(ptx.U32, tid, ptx.Imm(7))
	warp := k.Shr(ptx.U32, tid, ptx.Imm(5))
	rank := k.Mov(ptx.U32, ptx.ClusterCtaRank)
	_ = k.Mov(ptx.U32, ptx.ClusterNCtaRank)
	_ = k.Mov(ptx.U32, ptx.ClusterIDX)
	_ = k.Mov(ptx.U32, ptx.ClusterCtaidX)
	_ = k.Mov(ptx.U32, ptx.NClusterIDX)
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
		k.MbarInit(full, ptx.Imm(1))
		k.MbarInit(empty, ptx.Imm(512)) // every consumer thread of both CTAs
		k.FenceMbarrierInit()
	})
	k.ClusterArrive(true)
	k.ClusterWait(true)

	k.IfElse(k.Setp("eq", ptx.U32, wg, ptx.Imm(0)), func() {
		k.Comment("producer warpgroup")
		k.SetMaxNReg(false, 40)
		k.If(k.Setp("eq", ptx.U32, warp, ptx.Imm(0)), func() {
			k.If(k.ElectSync(0xffffffff), func() {
				phase := k.Mov(ptx.U32, ptx.Imm(1)) // the first pass finds empty free
				tmap := k.TensorMapAddr(tmA)
				once := k.CreatePolicy(ptx.L2EvictFirst) // A is read once
				k.For(ptx.U32, ptx.Imm(0), kTiles, ptx.Imm(1), func(i ptx.Reg) {
					k.MbarWait(empty, phase)
					k.MovTo(phase, k.Xor(ptx.U32, phase, ptx.Imm(1)))
					k.MbarArriveExpectTx(full, ptx.Imm(8192+16384))
					kc := k.Shl(ptx.U32, i, ptx.Imm(6))
					k.TmaLoadHinted(ptx.At(base, hA), tmap, []ptx.Operand{kc, k.Mov(ptx.U32, ptx.CtaidY)}, full, once)
					k.If(k.Setp("eq", ptx.U32, rank, ptx.Imm(0)), func() {
						k.TmaLoadMulticast(ptx.At(base, hB), k.TensorMapAddr(tmB), []ptx.Operand{kc, ptx.Imm(0), k.Mov(ptx.U32, ptx.CtaidX)}, full, ptx.Imm(3))
					})
				})
			})
		})
	}, func() {
		k.Comment("consumer warpgroups")
		k.SetMaxNReg(true, 232)
		acc := k.WgmmaAcc(128)
		accR := k.WgmmaAcc(16)
		phase := k.Mov(ptx.U32, ptx.Imm(0))
		descA := k.WgmmaDesc(k.Add(ptx.U32, base, ptx.Imm(hA)), 16, 1024, ptx.Swizzle128B)
		descB := k.WgmmaDesc(k.Add(ptx.U32, base, ptx.Imm(hB)), 16, 1024, ptx.Swizzle128B)
		first := k.Mov(ptx.U32, ptx.Imm(1))
		k.For(ptx.U32, ptx.Imm(0), kTiles, ptx.Imm(1), func(i ptx.Reg) {
			k.MbarWait(full, phase)
			k.MovTo(phase, k.Xor(ptx.U32, phase, ptx.Imm(1)))
			k.WgmmaFence()
			for s := range 4 {
				scale := ptx.Operand(k.Setp("eq", ptx.U32, first, ptx.Imm(0)))
				k.Wgmma(ptx.BF16, acc, k.WgmmaDescAdd(descA, 32*s), k.WgmmaDescAdd(descB, 32*s), ptx.WgmmaOpts{ScaleD: scale})
				k.MovTo(first, ptx.Imm(0))
			}
			a := k.Ldmatrix(4, false, ptx.At(k.Mad(ptx.U32, k.And(ptx.B32, tid, ptx.Imm(127)), ptx.Imm(16), base), hA))
			k.WgmmaRegA(ptx.BF16, accR, [4]ptx.Reg{a[0], a[1], a[2], a[3]}, descB, ptx.WgmmaOpts{ScaleD: ptx.Imm(0), NegA: true, TransB: true})
			k.WgmmaCommit()
			k.WgmmaWait(0)
			k.MbarArriveDrop(empty)
			k.MbarArriveCluster(ptx.At(k.Mapa(k.Add(ptx.U32, base, ptx.Imm(hEmpty)), ptx.Imm(0)), 0))
			_ = k.MbarArrive(empty)
		})
		k.Comment("epilogue: stmatrix, proxy fence, TMA store")
		pk := make([]ptx.Reg, 4)
		for j := range pk {
			pk[j] = k.PackHalf2(ptx.BF16x2, acc[2*j+1], acc[2*j])
		}
		at := ptx.At(k.Mad(ptx.U32, k.And(ptx.B32, tid, ptx.Imm(127)), ptx.Imm(16), base), hC)
		k.Stmatrix(false, at, pk)
		k.Stmatrix(true, at, pk[:2])
		k.FenceProxyAsync()
		k.Raw(0, 0, "bar.sync", ptx.Imm(1), ptx.Imm(256))
		k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(128)), func() {
			k.TmaStore(k.TensorMapAddr(tmC), []ptx.Operand{ptx.Imm(0), k.Mov(ptx.U32, ptx.CtaidY)}, ptx.At(base, hC))
			k.BulkCommit()
			k.BulkWait(0, true)
			k.BulkWait(0, false)
		})
	})
	return m
}

// TestHopperGolden pins the text of hopperModule and that it needs sm_90a
// and PTX ISA 8.0.
func TestHopperGolden(t *testing.T) {
	b, err := hopperModule().Build()
	if err != nil {
		t.Fatal(err)
	}
	if b.Target() != "sm_90a" || b.Version() != "8.0" {
		t.Errorf("module is %s %s, want sm_90a 8.0", b.Target(), b.Version())
	}
	text := b.String()
	golden(t, "hopper.golden", text)
	checkLabels(t, text)
	checkRegs(t, text)
	if got, want := b.Target()+" "+b.Version(), strings.Replace(rowTarget(t, opcodes(text)), "sm_90", "sm_90a", 1); got != want {
		t.Errorf("module is %s, its rows need %s", got, want)
	}
}

// TestHopperAssemble assembles hopperModule for sm_90a and checks that
// ptxas refuses it for sm_90 (wgmma and setmaxnreg are sm_90a's) and
// keeps setmaxnreg (no C7508 warning: the kernel has .maxnreg).
func TestHopperAssemble(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	b, err := hopperModule().Build()
	if err != nil {
		t.Fatal(err)
	}
	text := b.String()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reports, cubin, err := ptxas.Assemble(ctx, path, text, "sm_90a")
	if err != nil {
		t.Fatalf("%v\nPTX:\n%s", err, numbered(text))
	}
	if len(cubin) == 0 || len(reports) != 1 || reports[0].Function != "wgmma_tile" {
		t.Fatalf("reports %+v, %d cubin bytes", reports, len(cubin))
	}
	if r := reports[0]; r.Registers > 168 {
		t.Errorf("%d registers, above .maxnreg 168", r.Registers)
	}
	if _, _, err := ptxas.Assemble(ctx, path, text, "sm_90"); err == nil {
		t.Errorf("ptxas -arch=sm_90 accepted a module with .target sm_90a")
	}
}
