package sim_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
)

// gemmOpts select the variant of the hand-written Hopper GEMM below, and
// the bugs planted in it.
type gemmOpts struct {
	n, k       int  // C[64×n] = A[64×k]·B[n×k]ᵀ, k a multiple of 64
	descLayout int  // descriptor layout field (1: 128B swizzle, as the TMA map; 2: 64B)
	sbo        int  // descriptor stride byte offset (1024)
	noFence    bool // epilogue: no fence.proxy.async between st.shared and the TMA store
	badParity  bool // producer waits on the empty barrier's current phase on its first pass
	earlyRead  bool // last k-tile: wgmma.wait_group 1 instead of 0 before reading the accumulators
}

func defaultGemm() gemmOpts { return gemmOpts{n: 64, k: 192, descLayout: 1, sbo: 1024} }

// gemmPTX writes a single-warpgroup GEMM in the sm_90 style: thread 0
// produces (waits on the empty mbarrier, expects the bytes on the full
// one, issues TMA loads of A and B with 128B swizzle), all 128 threads
// consume (wait on full, wgmma ×4 per 64-wide k-tile from swizzled
// descriptors, wait_group, arrive on empty), and the epilogue stores the
// accumulators to shared memory and TMA-stores C.
func gemmPTX(o gemmOpts) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	nacc := o.n / 2
	p(".version 8.0\n.target sm_90a\n.address_size 64\n")
	p(".visible .entry gemm(\n\t.param .align 64 .b8 tmA[128],\n\t.param .align 64 .b8 tmB[128],\n\t.param .align 64 .b8 tmC[128]\n)\n{")
	p("\t.reg .pred %%p<4>;\n\t.reg .b32 %%r<16>;\n\t.reg .b64 %%rd<16>;\n\t.reg .f32 %%f<%d>;", nacc)
	p("\t.shared .align 1024 .b8 smA[8192];\n\t.shared .align 1024 .b8 smB[%d];\n\t.shared .align 128 .b8 smC[%d];", o.n*128, 64*o.n*4)
	p("\t.shared .align 8 .b64 full[1];\n\t.shared .align 8 .b64 empty[1];")
	p("\tmov.u32 %%r1, %%tid.x;\n\tsetp.eq.u32 %%p1, %%r1, 0;")
	p("\t@%%p1 mbarrier.init.shared::cta.b64 [full], 1;\n\t@%%p1 mbarrier.init.shared::cta.b64 [empty], 128;")
	p("\tfence.mbarrier_init.release.cluster;\n\tbar.sync 0;")
	// Descriptors: start>>4 | LBO 16>>4 << 16 | SBO>>4 << 32 | layout << 62.
	hi := uint64(1)<<16 | uint64(o.sbo>>4)<<32 | uint64(o.descLayout)<<62
	p("\tmov.u64 %%rd1, smA;\n\tshr.u64 %%rd1, %%rd1, 4;\n\tor.b64 %%rd1, %%rd1, %d;", hi)
	p("\tmov.u64 %%rd2, smB;\n\tshr.u64 %%rd2, %%rd2, 4;\n\tor.b64 %%rd2, %%rd2, %d;", hi)
	bytes := 8192 + o.n*128
	for kt := 0; kt < o.k/64; kt++ {
		par := kt & 1
		ep := par ^ 1
		if o.badParity {
			ep = par
		}
		p("\t@!%%p1 bra PRODUCED%d;", kt)
		p("EMPTY%d:\n\tmbarrier.try_wait.parity.shared::cta.b64 %%p2, [empty], %d;\n\t@!%%p2 bra EMPTY%d;", kt, ep, kt)
		p("\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [full], %d;", bytes)
		p("\tmov.u32 %%r2, %d;\n\tmov.u32 %%r3, 0;", kt*64)
		p("\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [smA], [tmA, {%%r2, %%r3}], [full];")
		p("\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [smB], [tmB, {%%r2, %%r3}], [full];")
		p("PRODUCED%d:", kt)
		p("FULL%d:\n\tmbarrier.try_wait.parity.shared::cta.b64 %%p3, [full], %d;\n\t@!%%p3 bra FULL%d;", kt, par, kt)
		p("\twgmma.fence.sync.aligned;")
		var acc []string
		for i := 0; i < nacc; i++ {
			acc = append(acc, fmt.Sprintf("%%f%d", i))
		}
		for kk := 0; kk < 4; kk++ {
			p("\tadd.s64 %%rd3, %%rd1, %d;\n\tadd.s64 %%rd4, %%rd2, %d;", 2*kk, 2*kk)
			scale := 1
			if kt == 0 && kk == 0 {
				scale = 0
			}
			p("\twgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16 {%s}, %%rd3, %%rd4, %d, 1, 1, 0, 0;", o.n, strings.Join(acc, ", "), scale)
		}
		p("\twgmma.commit_group.sync.aligned;")
		if o.earlyRead && kt == o.k/64-1 {
			p("\twgmma.wait_group.sync.aligned 1;")
		} else {
			p("\twgmma.wait_group.sync.aligned 0;")
		}
		p("\tmbarrier.arrive.shared::cta.b64 %%rd5, [empty];")
	}
	// Epilogue: thread (warp w, lane l) holds rows 16w + l/4 (+8), columns 8j + 2(l%4) (+1).
	p("\tshr.u32 %%r4, %%r1, 5;\n\tand.b32 %%r5, %%r1, 31;\n\tshr.u32 %%r6, %%r5, 2;\n\tshl.b32 %%r4, %%r4, 4;\n\tadd.u32 %%r4, %%r4, %%r6;")
	p("\tand.b32 %%r7, %%r5, 3;\n\tshl.b32 %%r7, %%r7, 1;")
	p("\tmul.lo.u32 %%r8, %%r4, %d;\n\tadd.u32 %%r8, %%r8, %%r7;\n\tshl.b32 %%r8, %%r8, 2;\n\tmov.u32 %%r9, smC;\n\tadd.u32 %%r8, %%r8, %%r9;", o.n)
	for j := 0; j < o.n/8; j++ {
		p("\tst.shared.v2.f32 [%%r8+%d], {%%f%d, %%f%d};", 32*j, 4*j, 4*j+1)
		p("\tst.shared.v2.f32 [%%r8+%d], {%%f%d, %%f%d};", 32*j+8*o.n*4, 4*j+2, 4*j+3)
	}
	if !o.noFence {
		p("\tfence.proxy.async.shared::cta;")
	}
	p("\tbar.sync 0;\n\t@!%%p1 bra DONE;\n\tmov.u32 %%r2, 0;")
	p("\tcp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tmC, {%%r2, %%r2}], [smC];")
	p("\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 0;\nDONE:\n\tret;\n}")
	return b.String()
}

