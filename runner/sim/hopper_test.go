package sim_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
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
	overwrite  bool // thread 0 writes B's tile while the first wgmma group is in flight
	early      bool // consumers arrive on the empty barrier before wgmma.wait_group
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
		if o.overwrite && kt == 0 {
			p("\t@%%p1 st.shared.u32 [smB+64], %%r1;")
		}
		release := "\tmbarrier.arrive.shared::cta.b64 %rd5, [empty];"
		if o.early {
			p("%s", release)
		}
		if o.earlyRead && kt == o.k/64-1 {
			p("\twgmma.wait_group.sync.aligned 1;")
		} else {
			p("\twgmma.wait_group.sync.aligned 0;")
		}
		if !o.early {
			p("%s", release)
		}
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
		spec, err := m.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := be.EncodeTensorMap(spec, p)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tmA := enc(kernels.TensorMap{Buffer: "A", DType: dtype.BF16, Dims: configs.Ints(o.k, 64), Strides: configs.Ints(2 * o.k), Box: []int{64, 64}, Swizzle: 128}, pa)
	tmB := enc(kernels.TensorMap{Buffer: "B", DType: dtype.BF16, Dims: configs.Ints(o.k, o.n), Strides: configs.Ints(2 * o.k), Box: []int{64, o.n}, Swizzle: 128}, pb)
	tmC := enc(kernels.TensorMap{Buffer: "C", DType: dtype.F32, Dims: configs.Ints(o.n, 64), Strides: configs.Ints(4 * o.n), Box: []int{o.n, 64}}, pc)
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
			"with no fence.proxy.async of that thread since"},
		{"shared memory overwritten under an in-flight wgmma", func(o *gemmOpts) { o.overwrite = true }, sim.ErrAsync,
			"writes shared memory that an in-flight wgmma.mma_async or bulk tensor store reads"},
		{"wrong mbarrier parity", func(o *gemmOpts) { o.badParity = true }, sim.ErrDeadlock,
			"waits on the mbarrier at shared"},
		{"accumulators read before wait_group", func(o *gemmOpts) { o.earlyRead = true }, sim.ErrAsync,
			"a register of a wgmma.mma_async that no wgmma.wait_group has waited for"},
		{"slot released before wait_group", func(o *gemmOpts) { o.early = true }, sim.ErrRace,
			"loads into shared memory that a wgmma of warp 1 read with no release ordering the two"},
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

const clusterPTX = `.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(
	.param .align 64 .b8 tm[128],
	.param .u64 out
)
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.reg .f32 %f<4>;
	.shared .align 128 .b8 tile[128];
	.shared .align 8 .b64 bar[1];
	.shared .align 8 .b64 bar2[1];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %cluster_ctarank;
	elect.sync %r3|%p1, 0xffffffff;
	@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
	@%p1 mbarrier.init.shared::cta.b64 [bar2], 1;
	fence.mbarrier_init.release.cluster;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 128;
	setp.eq.u32 %p2, %r2, 0;
	and.pred %p2, %p2, %p1;
	mov.u32 %r4, 0;
	mov.u16 %rs1, 3;
	@%p2 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [tile], [tm, {%r4, %r4}], [bar], %rs1;
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
	@!%p3 bra WAIT;
	ld.param.u64 %rd1, [out];
	shl.b32 %r5, %r1, 2;
	mov.u32 %r6, tile;
	add.u32 %r7, %r6, %r5;
	ld.shared.f32 %f1, [%r7];
	mul.lo.u32 %r8, %r2, 32;
	add.u32 %r8, %r8, %r1;
	mul.wide.u32 %rd2, %r8, 4;
	add.u64 %rd3, %rd1, %rd2;
	st.global.f32 [%rd3], %f1;
	setp.eq.u32 %p2, %r2, 1;
	@!%p2 bra SKIP;
	mapa.shared::cluster.u32 %r9, %r7, 0;
	ld.shared::cluster.f32 %f2, [%r9];
	st.global.f32 [%rd3+128], %f2;
	mapa.shared::cluster.u32 %r10, bar2, 0;
	@%p1 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r10];
SKIP:
	setp.eq.u32 %p2, %r2, 0;
	@!%p2 bra END;
WAIT2:
	mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar2], 0;
	@!%p3 bra WAIT2;
	@%p1 st.global.u32 [%rd1+512], %r2;
END:
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}
`

