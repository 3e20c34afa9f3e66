package ptx_test

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/ptx"
)

// TestHopperHelpers pins the PTX each Hopper helper prints and the target
// it raises the module to.
func TestHopperHelpers(t *testing.T) {
	type env struct {
		k    *ptx.Func
		base ptx.Reg // u32 shared address
		desc ptx.Reg
	}
	cases := []struct {
		name   string
		emit   func(e env)
		want   []string
		target string
	}{
		{"descriptor 128B", func(e env) { e.k.WgmmaDesc(e.base, 16, 1024, ptx.Swizzle128B) },
			[]string{"bfe.u32 %r3, %r2, 4, 14;", "cvt.u64.u32 %rd1, %r3;", "or.b64 %rd2, %rd1, 4611686293305360384;"}, "sm_80 7.0"},
		{"descriptor 32B, MN-major", func(e env) { e.k.WgmmaDesc(e.base, 8192, 1024, ptx.Swizzle32B) },
			[]string{"or.b64 %rd2, %rd1, -4611685743515926528;"}, "sm_80 7.0"},
		{"descriptor advance", func(e env) { e.k.WgmmaDescAdd(e.desc, 32) }, []string{"add.s64 %rd2, %rd1, 2;"}, "sm_80 7.0"},
		{"wgmma SS", func(e env) {
			e.k.Wgmma(ptx.BF16, e.k.WgmmaAcc(16), e.desc, e.desc, ptx.WgmmaOpts{ScaleD: ptx.Imm(0), TransB: true})
		}, []string{"wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, %rd1, %rd1, 0, 1, 1, 0, 1;"}, "sm_90a 8.0"},
		{"wgmma SS, predicate scale, negated, transposed A", func(e env) {
			p := e.k.Setp("ne", ptx.U32, e.base, ptx.Imm(0))
			e.k.Wgmma(ptx.F16, e.k.WgmmaAcc(8), e.desc, e.desc, ptx.WgmmaOpts{ScaleD: p, NegA: true, NegB: true, TransA: true})
		}, []string{"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd1, %p1, -1, -1, 1, 0;"}, "sm_90a 8.0"},
		{"wgmma RS", func(e env) {
			a := e.k.Mov(ptx.B32, ptx.Imm(0))
			e.k.WgmmaRegA(ptx.BF16, e.k.WgmmaAcc(256), [4]ptx.Reg{a, a, a, a}, e.desc, ptx.WgmmaOpts{})
		}, []string{"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%f1, ", "%f128}, {%r3, %r3, %r3, %r3}, %rd1, 1, 1, 1, 0;"}, "sm_90a 8.0"},
		{"wgmma fence, commit, wait", func(e env) { e.k.WgmmaFence(); e.k.WgmmaCommit(); e.k.WgmmaWait(1) },
			[]string{"wgmma.fence.sync.aligned;\n\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 1;"}, "sm_90a 8.0"},
		{"setmaxnreg", func(e env) { e.k.MaxNReg(200); e.k.SetMaxNReg(true, 232); e.k.SetMaxNReg(false, 40) },
			[]string{"setmaxnreg.inc.sync.aligned.u32 232;", "setmaxnreg.dec.sync.aligned.u32 40;"}, "sm_90a 8.0"},
		{"mbarrier init and arrive", func(e env) {
			e.k.MbarInit(ptx.At(e.base, 8), ptx.Imm(256))
			e.k.MbarArrive(ptx.At(e.base, 8))
			e.k.MbarArriveDrop(ptx.At(e.base, 8))
		}, []string{"mbarrier.init.shared::cta.b64 [%r2+8], 256;", "mbarrier.arrive.shared::cta.b64 %rd1, [%r2+8];", "mbarrier.arrive.shared::cta.b64 _, [%r2+8];"}, "sm_80 7.8"},
		{"mbarrier expect_tx", func(e env) { e.k.MbarArriveExpectTx(ptx.At(e.base, 0), ptx.Imm(32768)) },
			[]string{"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 32768;"}, "sm_90 8.0"},
		{"mbarrier remote arrive", func(e env) { e.k.MbarArriveCluster(ptx.At(e.k.Mapa(e.base, ptx.Imm(1)), 0)) },
			[]string{"mapa.shared::cluster.u32 %r3, %r2, 1;", "mbarrier.arrive.shared::cluster.b64 _, [%r3];"}, "sm_90 8.0"},
		{"mbarrier wait loop", func(e env) { e.k.MbarWait(ptx.At(e.base, 0), ptx.Imm(1)) },
			[]string{"$L_loop1_top:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 1;\n\tnot.pred %p2, %p1;\n\t@!%p2 bra $L_loop1_end;\n\tbra $L_loop1_top;\n$L_loop1_end:\n"}, "sm_90 7.8"},
		{"TMA load, multicast, store", func(e env) {
			tm := e.k.TensorMapAddr(e.k.TensorMapParam("m"))
			c := e.k.Mov(ptx.U32, ptx.CtaidX)
			e.k.TmaLoad(ptx.At(e.base, 1024), tm, []ptx.Operand{c, ptx.Imm(0)}, ptx.At(e.base, 0))
			e.k.TmaLoadMulticast(ptx.At(e.base, 1024), tm, []ptx.Operand{c, ptx.Imm(0), c}, ptx.At(e.base, 0), ptx.Imm(3))
			e.k.TmaStore(tm, []ptx.Operand{ptx.Imm(64), c}, ptx.At(e.base, 1024))
			e.k.BulkCommit()
			e.k.BulkWait(1, true)
			e.k.BulkWait(0, false)
		}, []string{
			"\t.param .align 64 .b8 k_param_m[128]\n)",
			"mov.u64 %rd1, k_param_m;\n\tcvta.param.u64 %rd2, %rd1;",
			"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2+1024], [%rd2, {%r3, 0}], [%r2];",
			"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r2+1024], [%rd2, {%r3, 0, %r3}], [%r2], 3;",
			"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {64, %r3}], [%r2+1024];",
			"cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 1;\n\tcp.async.bulk.wait_group 0;",
		}, "sm_90 8.0"},
		{"TMA load with an L2 cache policy", func(e env) {
			tm := e.k.TensorMapAddr(e.k.TensorMapParam("m"))
			once := e.k.CreatePolicy(ptx.L2EvictFirst)
			e.k.TmaLoadHinted(ptx.At(e.base, 1024), tm, []ptx.Operand{ptx.Imm(0), ptx.Imm(0)}, ptx.At(e.base, 0), once)
		}, []string{
			"createpolicy.fractional.L2::evict_first.b64 %rd3;",
			"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%r2+1024], [%rd2, {0, 0}], [%r2], %rd3;",
		}, "sm_90 8.0"},
		{"fences", func(e env) { e.k.FenceProxyAsync(); e.k.FenceMbarrierInit() },
			[]string{"fence.proxy.async.shared::cta;\n\tfence.mbarrier_init.release.cluster;"}, "sm_90 8.0"},
		{"cluster barrier", func(e env) { e.k.ClusterArrive(false); e.k.ClusterWait(false) },
			[]string{"barrier.cluster.arrive;\n\tbarrier.cluster.wait;"}, "sm_90 7.8"},
		{"cluster barrier with memory order", func(e env) { e.k.ClusterArrive(true); e.k.ClusterWait(true) },
			[]string{"barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;"}, "sm_90 8.0"},
		{"cluster special registers", func(e env) {
			for _, s := range []ptx.SReg{ptx.ClusterCtaRank, ptx.ClusterNCtaRank, ptx.ClusterIDY, ptx.NClusterIDZ, ptx.ClusterCtaidX, ptx.ClusterNCtaidX} {
				e.k.Mov(ptx.U32, s)
			}
		}, []string{"mov.u32 %r3, %cluster_ctarank;", "mov.u32 %r4, %cluster_nctarank;", "%clusterid.y;", "%nclusterid.z;", "%cluster_ctaid.x;", "%cluster_nctaid.x;"}, "sm_90 7.8"},
		{".reqnctapercluster", func(e env) { e.k.ReqNCtaPerCluster(2, 1) }, []string{".reqntid 128\n.reqnctapercluster 2, 1\n{"}, "sm_90 7.8"},
		{"elect.sync", func(e env) { e.k.ElectSync(0xffffffff) }, []string{"elect.sync _|%p1, 4294967295;"}, "sm_90 8.0"},
		{"stmatrix", func(e env) {
			v := e.k.Mov(ptx.B32, ptx.Imm(0))
			e.k.Stmatrix(false, ptx.At(e.base, 0), []ptx.Reg{v})
			e.k.Stmatrix(true, ptx.At(e.base, 16), []ptx.Reg{v, v, v, v})
		}, []string{"stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r2], {%r3};", "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r2+16], {%r3, %r3, %r3, %r3};"}, "sm_90 7.8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ptx.NewModule()
			k := m.Func("k")
			k.ReqNTid(128)
			dyn := k.DynamicShared("s", 16)
			e := env{k: k, base: k.And(ptx.B32, k.Mov(ptx.U32, dyn), ptx.Imm(-1024))}
			if strings.Contains(c.name, "wgmma") || strings.Contains(c.name, "advance") {
				e.desc = k.Mov(ptx.B64, ptx.Imm(0))
			}
			c.emit(e)
			b, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			text := b.String()
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("PTX lacks %q:\n%s", w, text)
				}
			}
			if got := b.Target() + " " + b.Version(); got != c.target {
				t.Errorf("module is %s, want %s", got, c.target)
			}
		})
	}
}

