package gemm_test

import (
	"fmt"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/variants"
)

// skParams is a stream-K variant: bm×bn tiles, stages deep, the epilogue.
func skParams(bm, bn, stages int, ep gemm.Epilogue) gemm.Params {
	return gemm.Params{MMA: gemm.WGMMA, BM: bm, BN: bn, BK: 64, Stages: stages, Consumers: consumersFor(bm),
		Cluster: 1, SplitK: 1, Reduce: gemm.ReduceLaunch, Order: gemm.StreamK, Persistent: true, Epilogue: ep, RegSplit: true}
}

// TestStreamKOnInterpreter runs stream-K programs on the interpreter
// with grids smaller than the launch asks for (as a GPU with fewer SMs
// would run them): one CTA doing everything, fewer CTAs than tiles,
// tiles spread over three to five CTAs, one k-tile per CTA. Shapes have
// tails in every dimension, both grads, bf16, f16 and an f32 dW, one and
// two consumers, one and two m64 blocks per consumer, both epilogues and
// a long reduction, each on the random and the exact inputs. Each
// program runs twice: the runner's validation also checks that the flags
// are left zero. By default each case runs on its first grid, with
// GRADTUNE_SWEEP=ci or full on all of them.
func TestStreamKOnInterpreter(t *testing.T) {
	for _, c := range []struct {
		s     gemm.Shape
		p     gemm.Params
		grids []int
	}{
		// C 200×136, l = 300: 2×2 tiles of 5 k-tiles (20 iterations)
		{gemm.Shape{M: 300, N: 200, K: 136, Grad: gemm.DW, DType: dtype.BF16}, skParams(128, 128, 4, gemm.TMAStore), []int{1, 3, 7, 20}},
		{gemm.Shape{M: 300, N: 200, K: 136, Grad: gemm.DW, DType: dtype.F16}, skParams(128, 128, 4, gemm.Direct), []int{3, 7}},
		{gemm.Shape{M: 300, N: 200, K: 136, Grad: gemm.DW, Out: "f32", DType: dtype.BF16}, skParams(128, 192, 3, gemm.TMAStore), []int{3, 10}},
		// dX C 200×136, l = 296, 64×64 tiles: 4×3 tiles of 5 k-tiles
		{gemm.Shape{M: 200, N: 296, K: 136, Grad: gemm.DX, DType: dtype.F16}, skParams(64, 64, 4, gemm.Direct), []int{5, 13}},
		{gemm.Shape{M: 200, N: 296, K: 136, Grad: gemm.DX, DType: dtype.BF16}, skParams(64, 128, 4, gemm.TMAStore), []int{7}},
		// dX C 300×200, l = 136 (3 k-tiles), 256×128 tiles: two m64 blocks per consumer
		{gemm.Shape{M: 300, N: 136, K: 200, Grad: gemm.DX, DType: dtype.BF16}, skParams(256, 128, 2, gemm.Direct), []int{5}},
		{gemm.Shape{M: 300, N: 136, K: 200, Grad: gemm.DX, DType: dtype.F16}, skParams(256, 128, 2, gemm.TMAStore), []int{12}},
		// three consumers on 192×96 tiles (B and the staging tile in the
		// 64B swizzle) and 128×160: dW C 200×136 over 5 k-tiles
		{gemm.Shape{M: 300, N: 200, K: 136, Grad: gemm.DW, DType: dtype.BF16}, skParams(192, 96, 4, gemm.TMAStore), []int{3, 7}},
		{gemm.Shape{M: 300, N: 200, K: 136, Grad: gemm.DW, DType: dtype.F16}, skParams(192, 96, 4, gemm.Direct), []int{5}},
		{gemm.Shape{M: 300, N: 200, K: 136, Grad: gemm.DW, Out: "f32", DType: dtype.BF16}, skParams(128, 160, 4, gemm.TMAStore), []int{4}},
		// l = 1100: 1×2 tiles of 18 k-tiles
		{gemm.Shape{M: 1100, N: 72, K: 136, Grad: gemm.DW, DType: dtype.BF16}, skParams(128, 128, 4, gemm.TMAStore), []int{7}},
	} {
		grids := c.grids
		if sweep.Current() < sweep.CI {
			grids = grids[:1] // the first grid of each case by default
		}
		for _, grid := range grids {
			name := fmt.Sprintf("%s/%s/grid=%d", variants.ShapeOf(c.s).Key(), variants.Encode(c.p), grid)
			if err := streamKRun(c.s, c.p, grid); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// streamKRun validates p at s on the interpreter with a grid of the given
// CTAs, twice.
func streamKRun(s gemm.Shape, p gemm.Params, grid int) error {
	prog, err := gemm.EmitUnchecked(s, p)
	if err != nil {
		return err
	}
	asked, err := prog.Launches[0].Grid[0].EvalInt(kernels.Env(variants.ShapeOf(s)))
	if err != nil {
		return err
	}
	if grid > asked {
		return fmt.Errorf("grid %d: the launch asks for %d CTAs", grid, asked)
	}
	prog.Launches[0].Grid[0] = configs.Int(grid)
	return validateAt(s, prog, 2)
}

// consumersFor is the wgmma rule's consumer count: one on 64-row tiles.
func consumersFor(bm int) int {
	switch bm {
	case 64:
		return 1
	case 192:
		return 3
	}
	return 2
}

// TestStreamKSpaceOnInterpreter runs the stream-K points of the space
// where wgmmaShapes have them (153 tiles of 128×128 over two k-tiles, on
// the launch's own grid of 132 CTAs: fewer CTAs than tiles, most tiles
// split over two CTAs), both grads, both epilogues: a sample (one in 16;
// one in 2 with GRADTUNE_SWEEP=ci, all with full).
func TestStreamKSpaceOnInterpreter(t *testing.T) {
	simSample(t, wgmmaShapes[len(wgmmaShapes)-2:], 8, func(p gemm.Params) bool { return p.Order == gemm.StreamK })
}