// TestHopperCluster: a 2-CTA cluster; rank 0 multicasts one TMA box into
// both CTAs' shared memory, each CTA reads it after its own mbarrier
// phase, rank 1 reads rank 0's copy through mapa and arrives on rank 0's
// mbarrier remotely, and rank 0 waits for that arrival.
func TestHopperCluster(t *testing.T) {
	text := strings.Replace(clusterPTX, ".reg .f32 %f<4>;", ".reg .f32 %f<4>;\n\t.reg .b16 %rs<2>;", 1)
	be := sim.New(sim.Options{Workers: 1, MaxSteps: 1 << 20})
	mod, err := be.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := mod.Function("k")
	src := make([]float64, 64)
	for i := range src {
		src[i] = float64(i)
	}
	ps, _ := be.Alloc(256)
	be.Upload(ps, dtype.F32.Encode(src))
	po, _ := be.Alloc(516)
	spec, err := kernels.TensorMap{Buffer: "src", DType: dtype.F32, Dims: configs.Ints(8, 8), Strides: configs.Ints(32), Box: []int{8, 4}}.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := be.EncodeTensorMap(spec, ps)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.LaunchCluster(fn, [3]int{2, 1, 1}, [3]int{32, 1, 1}, [3]int{2, 1, 1}, 0, []any{tm, po}); err != nil {
		t.Fatal(err)
	}
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 516)
	be.Download(out, po)
	got := dtype.F32.Decode(out[:512])
	for i := 0; i < 96; i++ {
		if want := float64(i % 32); got[i] != want {
			t.Fatalf("out[%d] = %v, want %v", i, got[i], want)
		}
	}
	if flag := binary.LittleEndian.Uint32(out[512:]); flag != 0 {
		t.Errorf("rank 0's flag %d, want its rank 0 written after the remote arrival", flag)
	}
	// Without the cluster launch the multicast names a CTA that is not there.
	if err := be.Launch(fn, [3]int{2, 1, 1}, [3]int{32, 1, 1}, 0, []any{tm, po}); err != nil {
		t.Fatal(err)
	}
	if err := be.Sync(); !errors.Is(err, sim.ErrTrap) || !strings.Contains(err.Error(), "ctaMask 0x3 in a cluster of 1 CTAs") {
		t.Errorf("without clusters: got %v, want a trap naming the ctaMask", err)
	}
}

// TestWarpgroupCollectives: wgmma instructions need complete warpgroups
// with all their lanes.
func TestWarpgroupCollectives(t *testing.T) {
	text := ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n\t.reg .b32 %r<2>;\n" +
		"\tmov.u32 %r1, %tid.x;\n\tsetmaxnreg.inc.sync.aligned.u32 232;\n\twgmma.fence.sync.aligned;\n\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n\tret;\n}\n"
	if _, err := launchPTX(t, text, "k", [3]int{1, 1, 1}, [3]int{256, 1, 1}, 0); err != nil {
		t.Errorf("two complete warpgroups: %v", err)
	}
	_, err := launchPTX(t, text, "k", [3]int{1, 1, 1}, [3]int{64, 1, 1}, 0)
	if !errors.Is(err, sim.ErrWarpSync) || !strings.Contains(err.Error(), "is incomplete") {
		t.Errorf("64 threads: got %v, want ErrWarpSync about an incomplete warpgroup", err)
	}
	guarded := strings.Replace(text, "\twgmma.fence", "\tsetp.lt.u32 %p1, %r1, 64;\n\t@%p1 bra SKIP;\n\twgmma.fence", 1)
	guarded = strings.Replace(guarded, "\tret;", "SKIP:\n\tret;", 1)
	guarded = strings.Replace(guarded, ".reg .b32 %r<2>;", ".reg .b32 %r<2>;\n\t.reg .pred %p<2>;", 1)
	_, err = launchPTX(t, guarded, "k", [3]int{1, 1, 1}, [3]int{128, 1, 1}, 0)
	if !errors.Is(err, sim.ErrWarpSync) || !strings.Contains(err.Error(), "exited without executing") {
		t.Errorf("half a warpgroup at wgmma.fence: got %v, want ErrWarpSync", err)
	}
}

