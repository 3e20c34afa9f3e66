package gemm

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/internal/sweep"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestEmitPreset emits the variants of the preset's shapes (sweep.Pick
// of each shape's: every axis value, then one in 16; every variant with
// GRADTUNE_SWEEP=ci or full): each passes Build's analyses (Emit builds),
// launches what the rules promise (grid, block, shared memory) and
// declares its workspace with split-K.
func TestEmitPreset(t *testing.T) {
	f := Families()[0]
	n := 0
	for _, sp := range preset(t) {
		vs := sp.shape
		s, _ := variants.DecodeShape[Shape](vs.Dims, vs.DType)
		g := problemOf(s)
		for _, ps := range sweep.Pick(sp.points, 4) {
			prog, err := f.Emit(vs, ps)
			if err != nil {
				t.Fatalf("%s %s: %v", vs.Key(), ps, err)
			}
			p, _ := variants.Decode[Params](ps)
			checkProgram(t, g, p, prog, evalAt(t, vs))
			n++
		}
	}
	t.Logf("%d variants emitted (%s)", n, sweep.Describe(4))
}

// evalAt evaluates expressions at shape s.
func evalAt(t *testing.T, s variants.Shape) func(configs.Expr) int {
	return func(e configs.Expr) int {
		v, err := e.EvalInt(kernels.Env(s))
		if err != nil {
			t.Fatalf("%s: %v", s.Key(), err)
		}
		return v
	}
}

func checkProgram(t *testing.T, g problem, p Params, prog kernels.Program, at func(configs.Expr) int) {
	t.Helper()
	main := prog.Launches[0]
	if p.Order == StreamK {
		checkStreamK(t, g, p, prog, at)
		return
	}
	want := tiles(g, p) * p.SplitK
	if p.Persistent {
		// the runner launches min(SMs, Grid[0]) CTAs
		if main.GridPerSM != 1 {
			t.Errorf("%s: a persistent grid of %d CTAs per SM", variants.Encode(p), main.GridPerSM)
		}
	}
	if got := at(main.Grid[0]); got != want || main.SharedBytes != smemBytes(g, p, p.Stages) {
		t.Errorf("%s: grid %d, shared %d; want %d, %d", variants.Encode(p), got, main.SharedBytes, want, smemBytes(g, p, p.Stages))
	}
	if p.Reduce == ReduceDSMEM {
		// one launch in clusters of the splits, no workspace
		if len(prog.Launches) != 1 || len(prog.Buffers) != 0 || main.Cluster != [3]int{p.SplitK, 1, 1} {
			t.Errorf("%s: %d launches, %d buffers, cluster %v", variants.Encode(p), len(prog.Launches), len(prog.Buffers), main.Cluster)
		}
		return
	}
	if want := 1 + min(p.SplitK-1, 1); len(prog.Launches) != want || len(prog.Buffers) != want-1 {
		t.Errorf("%s: %d launches and %d buffers", variants.Encode(p), len(prog.Launches), len(prog.Buffers))
	}
	if p.SplitK > 1 && at(prog.Buffers[0].Elems) != p.SplitK*g.r*g.c {
		t.Errorf("%s: workspace of %s elements", variants.Encode(p), prog.Buffers[0].Elems)
	}
}

// checkStreamK: one launch of min(132, iterations) CTAs, one per SM, with
// the partials' workspace (a slot per CTA) and the flags (one per
// consumer warpgroup of each CTA) as its arguments before m.
func checkStreamK(t *testing.T, g problem, p Params, prog kernels.Program, at func(configs.Expr) int) {
	t.Helper()
	main := prog.Launches[0]
	n := min(numSMs, tiles(g, p)*kTiles(g, p))
	if len(prog.Launches) != 1 || at(main.Grid[0]) != n || main.GridPerSM != 1 || len(main.Args) != 6 || main.Args[4].Buffer != skFlags {
		t.Errorf("%s: %d launches, grid %s, %d per SM, %d args", variants.Encode(p), len(prog.Launches), main.Grid[0], main.GridPerSM, len(main.Args))
	}
	if len(prog.Buffers) != 2 || at(prog.Buffers[0].Elems) != n*p.BM*p.BN || prog.Buffers[0].Role != kernels.Scratch ||
		at(prog.Buffers[1].Elems) != n*p.Consumers || prog.Buffers[1].Role != kernels.State {
		t.Errorf("%s: buffers %+v", variants.Encode(p), prog.Buffers)
	}
}