// runGemm runs gemmPTX(o) on small-integer A and B and returns C and the
// float64 reference.
func runGemm(t *testing.T, o gemmOpts) (got, want []float32, err error) {
	t.Helper()
	be := sim.New(sim.Options{Workers: 1, MaxSteps: 1 << 22})
	mod, err := be.Load(gemmPTX(o))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("gemm")
	if err != nil {
		t.Fatal(err)
	}
	a := make([]float64, 64*o.k)
	bm := make([]float64, o.n*o.k)
	for i := range a {
		a[i] = float64((i*7+i/o.k*3)%7 - 3)
	}
	for i := range bm {
		bm[i] = float64((i*5+i/o.k)%7 - 3)
	}
	want = make([]float32, 64*o.n)
	for i := 0; i < 64; i++ {
		for j := 0; j < o.n; j++ {
			s := 0.0
			for k := 0; k < o.k; k++ {
				s += a[i*o.k+k] * bm[j*o.k+k]
			}
			want[i*o.n+j] = float32(s)
		}
	}
	up := func(b []byte) runner.Ptr {
		p, err := be.Alloc(len(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := be.Upload(p, b); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pa, pb := up(dtype.BF16.Encode(a)), up(dtype.BF16.Encode(bm))
	pc := up(make([]byte, 4*64*o.n))
	enc := func(m kernels.TensorMap, p runner.Ptr) runner.TensorMapArg {
		tm, err := be.EncodeTensorMap(m, p)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tmA := enc(kernels.TensorMap{Buffer: "A", DType: dtype.BF16, Dims: []int{o.k, 64}, Strides: []int{2 * o.k}, Box: []int{64, 64}, Swizzle: 128}, pa)
	tmB := enc(kernels.TensorMap{Buffer: "B", DType: dtype.BF16, Dims: []int{o.k, o.n}, Strides: []int{2 * o.k}, Box: []int{64, o.n}, Swizzle: 128}, pb)
	tmC := enc(kernels.TensorMap{Buffer: "C", DType: dtype.F32, Dims: []int{o.n, 64}, Strides: []int{4 * o.n}, Box: []int{o.n, 64}}, pc)
	if err := be.Launch(fn, [3]int{1, 1, 1}, [3]int{128, 1, 1}, 0, []any{tmA, tmB, tmC}); err != nil {
		t.Fatal(err)
	}
	err = be.Sync()
	out := make([]byte, 4*64*o.n)
	if derr := be.Download(out, pc); derr != nil {
		t.Fatal(derr)
	}
	got = make([]float32, 64*o.n)
	for i := range got {
		got[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
	}
	return got, want, err
}

func mismatches(got, want []float32) int {
	n := 0
	for i := range got {
		if got[i] != want[i] {
			n++
		}
	}
	return n
}

// TestHopperGemm: TMA loads with 128B swizzle, wgmma from swizzled
// descriptors and a TMA-store epilogue reproduce the float64 reference
// bit for bit on small integers, for several N.
func TestHopperGemm(t *testing.T) {
	for _, n := range []int{8, 64, 136} {
		o := defaultGemm()
		o.n = n
		got, want, err := runGemm(t, o)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if m := mismatches(got, want); m != 0 {
			t.Errorf("n=%d: %d of %d elements differ from the reference (C[0..3] %v, want %v)", n, m, len(got), got[:4], want[:4])
		}
	}
}

// TestHopperLayoutBugs: a descriptor that disagrees with the TMA map
// (64B swizzle against 128B, or a wrong stride byte offset) runs but
// computes the wrong product, which comparing with the reference shows.
func TestHopperLayoutBugs(t *testing.T) {
	for name, bug := range map[string]func(*gemmOpts){
		"64B swizzle in the descriptor": func(o *gemmOpts) { o.descLayout = 2 },
		"stride byte offset 512":        func(o *gemmOpts) { o.sbo = 512 },
	} {
		o := defaultGemm()
		bug(&o)
		got, want, err := runGemm(t, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if mismatches(got, want) == 0 {
			t.Errorf("%s: the result matches the reference; the bug went unseen", name)
		}
	}
}

// TestHopperOrderingBugs: planted ordering bugs end in clear errors.
func TestHopperOrderingBugs(t *testing.T) {
	for _, c := range []struct {
		name string
		bug  func(*gemmOpts)
		want error
		text string
	}{
		{"missing fence.proxy.async", func(o *gemmOpts) { o.noFence = true }, sim.ErrProxy,
			"executed no fence.proxy.async since"},
		{"wrong mbarrier parity", func(o *gemmOpts) { o.badParity = true }, sim.ErrDeadlock,
			"waits on the mbarrier at shared"},
		{"accumulators read before wait_group", func(o *gemmOpts) { o.earlyRead = true }, sim.ErrAsync,
			"a register of a wgmma.mma_async that no wgmma.wait_group has waited for"},
	} {
		o := defaultGemm()
		c.bug(&o)
		_, _, err := runGemm(t, o)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: got %v, want %v containing %q", c.name, err, c.want, c.text)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}