// TestRegisterSplit: a register split whose warpgroups end up holding more
// registers than the CTA was allocated (.maxnreg × threads) would wait
// forever in setmaxnreg.inc on a GPU, and is reported as a deadlock.
func TestRegisterSplit(t *testing.T) {
	text := func(inc int) string {
		return fmt.Sprintf(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n.maxnreg 168\n{\n\t.reg .b32 %%r<2>;\n\t.reg .pred %%p<2>;\n"+
			"\tmov.u32 %%r1, %%tid.x;\n\tsetp.lt.u32 %%p1, %%r1, 128;\n\t@%%p1 bra PRODUCER;\n"+
			"\tsetmaxnreg.inc.sync.aligned.u32 %d;\n\tret;\nPRODUCER:\n\tsetmaxnreg.dec.sync.aligned.u32 96;\n\tret;\n}\n", inc)
	}
	if _, err := launchPTX(t, text(200), "k", [3]int{1, 1, 1}, [3]int{384, 1, 1}, 0); err != nil {
		t.Errorf("96 + 2×200 of 3×168 registers: %v", err)
	}
	_, err := launchPTX(t, text(208), "k", [3]int{1, 1, 1}, [3]int{384, 1, 1}, 0)
	if !errors.Is(err, sim.ErrDeadlock) || !strings.Contains(err.Error(), "hold 65536 registers") || !strings.Contains(err.Error(), "allocated 64512") {
		t.Errorf("96 + 2×208 of 3×168 registers: got %v, want ErrDeadlock naming both totals", err)
	}
}

// TestStmatrix: stmatrix writes the rows ldmatrix reads, with and without
// .trans, and elect.sync elects lane 0.
func TestStmatrix(t *testing.T) {
	text := `.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<12>;
	.reg .b64 %rd<4>;
	.reg .pred %p<2>;
	.shared .align 16 .b8 sm[256];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 1;
	add.u32 %r3, %r2, 1;
	shl.b32 %r3, %r3, 16;
	or.b32 %r4, %r2, %r3;
	and.b32 %r5, %r1, 7;
	shl.b32 %r5, %r5, 4;
	mov.u32 %r6, sm;
	add.u32 %r6, %r6, %r5;
	stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r6], {%r4};
	add.u32 %r9, %r6, 128;
	stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%r9], {%r4};
	bar.sync 0;
	ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r7}, [%r9];
	ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r8}, [%r9];
	elect.sync %r10|%p1, 0xffffffff;
	ld.param.u64 %rd1, [out];
	mul.wide.u32 %rd2, %r1, 12;
	add.u64 %rd2, %rd1, %rd2;
	st.global.u32 [%rd2], %r7;
	st.global.u32 [%rd2+4], %r8;
	selp.u32 %r11, 1, 0, %p1;
	add.u32 %r11, %r11, %r10;
	st.global.u32 [%rd2+8], %r11;
	ret;
}
`
	out, err := launchPTX(t, text, "k", [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, make([]byte, 12*32))
	if err != nil {
		t.Fatal(err)
	}
	for l := 0; l < 32; l++ {
		rt := binary.LittleEndian.Uint32(out[0][12*l:])
		tr := binary.LittleEndian.Uint32(out[0][12*l+4:])
		el := binary.LittleEndian.Uint32(out[0][12*l+8:])
		if want := uint32(2*l) | uint32(2*l+1)<<16; rt != want {
			t.Errorf("lane %d: trans round trip %#x, want %#x", l, rt, want)
		}
		// Transposed store, plain load: lane l gets row l/4 of the
		// transpose, i.e. the elements at rows 2(l%4), 2(l%4)+1 of column
		// l/4 of the original, which lanes 4·row + col/2 held.
		v := func(r, c int) uint32 { return uint32(2*(4*r+c/2) + c%2) }
		if want := v(2*(l%4), l/4) | v(2*(l%4)+1, l/4)<<16; tr != want {
			t.Errorf("lane %d: transposed %#x, want %#x", l, tr, want)
		}
		if want := uint32(map[bool]uint32{true: 1}[l == 0]); el != want {
			t.Errorf("lane %d: elect %d, want %d", l, el, want)
		}
	}
}

// TestBuilderHopperPTX: the module kernels/ptx's Hopper API prints (its
// golden file) decodes: tensor maps by parameter address (mov, cvta.param),
// immediate coordinates, elect.sync _|p, register-A wgmma, createpolicy and
// a TMA load with its cache policy.
func TestBuilderHopperPTX(t *testing.T) {
	text, err := os.ReadFile("../../kernels/ptx/testdata/hopper.golden")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.New(sim.Options{}).Load(string(text)); err != nil {
		t.Fatal(err)
	}
}

// bulkKernel copies size bytes of in at srcOff into shared memory by one
// cp.async.bulk (thread 0, an mbarrier expecting them), and after every
// thread's wait bulk-stores them to out at dstOff.
func bulkKernel(srcOff, dstOff int64, size int) *ptx.Module {
	m := ptx.NewModule()
	k := m.Func("bulk")
	in := k.Cvta(ptx.Global, k.LdParam(k.Param("in", ptx.U64)))
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	hold := ptx.At(k.Mov(ptx.U32, k.SharedArray("hold", ptx.B32, 64, 16)), 0)
	bar := ptx.At(k.Mov(ptx.U32, k.SharedArray("bar", ptx.B64, 1, 8)), 0)
	t0 := k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(0))
	k.If(t0, func() { k.MbarInit(bar, ptx.Imm(1)) })
	k.BarSync(0)
	k.If(t0, func() {
		k.MbarArriveExpectTx(bar, ptx.Imm(int64(size)))
		k.BulkLoad(hold, ptx.At(in, srcOff), ptx.Imm(int64(size)), bar)
	})
	k.MbarWait(bar, ptx.Imm(0))
	k.If(t0, func() {
		k.BulkStore(ptx.At(out, dstOff), hold, ptx.Imm(int64(size)))
		k.BulkCommit()
		k.BulkWait(0, true)
	})
	return m
}

// TestBulkGlobalCopies: cp.async.bulk from global into shared memory and
// back moves the bytes; a misaligned address, a size that is not a
// multiple of 16 and bytes outside the buffer are faults.
func TestBulkGlobalCopies(t *testing.T) {
	in := make([]byte, 128)
	for i := range in {
		in[i] = byte(i + 1)
	}
	out, err := launch(t, bulkKernel(16, 32, 48), "bulk", 1, 32, 0, in, make([]byte, 128))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range out[1] {
		want := byte(0)
		if i >= 32 && i < 80 {
			want = in[i-16]
		}
		if b != want {
			t.Fatalf("out[%d] = %d, want %d", i, b, want)
		}
	}
	for _, c := range []struct {
		src, dst int64
		size     int
		want     string
	}{
		{8, 0, 32, "16-byte aligned global address"},
		{0, 8, 32, "16-byte aligned global address"},
		{96, 0, 48, "cp.async.bulk:"},
		{0, 96, 48, "cp.async.bulk:"},
	} {
		_, err := launch(t, bulkKernel(c.src, c.dst, c.size), "bulk", 1, 32, 0, in, make([]byte, 128))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("src %d, dst %d, %d bytes: %v, want an error containing %q", c.src, c.dst, c.size, err, c.want)
		}
	}
}