// TestGoldenSync pins the PTX of one sync variant: dW (both operands
// MN-major, so every ldmatrix is .trans) with split-K.
func TestGoldenSync(t *testing.T) {
	f := Families()[0]
	s := variants.ShapeOf(Shape{M: 300, N: 72, K: 136, Grad: DW, DType: dtype.BF16})
	p := Params{MMA: Sync, BM: 64, BN: 64, BK: 32, Stages: 4, Consumers: 1, Cluster: 1, SplitK: 2, Reduce: ReduceLaunch, Order: OrderM, Epilogue: Direct}
	prog, err := f.Emit(s, variants.Encode(p))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, probs := ptxtest.Labels(prog.PTX); len(probs) > 0 {
		t.Errorf("labels: %v", probs)
	}
	if !strings.Contains(prog.PTX, ".target sm_80") {
		t.Errorf("the sync path must target sm_80")
	}
	ptxtest.Golden(t, *update, "sync_dw_bf16.ptx", prog.PTX)
}

// TestSwizzle: the 8 rows an ldmatrix phase (or a cp.async quarter-warp)
// touches at one logical chunk land in 8 distinct 16-byte bank groups.
func TestSwizzle(t *testing.T) {
	for _, cols := range []int{32, 64, 128} {
		chunks := cols / 8
		for r0 := 0; r0 < 64; r0 += 8 {
			for c := range chunks {
				seen := map[int]bool{}
				for r := r0; r < r0+8; r++ {
					byteOff := r*cols*2 + gen.SwizzledChunk(r, c, chunks)*16
					seen[byteOff/16%8] = true
				}
				if len(seen) != 8 {
					t.Errorf("cols %d rows %d.. chunk %d: %d bank groups", cols, r0, c, len(seen))
				}
			}
		}
	}
}

// TestTileOrder: every order visits each (tile, split) exactly once.
func TestTileOrder(t *testing.T) {
	g := problemOf(Shape{M: 2048, N: 8960, K: 1536, Grad: DW, DType: dtype.BF16}) // 70 × 12 tiles of 128
	for _, o := range []Order{OrderM, OrderN, Grouped} {
		p := Params{BM: 128, BN: 128, BK: 64, SplitK: 2, Cluster: 1, Order: o}
		seen := map[[3]int]bool{}
		for i := range tiles(g, p) * p.SplitK {
			r, c, s := tileOrderGo(g, p, i)
			if r < 0 || r >= tilesR(g, p) || c < 0 || c >= tilesC(g, p) || seen[[3]int{r, c, s}] {
				t.Fatalf("order %s: tile %d maps to (%d, %d, %d)", o, i, r, c, s)
			}
			seen[[3]int{r, c, s}] = true
		}
	}
}

// TestGoldenWgmma pins the PTX of one wgmma variant: dW (A and B
// MN-major, imm-trans on both), two consumers of 64 rows with the
// register split, split-K.
func TestGoldenWgmma(t *testing.T) {
	f := Families()[0]
	s := variants.ShapeOf(Shape{M: 1040, N: 136, K: 200, Grad: DW, DType: dtype.BF16})
	p := Params{MMA: WGMMA, BM: 128, BN: 256, BK: 64, Stages: 4, Consumers: 2, Cluster: 1, SplitK: 2, Reduce: ReduceLaunch, Order: OrderM, Epilogue: Direct, RegSplit: true}
	prog, err := f.Emit(s, variants.Encode(p))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, probs := ptxtest.Labels(prog.PTX); len(probs) > 0 {
		t.Errorf("labels: %v", probs)
	}
	if !strings.Contains(prog.PTX, ".target sm_90a") {
		t.Errorf("the wgmma path must target sm_90a")
	}
	ptxtest.Golden(t, *update, "wgmma_dw_bf16.ptx", prog.PTX)
}

