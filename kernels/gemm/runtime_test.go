package gemm_test

import (
	"fmt"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// wgParams is a wgmma variant of bm×bn tiles, stages deep, with the
// rule's consumers and the register split; the options set the rest.
func wgParams(bm, bn, stages int, opts ...func(*gemm.Params)) gemm.Params {
	p := gemm.Params{MMA: gemm.WGMMA, BM: bm, BN: bn, BK: 64, Stages: stages, Consumers: consumersFor(bm), Cluster: 1,
		SplitK: 1, Reduce: gemm.ReduceLaunch, Order: gemm.OrderM, Epilogue: gemm.Direct, RegSplit: true}
	for _, o := range opts {
		o(&p)
	}
	return p
}

// syncParams is a sync variant of bm×bn tiles (8 warps on 128×128).
func syncParams(bm, bn, stages int, opts ...func(*gemm.Params)) gemm.Params {
	p := gemm.Params{MMA: gemm.Sync, BM: bm, BN: bn, BK: 32, Stages: stages, Consumers: 1, Cluster: 1,
		SplitK: 1, Reduce: gemm.ReduceLaunch, Order: gemm.OrderM, Epilogue: gemm.Direct}
	if bm == 128 && bn == 128 {
		p.Consumers = 2
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func tma(p *gemm.Params)        { p.Epilogue = gemm.TMAStore }
func persistent(p *gemm.Params) { p.Persistent, p.Order = true, gemm.Grouped }
func grouped(p *gemm.Params)    { p.Order = gemm.Grouped }
func streamK(p *gemm.Params)    { p.Persistent, p.Order = true, gemm.StreamK }
func cluster2(p *gemm.Params)   { p.Cluster, p.Multicast, p.Epilogue = 2, true, gemm.TMAStore }
func splitK(s int) func(*gemm.Params) {
	return func(p *gemm.Params) { p.SplitK = s }
}
func dsmem(s int) func(*gemm.Params) {
	return func(p *gemm.Params) { p.SplitK, p.Reduce = s, gemm.ReduceDSMEM }
}

// TestRuntimeMOnInterpreter emits programs at one M and runs them on the
// interpreter at others: dX (M is C's rows) at 1 and at the row tails of
// 64-, 128- and 192-row tiles (63, 65, 190), fewer tile rows than a
// cluster or a group of the grouped order, an odd count of tile rows in
// clusters of two; dW (M is the reduction) at 1, at fewer k-tiles than
// the ring's stages or than the splits (a split without k-tiles stores a
// zero partial), at stages−1 k-tiles and a 17-row tail, and a long
// reduction (1100); stream-K with fewer iterations than CTAs. Every run
// is validated on the random and the exact inputs.
// Every program must be the one emitted at the other M, byte for byte,
// with the same launches and buffers as expressions.
func TestRuntimeMOnInterpreter(t *testing.T) {
	dx := func(n, k int) gemm.Shape { return gemm.Shape{M: 300, N: n, K: k, Grad: gemm.DX, DType: dtype.BF16} }
	dw := func(n, k int) gemm.Shape { return gemm.Shape{M: 300, N: n, K: k, Grad: gemm.DW, DType: dtype.BF16} }
	dxMs := []int{1, 63, 65, 190}
	runs := 0
	for _, c := range []struct {
		s  gemm.Shape
		p  gemm.Params
		ms []int
	}{
		// dX: C [M×136], a reduction of 200 (4 k-tiles)
		{dx(200, 136), wgParams(128, 128, 4), dxMs},
		{dx(200, 136), wgParams(128, 128, 4, tma, persistent), dxMs},
		{dx(200, 136), wgParams(64, 64, 4, tma, grouped), []int{1, 65, 190}},
		{dx(200, 136), wgParams(192, 96, 4, tma), []int{1, 190, 193}},
		{dx(200, 136), wgParams(256, 128, 2), []int{1, 190, 257}},
		{dx(200, 136), wgParams(128, 128, 4, cluster2), []int{1, 129, 257}},
		{dx(200, 136), wgParams(128, 128, 4, cluster2, persistent), []int{1, 257}},
		{dx(200, 136), wgParams(64, 64, 4, splitK(2)), []int{1, 65}},
		{dx(200, 136), wgParams(64, 64, 2, dsmem(2)), []int{1, 65}},
		{dx(200, 136), wgParams(128, 128, 4, streamK, tma), []int{1, 65, 190}},
		{dx(200, 136), syncParams(64, 64, 4), dxMs},
		{dx(200, 136), syncParams(128, 128, 3, splitK(2)), []int{1, 63, 190}},
		// dW: C [72×136], a reduction of M; 4 stages hold 3 k-tiles in flight
		{dw(72, 136), wgParams(128, 128, 4), []int{1, 17, 3*64 + 17, 4*64 + 1}},
		{dw(72, 136), wgParams(128, 128, 4, tma), []int{1, 3*64 + 17, 1100}},
		{dw(72, 136), wgParams(64, 64, 12, persistent), []int{1, 11*64 + 17}},
		{dw(72, 136), wgParams(64, 64, 4, splitK(3)), []int{1, 65, 3*64 + 17}},
		{dw(72, 136), wgParams(64, 64, 2, dsmem(4)), []int{1, 65, 129}},
		{dw(72, 136), wgParams(64, 64, 4, streamK), []int{1, 65, 3*64 + 17}},
		{dw(256, 136), wgParams(128, 128, 4, cluster2), []int{1, 3*64 + 17}},
		{dw(72, 136), syncParams(64, 64, 4, splitK(2)), []int{1, 17, 3*32 + 17}},
		{dw(72, 136), syncParams(128, 128, 4), []int{1, 3*32 + 17, 1100}},
		{gemm.Shape{M: 300, N: 72, K: 136, Grad: gemm.DW, Out: "f32", DType: dtype.F16}, wgParams(64, 64, 4, splitK(2)), []int{1, 65}},
	} {
		prog, err := gemm.EmitUnchecked(c.s, c.p)
		if err != nil {
			t.Fatalf("%s %s: %v", variants.ShapeOf(c.s).Key(), variants.Encode(c.p), err)
		}
		for _, m := range c.ms {
			o := c.s
			o.M = m
			name := fmt.Sprintf("%s %s emitted at m=%d", variants.ShapeOf(o).Key(), variants.Encode(c.p), c.s.M)
			if err := sameProgram(o, c.p, prog); err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if err := validateAt(o, prog, 1); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			runs++
		}
	}
	t.Logf("%d programs run at another M", runs)
}

// sameProgram checks that p emitted at s is prog: the same PTX, launches
// and buffers.
func sameProgram(s gemm.Shape, p gemm.Params, prog kernels.Program) error {
	again, err := gemm.EmitUnchecked(s, p)
	switch {
	case err != nil:
		return err
	case again.PTX != prog.PTX:
		return fmt.Errorf("the PTX differs")
	case fmt.Sprint(again.Launches) != fmt.Sprint(prog.Launches) || fmt.Sprint(again.Buffers) != fmt.Sprint(prog.Buffers):
		return fmt.Errorf("the launches or buffers differ:\n%v %v\n%v %v", again.Launches, again.Buffers, prog.Launches, prog.Buffers)
	}
	return nil
}

// validateAt runs prog at shape s on the interpreter, runs times, and
// validates each run.
func validateAt(s gemm.Shape, prog kernels.Program, runs int) error {
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	if err := ss.Prepare(gemm.Families()[0], variants.ShapeOf(s), 1); err != nil {
		return err
	}
	l, err := ss.Load(prog)
	if err != nil {
		return err
	}
	defer l.Unload()
	for run := range runs {
		c, err := ss.Validate(l)
		if err != nil {
			return fmt.Errorf("run %d: %w", run, err)
		}
		if !c.OK {
			return fmt.Errorf("run %d: %s (max abs error %g)", run, c.Message, c.MaxAbs)
		}
	}
	return nil
}
