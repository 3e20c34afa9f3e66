package sim_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
)

// flagPTX writes a two-warp kernel in which warp 1 writes data[i] = i+1
// (32 words) and raises a flag (red.release), and lane 0 of warp 0 spins
// on the flag (atom.acquire, nanosleep between tries), then loads data by
// TMA and warp 0 copies it to out. early raises the flag before the data
// is written: the published-too-soon bug the interpreter must expose.
func flagPTX(early bool) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p(".version 8.0\n.target sm_90a\n.address_size 64\n")
	p(".visible .entry flags(\n\t.param .align 64 .b8 tmD[128],\n\t.param .u64 pData,\n\t.param .u64 pFlag,\n\t.param .u64 pOut\n)\n{")
	p("\t.reg .pred %%p<4>;\n\t.reg .b32 %%r<16>;\n\t.reg .b64 %%rd<16>;")
	p("\t.shared .align 128 .b8 sm[128];\n\t.shared .align 8 .b64 full[1];")
	p("\tld.param.u64 %%rd1, [pData];\n\tld.param.u64 %%rd2, [pFlag];\n\tld.param.u64 %%rd3, [pOut];")
	p("\tmov.u32 %%r1, %%tid.x;\n\tshr.u32 %%r2, %%r1, 5;\n\tand.b32 %%r3, %%r1, 31;")
	p("\tsetp.eq.u32 %%p1, %%r1, 0;\n\t@%%p1 mbarrier.init.shared::cta.b64 [full], 1;\n\tfence.mbarrier_init.release.cluster;\n\tbar.sync 0;")
	p("\tsetp.eq.u32 %%p2, %%r2, 0;\n\t@%%p2 bra CONSUME;")
	p("\tmul.wide.u32 %%rd4, %%r3, 4;\n\tadd.u64 %%rd5, %%rd1, %%rd4;\n\tadd.u32 %%r4, %%r3, 1;\n\tsetp.eq.u32 %%p3, %%r3, 0;")
	if early {
		p("\t@%%p3 red.release.gpu.global.add.u32 [%%rd2], 1;")
		p("\tst.global.u32 [%%rd5], %%r4;")
	} else {
		p("\tst.global.u32 [%%rd5], %%r4;\n\tbar.warp.sync -1;")
		p("\t@%%p3 fence.proxy.async.global;\n\t@%%p3 red.release.gpu.global.add.u32 [%%rd2], 1;")
	}
	p("\tbra END;")
	p("CONSUME:\n\t@!%%p1 bra LOADED;")
	p("SPIN:\n\tatom.acquire.gpu.global.add.u32 %%r5, [%%rd2], 0;\n\tsetp.ne.u32 %%p3, %%r5, 0;\n\t@%%p3 bra READY;\n\tnanosleep.u32 20;\n\tbra SPIN;")
	p("READY:\n\tfence.proxy.async.global;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [full], 128;")
	p("\tmov.u32 %%r6, 0;\n\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [sm], [tmD, {%%r6, %%r6}], [full];")
	p("LOADED:\n\tmbarrier.try_wait.parity.shared::cta.b64 %%p3, [full], 0;\n\t@!%%p3 bra LOADED;")
	p("\tshl.b32 %%r7, %%r3, 2;\n\tmov.u32 %%r8, sm;\n\tadd.u32 %%r8, %%r8, %%r7;\n\tld.shared.u32 %%r9, [%%r8];")
	p("\tmul.wide.u32 %%rd6, %%r3, 4;\n\tadd.u64 %%rd7, %%rd3, %%rd6;\n\tst.global.u32 [%%rd7], %%r9;")
	p("END:\n\tret;\n}")
	return b.String()
}

// TestFlagBeforeData: a waiter that spins with nanosleep lets the
// publishing warp run, and the TMA load it issues once the flag is up
// reads global memory at issue, so a flag raised before its data reaches
// the output as stale words, while the ordered publication arrives whole.
func TestFlagBeforeData(t *testing.T) {
	for _, early := range []bool{false, true} {
		be := sim.New(sim.Options{Workers: 1, MaxSteps: 1 << 20})
		mod, err := be.Load(flagPTX(early))
		if err != nil {
			t.Fatal(err)
		}
		fn, err := mod.Function("flags")
		if err != nil {
			t.Fatal(err)
		}
		alloc := func(n int) runner.Ptr {
			p, err := be.Alloc(n)
			if err != nil {
				t.Fatal(err)
			}
			if err := be.Memset(p, 0, n); err != nil {
				t.Fatal(err)
			}
			return p
		}
		data, flag, out := alloc(128), alloc(16), alloc(128)
		spec, err := kernels.TensorMap{Buffer: "data", DType: dtype.F32, Dims: configs.Ints(32, 1), Strides: configs.Ints(128), Box: []int{32, 1}}.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := be.EncodeTensorMap(spec, data)
		if err != nil {
			t.Fatal(err)
		}
		if err := be.Launch(fn, [3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, []any{tm, data, flag, out}); err != nil {
			t.Fatal(err)
		}
		if err := be.Sync(); err != nil {
			t.Fatalf("early=%v: %v", early, err)
		}
		got := make([]byte, 128)
		if err := be.Download(got, out); err != nil {
			t.Fatal(err)
		}
		wrong := 0
		for i := range 32 {
			if binary.LittleEndian.Uint32(got[4*i:]) != uint32(i+1) {
				wrong++
			}
		}
		if early && wrong == 0 {
			t.Error("a flag raised before its data was written: the waiter read the data anyway")
		}
		if !early && wrong != 0 {
			t.Errorf("flag raised after the data: %d of 32 words wrong", wrong)
		}
	}
}