// TestGoldenWgmmaTMAStore pins the PTX of a persistent dX variant with
// the TMA-store epilogue: the staging tile in the 128B swizzle, the
// consumers' named barriers 1 and 2, the bulk group waited for (.read)
// before the staging tile is rewritten and before exit.
func TestGoldenWgmmaTMAStore(t *testing.T) {
	f := Families()[0]
	s := variants.ShapeOf(Shape{M: 1100, N: 72, K: 2056, Grad: DX, DType: dtype.BF16})
	p := Params{MMA: WGMMA, BM: 128, BN: 128, BK: 64, Stages: 2, Consumers: 2, Cluster: 1, SplitK: 1, Reduce: ReduceLaunch, Order: Grouped, Persistent: true, Epilogue: TMAStore, RegSplit: true}
	prog, err := f.Emit(s, variants.Encode(p))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, probs := ptxtest.Labels(prog.PTX); len(probs) > 0 {
		t.Errorf("labels: %v", probs)
	}
	for _, want := range []string{"bar.sync 1, 128;", "bar.sync 2, 128;", "cp.async.bulk.wait_group.read 0;", "fence.proxy.async.shared::cta;"} {
		if !strings.Contains(prog.PTX, want) {
			t.Errorf("missing %q", want)
		}
	}
	ptxtest.Golden(t, *update, "wgmma_dx_tma_bf16.ptx", prog.PTX)
}

// TestEmitRuntimeM: a program is the same at every M, M being a runtime
// dim: the preset's variants (a sample, keyed by shape: one in five; all
// with GRADTUNE_SWEEP=full) emitted at M = 1 and M = 2047 (no rules: the
// space at those M is another) give the PTX, launches and buffers of M =
// 2048, which take M as the parameter m and the expressions of m.
func TestEmitRuntimeM(t *testing.T) {
	pr, _ := variants.LookupPreset("qwen1.5b", 0)
	d, n := def{}, 0
	for _, s := range d.Shapes(pr, dtype.BF16) {
		vs := variants.ShapeOf(s)
		for i, ps := range d.Space(s).Space().Enumerate() {
			if !sweep.TakeKeyed(vs.Key(), i, 5) {
				continue
			}
			p, _ := variants.Decode[Params](ps)
			prog, err := d.Emit(s, p)
			if err != nil {
				t.Fatalf("%s %s: %v", vs.Key(), ps, err)
			}
			if len(prog.RuntimeDims) != 1 || prog.RuntimeDims[0] != "m" || !strings.Contains(prog.PTX, "_param_m") {
				t.Errorf("%s %s: runtime dims %v", vs.Key(), ps, prog.RuntimeDims)
			}
			for _, m := range []int{1, 2047} {
				o := s
				o.M = m
				again, err := d.Emit(o, p)
				switch {
				case err != nil:
					t.Errorf("%s %s at m=%d: %v", vs.Key(), ps, m, err)
				case again.PTX != prog.PTX:
					t.Errorf("%s %s: the PTX at m=%d differs", vs.Key(), ps, m)
				case fmt.Sprint(again.Launches, again.Buffers) != fmt.Sprint(prog.Launches, prog.Buffers):
					t.Errorf("%s %s: the launches at m=%d differ: %v %v", vs.Key(), ps, m, again.Launches, again.Buffers)
				}
			}
			n++
		}
	}
	t.Logf("%d variants emitted at three M, %s", n, sweep.Describe(5))
}