// twoBulkKernel brings two 32-byte halves of in into shared memory by two
// cp.async.bulk copies on two mbarriers; every thread waits on the first
// barrier, and on the second too when both is set, then thread 0 stores
// the second half's first word to out.
func twoBulkKernel(both bool) *ptx.Module {
	m := ptx.NewModule()
	k := m.Func("two")
	in := k.Cvta(ptx.Global, k.LdParam(k.Param("in", ptx.U64)))
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	hold := k.Mov(ptx.U32, k.SharedArray("hold", ptx.B32, 16, 16))
	bars := k.Mov(ptx.U32, k.SharedArray("bars", ptx.B64, 2, 8))
	bar := func(i int64) ptx.Addr { return ptx.At(bars, 8*i) }
	t0 := k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(0))
	k.If(t0, func() { k.MbarInit(bar(0), ptx.Imm(1)); k.MbarInit(bar(1), ptx.Imm(1)) })
	k.BarSync(0)
	k.If(t0, func() {
		for i := range int64(2) {
			k.MbarArriveExpectTx(bar(i), ptx.Imm(32))
			k.BulkLoad(ptx.At(hold, 32*i), ptx.At(in, 32*i), ptx.Imm(32), bar(i))
		}
	})
	k.MbarWait(bar(0), ptx.Imm(0))
	if both {
		k.MbarWait(bar(1), ptx.Imm(0))
	}
	k.If(t0, func() {
		v := k.Ld(ptx.Shared, ptx.B32, 1, ptx.At(hold, 32))
		k.St(ptx.Global, ptx.B32, ptx.At(out, 0), v)
	})
	return m
}

// TestCopiesLandOnTheirBarrier: a copy completes only when a warp waits
// on its own mbarrier (or nothing else can make progress), so reading the
// second copy's bytes after waiting on the first barrier alone is an
// access to an in-flight copy; waiting on both reads the bytes.
func TestCopiesLandOnTheirBarrier(t *testing.T) {
	in := make([]byte, 64)
	for i := range in {
		in[i] = byte(i + 1)
	}
	out, err := launch(t, twoBulkKernel(true), "two", 1, 32, 0, in, make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	if out[1][0] != 33 {
		t.Errorf("out[0] = %d, want 33", out[1][0])
	}
	if _, err := launch(t, twoBulkKernel(false), "two", 1, 32, 0, in, make([]byte, 16)); err == nil || !strings.Contains(err.Error(), "in-flight") {
		t.Errorf("the second copy read after waiting on the first barrier alone: %v, want an in-flight access", err)
	}
}