// TestHopperErrors checks that each misuse of a Hopper helper is an error
// of Build at the caller's line.
func TestHopperErrors(t *testing.T) {
	cases := []struct {
		name  string
		write func(k *ptx.Func, s, d ptx.Reg) string
		want  string
	}{
		{"createpolicy priority", func(k *ptx.Func, s, d ptx.Reg) string {
			k.CreatePolicy("L2::evict_soon")
			return here(-1)
		}, `createpolicy: priority "L2::evict_soon"`},
		{"TMA cache policy not 64-bit", func(k *ptx.Func, s, d ptx.Reg) string {
			k.TmaLoadHinted(ptx.At(s, 0), k.TensorMapAddr(k.TensorMapParam("m")), []ptx.Operand{ptx.Imm(0), ptx.Imm(0)}, ptx.At(s, 8), s)
			return here(-1)
		}, "cp.async.bulk.tensor cache policy: register %r1 is u32"},
		{"wgmma N", func(k *ptx.Func, s, d ptx.Reg) string {
			k.Wgmma(ptx.BF16, make([]ptx.Reg, 6), d, d, ptx.WgmmaOpts{})
			return here(-1)
		}, "wgmma: 6 accumulator registers"},
		{"wgmma type", func(k *ptx.Func, s, d ptx.Reg) string {
			k.Wgmma(ptx.F32, k.WgmmaAcc(8), d, d, ptx.WgmmaOpts{})
			return here(-1)
		}, "wgmma: multiplicand type f32"},
		{"wgmma accumulator not f32", func(k *ptx.Func, s, d ptx.Reg) string {
			k.Wgmma(ptx.BF16, []ptx.Reg{s, s, s, s}, d, d, ptx.WgmmaOpts{})
			return here(-1)
		}, "wgmma d[0]: register %r1 is u32; want f32"},
		{"wgmma descriptor not 64-bit", func(k *ptx.Func, s, d ptx.Reg) string {
			k.Wgmma(ptx.BF16, k.WgmmaAcc(8), s, d, ptx.WgmmaOpts{})
			return here(-1)
		}, "wgmma a descriptor: register %r1 is u32, instruction type is b64"},
		{"wgmma scale-d", func(k *ptx.Func, s, d ptx.Reg) string {
			k.Wgmma(ptx.BF16, k.WgmmaAcc(8), d, d, ptx.WgmmaOpts{ScaleD: ptx.Imm(2)})
			return here(-1)
		}, "wgmma: scale-d 2 (want 0 or 1)"},
		{"wgmma RS transposed A", func(k *ptx.Func, s, d ptx.Reg) string {
			a := k.Mov(ptx.B32, ptx.Imm(0))
			k.WgmmaRegA(ptx.BF16, k.WgmmaAcc(8), [4]ptx.Reg{a, a, a, a}, d, ptx.WgmmaOpts{TransA: true})
			return here(-1)
		}, "imm-trans-a applies to a descriptor A only"},
		{"accumulator N", func(k *ptx.Func, s, d ptx.Reg) string {
			k.WgmmaAcc(260)
			return here(-1)
		}, "wgmma accumulator: N = 260"},
		{"descriptor offsets", func(k *ptx.Func, s, d ptx.Reg) string {
			k.WgmmaDesc(s, 8, 1024, ptx.Swizzle128B)
			return here(-1)
		}, "leading byte offset 8 must be a multiple of 16"},
		{"descriptor address 64-bit", func(k *ptx.Func, s, d ptx.Reg) string {
			k.WgmmaDesc(d, 16, 1024, ptx.Swizzle128B)
			return here(-1)
		}, "start address %rd1 must be a 32-bit shared-window address register"},
		{"wait_group", func(k *ptx.Func, s, d ptx.Reg) string {
			k.WgmmaWait(8)
			return here(-1)
		}, "wgmma.wait_group 8: want 0 to 7"},
		{"setmaxnreg count", func(k *ptx.Func, s, d ptx.Reg) string {
			k.SetMaxNReg(true, 100)
			return here(-1)
		}, "setmaxnreg 100: want a multiple of 8 from 24 to 256"},
		{"setmaxnreg without .maxnreg", func(k *ptx.Func, s, d ptx.Reg) string {
			k.SetMaxNReg(true, 240)
			return here(-1)
		}, "setmaxnreg needs .maxnreg"},
		{"mbarrier count", func(k *ptx.Func, s, d ptx.Reg) string {
			k.MbarInit(ptx.At(s, 0), ptx.Imm(0))
			return here(-1)
		}, "mbarrier.init: count 0 out of range"},
		{"mbarrier parity", func(k *ptx.Func, s, d ptx.Reg) string {
			k.MbarTryWait(ptx.At(s, 0), ptx.Imm(2))
			return here(-1)
		}, "mbarrier.try_wait: parity 2 (want 0 or 1)"},
		{"remote arrive on a local address", func(k *ptx.Func, s, d ptx.Reg) string {
			k.MbarArriveCluster(ptx.At(d, 0))
			return here(-1)
		}, "must be a 32-bit shared::cluster register (from Mapa)"},
		{"TMA coordinates", func(k *ptx.Func, s, d ptx.Reg) string {
			k.TmaLoad(ptx.At(s, 0), d, []ptx.Operand{ptx.Imm(0)}, ptx.At(s, 8))
			return here(-1)
		}, "cp.async.bulk.tensor: 1 coordinates (want 2 or 3)"},
		{"TMA map not 64-bit", func(k *ptx.Func, s, d ptx.Reg) string {
			k.TmaStore(s, []ptx.Operand{ptx.Imm(0), ptx.Imm(0)}, ptx.At(s, 0))
			return here(-1)
		}, "cp.async.bulk.tensor tensor map: register %r1 is u32"},
		{"tensor map loaded", func(k *ptx.Func, s, d ptx.Reg) string {
			k.LdParam(k.TensorMapParam("m"))
			return here(-1)
		}, "ld.param: k_param_m is a 128-byte tensor map"},
		{"TensorMapAddr of a plain parameter", func(k *ptx.Func, s, d ptx.Reg) string {
			k.TensorMapAddr(k.Param("q", ptx.U64))
			return here(-1)
		}, "TensorMapAddr: k_param_q is not a tensor-map parameter"},
		{"bulk wait", func(k *ptx.Func, s, d ptx.Reg) string {
			k.BulkWait(-1, false)
			return here(-1)
		}, "cp.async.bulk.wait_group -1"},
		{"cluster too big", func(k *ptx.Func, s, d ptx.Reg) string {
			k.ReqNCtaPerCluster(4, 4)
			return here(-1)
		}, ".reqnctapercluster [4 4]: want 1 to 3 positive dimensions of at most 8 CTAs"},
		{"stmatrix count", func(k *ptx.Func, s, d ptx.Reg) string {
			k.Stmatrix(false, ptx.At(s, 0), []ptx.Reg{s, s, s})
			return here(-1)
		}, "stmatrix: 3 matrices"},
		{"stmatrix 64-bit register", func(k *ptx.Func, s, d ptx.Reg) string {
			k.Stmatrix(false, ptx.At(s, 0), []ptx.Reg{d})
			return here(-1)
		}, "stmatrix vals[0]: register %rd1 is b64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ptx.NewModule()
			k := m.Func("k")
			k.ReqNTid(128)
			s := k.Mov(ptx.U32, ptx.Imm(0))
			d := k.Mov(ptx.B64, ptx.Imm(0))
			pos := c.write(k, s, d)
			_, err := m.Build()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), pos+": kernel k: ") {
				t.Errorf("error %v; want one at %s containing %q", err, pos, c.want)
			}
		})
	}
}
