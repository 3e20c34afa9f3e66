package ptx_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/ptx"
)

// wgmmaOnce emits one m64n8k16 wgmma on descriptors of the tile at addr.
func wgmmaOnce(k *ptx.Func, addr ptx.Reg) {
	d := k.WgmmaDesc(addr, 16, 1024, ptx.Swizzle128B)
	k.WgmmaFence()
	k.Wgmma(ptx.BF16, k.WgmmaAcc(8), d, d, ptx.WgmmaOpts{ScaleD: ptx.Imm(0)})
	k.WgmmaCommit()
	k.WgmmaWait(0)
}

// alignedBase returns the dynamic shared base rounded up to 1024 bytes.
func alignedBase(k *ptx.Func) ptx.Reg {
	dyn := k.Mov(ptx.U32, k.DynamicShared("dyn", 16))
	return k.And(ptx.B32, k.Add(ptx.U32, dyn, ptx.Imm(1023)), ptx.Imm(-1024))
}

// TestHopperViolations plants one bug per case in the Hopper rules and
// checks the *UnsafeError Build returns.
func TestHopperViolations(t *testing.T) {
	cases := []struct {
		name  string
		dims  []int
		write func(k *ptx.Func)
		rule  string
		want  []string
	}{
		{"wgmma under a warp condition", []int{256}, func(k *ptx.Func) {
			warp := k.Shr(ptx.U32, tidX(k), ptx.Imm(5))
			k.If(k.Setp("eq", ptx.U32, warp, ptx.Imm(0)), func() { wgmmaOnce(k, alignedBase(k)) })
		}, ptx.RuleWarpGroup, []string{"unsafe `wgmma.fence.sync.aligned`", "%tid.x / 32, which is uniform within each warp only"}},

		{"wgmma under a thread condition", []int{128}, func(k *ptx.Func) {
			k.If(k.Setp("lt", ptx.U32, tidX(k), ptx.Imm(64)), func() { k.WgmmaCommit() })
		}, ptx.RuleWarpGroup, []string{"wgmma.commit_group", "depends on %tid.x"}},

		{"wgmma under elect.sync", []int{128}, func(k *ptx.Func) {
			k.If(k.ElectSync(0xffffffff), func() { k.WgmmaWait(1) })
		}, ptx.RuleWarpGroup, []string{"wgmma.wait_group.sync.aligned 1", "the result of elect"}},

		{"warpgroup split by tid.y when ntid.x is 64", []int{64, 2}, func(k *ptx.Func) {
			k.If(k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidY), ptx.Imm(0)), func() { k.WgmmaFence() })
		}, ptx.RuleWarpGroup, []string{"%tid.y"}},

		{"partial warpgroup", []int{96}, func(k *ptx.Func) { k.WgmmaFence() },
			ptx.RuleWarpGroup, []string{".reqntid 96 makes 96 threads, not whole warpgroups of 128"}},

		{"no .reqntid", nil, func(k *ptx.Func) { k.WgmmaFence() },
			ptx.RuleWarpGroup, []string{"no .reqntid"}},

		{"setmaxnreg after a warp of the warpgroup exits", []int{256}, func(k *ptx.Func) {
			k.MaxNReg(128)
			k.If(k.Setp("eq", ptx.U32, k.Shr(ptx.U32, tidX(k), ptx.Imm(5)), ptx.Imm(1)), func() { k.Ret() })
			k.SetMaxNReg(true, 160)
		}, ptx.RuleWarpGroup, []string{"setmaxnreg.inc.sync.aligned.u32 160", "may have exited", "after `ret`"}},

		{"swizzled tile 512 bytes into an atom of a rounded base", []int{128}, func(k *ptx.Func) {
			wgmmaOnce(k, k.Add(ptx.U32, alignedBase(k), ptx.Imm(1024+512)))
		}, ptx.RuleSwizzleAlign, []string{"bfe.u32", "starts 512 bytes into a 1024-byte atom of a 128-byte swizzle"}},

		{"swizzled tile in a 16-aligned static array", []int{128}, func(k *ptx.Func) {
			wgmmaOnce(k, k.Mov(ptx.U32, k.SharedArray("tile", ptx.B32, 4096, 16)))
		}, ptx.RuleSwizzleAlign, []string{"k_smem_tile is aligned to 16 bytes; a tile of a 128-byte swizzle needs 1024"}},

		{"swizzled tile at an odd offset of an aligned static array", []int{128}, func(k *ptx.Func) {
			tile := k.Mov(ptx.U32, k.SharedArray("tile", ptx.B32, 4096, 1024))
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.Imm(1), func(i ptx.Reg) {
				wgmmaOnce(k, k.Mad(ptx.U32, i, ptx.Imm(2048), k.Add(ptx.U32, tile, ptx.Imm(256))))
			})
		}, ptx.RuleSwizzleAlign, []string{"starts 256 bytes into"}},

		{"64B swizzle, unswizzled tile not 16-aligned", []int{128}, func(k *ptx.Func) {
			k.WgmmaDesc(k.Add(ptx.U32, alignedBase(k), ptx.Imm(8)), 16, 128, ptx.SwizzleNone)
		}, ptx.RuleSwizzleAlign, []string{"plus 8 is not 16-byte aligned"}},

		{"constant parity in a k loop", []int{128}, func(k *ptx.Func) {
			bar := ptx.At(alignedBase(k), 0)
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(8), ptx.Imm(1), func(i ptx.Reg) { k.MbarWait(bar, ptx.Imm(0)) })
		}, ptx.RuleMbarPhase, []string{"mbarrier.try_wait.parity.shared::cta.b64", "writes neither the barrier's address %r3 nor the parity 0"}},

		{"parity register never flipped", []int{128}, func(k *ptx.Func) {
			buf := k.SharedArray("bars", ptx.B64, 2, 8)
			phase := k.Mov(ptx.U32, ptx.Imm(0))
			k.While(func() ptx.Reg { return k.Setp("ne", ptx.U32, phase, ptx.Imm(7)) }, func() {
				k.MovTo(phase, ptx.Imm(0)) // rewritten, but to the same constant
				k.If(k.MbarTryWait(ptx.At(buf, 8), phase), func() {})
			})
		}, ptx.RuleMbarPhase, []string{"the parity %r1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ptx.NewModule()
			k := m.Func("k")
			if c.dims != nil {
				k.ReqNTid(c.dims...)
			}
			c.write(k)
			_, err := m.Build()
			var ue *ptx.UnsafeError
			if !errors.Is(err, ptx.ErrUnsafe) || !errors.As(err, &ue) {
				t.Fatalf("Build: %v; want an *UnsafeError", err)
			}
			if ue.Rule != c.rule {
				t.Errorf("rule %q, want %q: %v", ue.Rule, c.rule, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestHopperAccepts builds correct kernels that resemble the violations
// above: none may be reported.
func TestHopperAccepts(t *testing.T) {
	cases := []struct {
		name  string
		dims  []int
		write func(k *ptx.Func)
	}{
		{"wgmma under a warpgroup condition", []int{384}, func(k *ptx.Func) {
			wg := k.Shr(ptx.U32, tidX(k), ptx.Imm(7))
			k.IfElse(k.Setp("eq", ptx.U32, wg, ptx.Imm(0)), func() {}, func() { wgmmaOnce(k, alignedBase(k)) })
		}},
		{"warpgroup index by division and mask", []int{256}, func(k *ptx.Func) {
			tid := tidX(k)
			k.If(k.Setp("eq", ptx.U32, k.Div(ptx.U32, tid, ptx.Imm(128)), ptx.Imm(1)), func() { k.WgmmaFence() })
			k.If(k.Setp("eq", ptx.U32, k.And(ptx.B32, tid, ptx.Imm(128)), ptx.Imm(0)), func() { k.WgmmaFence() })
		}},
		{"warpgroup by tid.y when ntid.x is 128", []int{128, 2}, func(k *ptx.Func) {
			k.If(k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.TidY), ptx.Imm(1)), func() { k.WgmmaFence() })
		}},
		{"whole producer warpgroup exits before consumers' wgmma", []int{256}, func(k *ptx.Func) {
			wg := k.Shr(ptx.U32, tidX(k), ptx.Imm(7))
			k.If(k.Setp("eq", ptx.U32, wg, ptx.Imm(0)), func() { k.Ret() })
			k.WgmmaFence()
		}},
		{"k steps of a K-major tile within the atom's first row, next tiles 8 KB on", []int{128}, func(k *ptx.Func) {
			base := alignedBase(k)
			for s := range 4 {
				k.WgmmaDesc(k.Add(ptx.U32, base, ptx.Imm(int64(1024+32*s))), 16, 1024, ptx.Swizzle128B)
			}
			tile := k.Mov(ptx.U32, k.SharedArray("tile", ptx.B32, 8192, 1024))
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.Imm(1), func(i ptx.Reg) {
				k.WgmmaDesc(k.Mad(ptx.U32, i, ptx.Imm(8192), tile), 16, 1024, ptx.Swizzle128B)
			})
			k.WgmmaDesc(k.Add(ptx.U32, tile, ptx.Imm(512+48)), 16, 64, ptx.Swizzle64B)
		}},
		{"unprovable tile addresses are not reported", []int{128}, func(k *ptx.Func) {
			dyn := k.Mov(ptx.U32, k.DynamicShared("dyn", 16))
			k.WgmmaDesc(k.Add(ptx.U32, dyn, ptx.Imm(512)), 16, 1024, ptx.Swizzle128B) // base not rounded
			k.WgmmaDesc(k.Mov(ptx.U32, ptx.CtaidX), 16, 1024, ptx.Swizzle128B)
		}},
		{"phase flipped each iteration, ring of stages", []int{128}, func(k *ptx.Func) {
			bars := k.Mov(ptx.U32, k.SharedArray("bars", ptx.B64, 4, 8))
			phase := k.Mov(ptx.U32, ptx.Imm(0))
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(16), ptx.Imm(1), func(i ptx.Reg) {
				k.MbarWait(ptx.At(bars, 0), phase)
				k.MovTo(phase, k.Xor(ptx.U32, phase, ptx.Imm(1)))
			})
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.Imm(1), func(s ptx.Reg) {
				// first pass over the ring: one barrier per iteration
				k.MbarWait(ptx.At(k.Mad(ptx.U32, s, ptx.Imm(8), bars), 0), ptx.Imm(0))
			})
			k.MbarWait(ptx.At(bars, 8), ptx.Imm(1)) // no loop around it
		}},
		{"constant-parity wait under an If inside the loop", []int{128}, func(k *ptx.Func) {
			bars := k.SharedArray("bars", ptx.B64, 1, 8)
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(16), ptx.Imm(1), func(i ptx.Reg) {
				k.If(k.Setp("eq", ptx.U32, i, ptx.Imm(0)), func() { k.MbarWait(ptx.At(bars, 0), ptx.Imm(0)) })
			})
		}},
		{"cluster barrier under a cluster-rank condition's join", []int{128}, func(k *ptx.Func) {
			k.ReqNCtaPerCluster(2)
			r := k.Mov(ptx.U32, ptx.ClusterCtaRank)
			k.If(k.Setp("eq", ptx.U32, r, ptx.Imm(0)), func() { k.BarSync(0) })
			k.ClusterArrive(true)
			k.ClusterWait(true)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ptx.NewModule()
			k := m.Func("k")
			k.ReqNTid(c.dims...)
			c.write(k)
			if _, err := m.Build(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestClusterBarrierUniform: barrier.cluster.arrive and wait, like
// bar.sync, need every thread of the CTA.
func TestClusterBarrierUniform(t *testing.T) {
	for _, arrive := range []bool{true, false} {
		m := ptx.NewModule()
		k := m.Func("k")
		k.ReqNTid(256)
		warp := k.Shr(ptx.U32, tidX(k), ptx.Imm(5))
		k.If(k.Setp("eq", ptx.U32, warp, ptx.Imm(0)), func() {
			if arrive {
				k.ClusterArrive(false)
			} else {
				k.ClusterWait(false)
			}
		})
		_, err := m.Build()
		var ue *ptx.UnsafeError
		if !errors.As(err, &ue) || ue.Rule != ptx.RuleBarrier {
			t.Errorf("cluster barrier (arrive %v) under a warp condition: %v; want %q", arrive, err, ptx.RuleBarrier)
		}
	}
}
