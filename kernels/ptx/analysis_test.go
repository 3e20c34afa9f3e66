package ptx_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/ptx"
)

// akernel starts a module with one kernel "k" of .reqntid dims (none when
// empty), a global pointer p and a u32 parameter n.
func akernel(dims ...int) (*ptx.Module, *ptx.Func, ptx.Reg, ptx.Reg) {
	m := ptx.NewModule()
	k := m.Func("k")
	if len(dims) > 0 {
		k.ReqNTid(dims...)
	}
	p := k.Cvta(ptx.Global, k.LdParam(k.Param("p", ptx.U64)))
	n := k.LdParam(k.Param("n", ptx.U32))
	return m, k, p, n
}

func tidX(k *ptx.Func) ptx.Reg { return k.Mov(ptx.U32, ptx.TidX) }

// store writes v (u32) to p so that values are used.
func store(k *ptx.Func, p, v ptx.Reg) { k.St(ptx.Global, ptx.U32, ptx.At(p, 0), []ptx.Reg{v}) }

// rem returns x % m through Raw (the builder has no helper for rem).
func rem(k *ptx.Func, x ptx.Reg, m int64) ptx.Reg {
	d := k.Reg(ptx.U32)
	k.Raw(0, 0, "rem.u32", d, x, ptx.Imm(m))
	return d
}

func shflSum(k *ptx.Func, mask uint32) ptx.Reg {
	v := k.Mov(ptx.B32, ptx.Imm(1))
	return k.ShflSync("bfly", v, ptx.Imm(1), ptx.Imm(31), mask)
}

// TestAnalysisViolations plants one violation per case and checks that
// Build reports it as an *UnsafeError wrapping ErrUnsafe, naming the
// instruction, the rule and the reason.
func TestAnalysisViolations(t *testing.T) {
	cases := []struct {
		name  string
		write func(k *ptx.Func, p, n ptx.Reg)
		dims  []int
		rule  string
		want  []string // substrings of the message
	}{
		{"bar.sync under If on tid.x", func(k *ptx.Func, p, n ptx.Reg) {
			k.If(k.Setp("lt", ptx.U32, tidX(k), ptx.Imm(64)), func() { k.BarSync(0) })
		}, []int{128}, ptx.RuleBarrier, []string{"kernel k: unsafe `bar.sync 0`", "under the condition %p1, which depends on %tid.x"}},

		{"bar.sync under IfElse, else branch", func(k *ptx.Func, p, n ptx.Reg) {
			k.IfElse(k.Setp("lt", ptx.U32, tidX(k), ptx.Imm(64)), func() {}, func() { k.BarSync(1) })
		}, []int{128}, ptx.RuleBarrier, []string{"`bar.sync 1`", "%tid.x"}},

		{"bar.sync under a varying guard", func(k *ptx.Func, p, n ptx.Reg) {
			q := k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.LaneID), ptx.Imm(0))
			k.BarSync(0)
			k.Guard(q, false)
		}, []int{128}, ptx.RuleBarrier, []string{"`@%p1 bar.sync 0`", "under the guard %p1, which depends on %laneid"}},

		{"bar.sync in a While whose trip count depends on tid.x", func(k *ptx.Func, p, n ptx.Reg) {
			i := k.Mov(ptx.U32, tidX(k))
			k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, i, n) }, func() {
				k.BarSync(0)
				k.MovTo(i, k.Add(ptx.U32, i, ptx.Imm(128)))
			})
		}, []int{128}, ptx.RuleBarrier, []string{"in the loop whose condition %p1 depends on %tid.x"}},

		{"bar.sync in a For from tid.x", func(k *ptx.Func, p, n ptx.Reg) {
			k.For(ptx.U32, tidX(k), ptx.Imm(1000), ptx.Imm(128), func(i ptx.Reg) { k.BarSync(0) })
		}, []int{128}, ptx.RuleBarrier, []string{"`bar.sync 0`", "%tid.x"}},

		{"bar.sync after ret under a tid.x If", func(k *ptx.Func, p, n ptx.Reg) {
			k.If(k.Setp("ge", ptx.U32, tidX(k), n), func() { k.Ret() })
			store(k, p, n)
			k.BarSync(0)
		}, []int{128}, ptx.RuleBarrier, []string{"after `ret` under the condition %p1, which depends on %tid.x"}},

		{"bar.sync before a varying ret in the same loop", func(k *ptx.Func, p, n ptx.Reg) {
			tid := tidX(k)
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.Imm(1), func(i ptx.Reg) {
				k.BarSync(0)
				k.If(k.Setp("eq", ptx.U32, tid, i), func() { k.Ret() })
			})
		}, []int{128}, ptx.RuleBarrier, []string{"after `ret`"}},

		{"nested loops: uniform outer, varying inner", func(k *ptx.Func, p, n ptx.Reg) {
			tid := tidX(k)
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(8), ptx.Imm(1), func(i ptx.Reg) {
				k.For(ptx.U32, ptx.Imm(0), tid, ptx.Imm(1), func(j ptx.Reg) {
					k.BarSync(0)
				})
			})
		}, []int{128}, ptx.RuleBarrier, []string{"in the loop whose condition %p2 depends on %tid.x"}},

		{"loop condition made varying by a MovTo under a varying If", func(k *ptx.Func, p, n ptx.Reg) {
			tid := tidX(k)
			done := k.Mov(ptx.U32, ptx.Imm(0))
			k.While(func() ptx.Reg { return k.Setp("eq", ptx.U32, done, ptx.Imm(0)) }, func() {
				k.BarSync(0)
				k.If(k.Setp("lt", ptx.U32, tid, ptx.Imm(3)), func() { k.MovTo(done, ptx.Imm(1)) })
			})
		}, []int{128}, ptx.RuleBarrier, []string{"`bar.sync 0`", "a value assigned under the condition %p2, which depends on %tid.x"}},

		{"bar.sync under a warp-uniform If", func(k *ptx.Func, p, n ptx.Reg) {
			warp := k.Shr(ptx.U32, tidX(k), ptx.Imm(5))
			k.If(k.Setp("eq", ptx.U32, warp, ptx.Imm(0)), func() { k.BarSync(0) })
		}, []int{128}, ptx.RuleBarrier, []string{"%tid.x / 32, which is uniform within each warp only"}},

		{"bar.sync under a condition on a global load", func(k *ptx.Func, p, n ptx.Reg) {
			v := k.Ld(ptx.Global, ptx.U32, 1, ptx.At(p, 0))[0]
			k.If(k.Setp("ne", ptx.U32, v, ptx.Imm(0)), func() { k.BarSync(0) })
		}, []int{128}, ptx.RuleBarrier, []string{"a load from global memory"}},

		{"bar.sync after a raw branch with a varying guard", func(k *ptx.Func, p, n ptx.Reg) {
			q := k.Setp("lt", ptx.U32, tidX(k), ptx.Imm(5))
			k.Raw(0, 0, "bra", ptx.Label("skip"))
			k.Guard(q, false)
			store(k, p, n)
			k.Label("skip")
			k.BarSync(0)
		}, []int{128}, ptx.RuleBarrier, []string{"after the raw branch `@%p1 bra skip`", "%tid.x"}},

		{"bar.sync before a backward raw branch with a varying guard", func(k *ptx.Func, p, n ptx.Reg) {
			tid := tidX(k)
			k.Label("again")
			k.BarSync(0)
			q := k.Setp("lt", ptx.U32, tid, ptx.Imm(5))
			k.Raw(0, 0, "bra", ptx.Label("again"))
			k.Guard(q, false)
		}, []int{128}, ptx.RuleBarrier, []string{"after the raw branch `@%p1 bra again`"}},

		{"shfl.sync full mask under a lane-dependent If", func(k *ptx.Func, p, n ptx.Reg) {
			lane := k.And(ptx.U32, tidX(k), ptx.Imm(31))
			k.If(k.Setp("lt", ptx.U32, lane, ptx.Imm(16)), func() { store(k, p, shflSum(k, 0xffffffff)) })
		}, []int{128}, ptx.RuleWarpSync, []string{"`shfl.sync.bfly.b32 %r5, %r4, 1, 31, 4294967295`", "mask 0xffffffff, but the lanes that reach it are 0x0000ffff"}},

		{"shfl.sync full mask under an If on tid.x < n", func(k *ptx.Func, p, n ptx.Reg) {
			k.If(k.Setp("lt", ptx.U32, tidX(k), n), func() { store(k, p, shflSum(k, 0xffffffff)) })
		}, []int{128}, ptx.RuleWarpSync, []string{"the lanes that reach it are not known: under the condition %p1, which depends on %tid.x"}},

		{"shfl.sync full mask with .reqntid 48", func(k *ptx.Func, p, n ptx.Reg) {
			store(k, p, shflSum(k, 0xffffffff))
		}, []int{48}, ptx.RuleWarpSync, []string{".reqntid 48 leaves the last warp with 16 of 32 lanes"}},

		{"shfl.sync without .reqntid", func(k *ptx.Func, p, n ptx.Reg) {
			store(k, p, shflSum(k, 0xffffffff))
		}, nil, ptx.RuleWarpSync, []string{"no .reqntid"}},

		{"shfl.sync with a partial mask reached by the whole warp", func(k *ptx.Func, p, n ptx.Reg) {
			store(k, p, shflSum(k, 0x0000ffff))
		}, []int{64}, ptx.RuleWarpSync, []string{"mask 0x0000ffff, but the lanes that reach it are 0xffffffff"}},

		{"shfl.sync after a varying ret", func(k *ptx.Func, p, n ptx.Reg) {
			k.If(k.Setp("ge", ptx.U32, tidX(k), n), func() { k.Ret() })
			store(k, p, shflSum(k, 0xffffffff))
		}, []int{64}, ptx.RuleWarpSync, []string{"after `ret` under the condition %p1"}},

		{"shfl.sync with a register mask", func(k *ptx.Func, p, n ptx.Reg) {
			v := k.Mov(ptx.B32, ptx.Imm(1))
			store(k, p, k.ShflSync("bfly", v, ptx.Imm(1), ptx.Imm(31), 0xffffffff))
			// Replace the mask by a register the analysis cannot follow.
			k.Raw(0, 0, "shfl.sync.bfly.b32", v, v, ptx.Imm(1), ptx.Imm(31), n)
		}, []int{64}, ptx.RuleWarpSync, []string{"its mask %r1 is not a constant"}},

		{"mma.sync under a lane-dependent If", func(k *ptx.Func, p, n ptx.Reg) {
			a := [4]ptx.Reg{}
			for i := range a {
				a[i] = k.Mov(ptx.B32, ptx.Imm(0))
			}
			c := [4]ptx.Reg{}
			for i := range c {
				c[i] = k.Mov(ptx.F32, ptx.F32Imm(0))
			}
			k.If(k.Setp("eq", ptx.U32, k.Mov(ptx.U32, ptx.LaneID), ptx.Imm(0)), func() {
				k.MmaSync(ptx.F16, a, [2]ptx.Reg{a[0], a[1]}, c)
			})
		}, []int{32}, ptx.RuleWarpSync, []string{"mma.sync.aligned", "mask 0xffffffff, but the lanes that reach it are 0x00000001"}},

		{"shared store at tid·4 past an array too small for .reqntid 256", func(k *ptx.Func, p, n ptx.Reg) {
			buf := k.SharedArray("buf", ptx.F32, 128, 0)
			addr := k.Mad(ptx.U32, tidX(k), ptx.Imm(4), k.Mov(ptx.U32, buf))
			k.St(ptx.Shared, ptx.F32, ptx.At(addr, 0), []ptx.Reg{k.Mov(ptx.F32, ptx.F32Imm(1))})
		}, []int{256}, ptx.RuleSharedBounds, []string{"`st.shared.f32 [%r4], %f1`", "bytes 0 to 1023 (4 at offsets 0 to 1020) of k_smem_buf, which has 512 bytes"}},

		{"shared index from a For overrunning by one", func(k *ptx.Func, p, n ptx.Reg) {
			buf := k.SharedArray("buf", ptx.U32, 16, 0)
			base := k.Mov(ptx.U32, buf)
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(17), ptx.Imm(1), func(i ptx.Reg) {
				k.St(ptx.Shared, ptx.U32, ptx.At(k.Add(ptx.U32, base, k.Shl(ptx.U32, i, ptx.Imm(2))), 0), []ptx.Reg{i})
			})
		}, []int{32}, ptx.RuleSharedBounds, []string{"bytes 0 to 67", "which has 64 bytes"}},

		{"shared vector load past the end by symbol", func(k *ptx.Func, p, n ptx.Reg) {
			buf := k.SharedArray("buf", ptx.F32, 8, 16)
			k.Ld(ptx.Shared, ptx.F32, 4, ptx.At(buf, 20))
		}, []int{32}, ptx.RuleSharedBounds, []string{"bytes 20 to 35 (16 at offsets 20 to 20)"}},

		{"shared access below the array", func(k *ptx.Func, p, n ptx.Reg) {
			buf := k.SharedArray("buf", ptx.F32, 8, 0)
			i := k.Sub(ptx.S32, k.Mov(ptx.S32, ptx.TidX), ptx.Imm(1))
			addr := k.Add(ptx.U64, k.Mov(ptx.U64, buf), k.MulWide(ptx.S32, i, ptx.Imm(4)))
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(addr, 0))
		}, []int{8}, ptx.RuleSharedBounds, []string{"bytes -4 to 27"}},

		{"shared access guarded by the wrong bound", func(k *ptx.Func, p, n ptx.Reg) {
			buf := k.SharedArray("buf", ptx.F32, 64, 0)
			tid := tidX(k)
			addr := k.Mad(ptx.U32, tid, ptx.Imm(4), k.Mov(ptx.U32, buf))
			k.If(k.Setp("le", ptx.U32, tid, ptx.Imm(64)), func() {
				k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(addr, 0))
			})
		}, []int{256}, ptx.RuleSharedBounds, []string{"bytes 0 to 259"}},

		{"shared index of a strided loop over a short array", func(k *ptx.Func, p, n ptx.Reg) {
			buf := k.SharedArray("buf", ptx.F32, 1000, 0)
			tid := tidX(k)
			base := k.Mov(ptx.U32, buf)
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(1000), ptx.Imm(256), func(i ptx.Reg) {
				k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, k.Add(ptx.U32, i, tid), ptx.Imm(4), base), 0))
			})
		}, []int{256}, ptx.RuleSharedBounds, []string{"bytes 0 to 4095", "which has 4000 bytes"}},

		{"shared atom at an index after a warp reduction", func(k *ptx.Func, p, n ptx.Reg) {
			buf := k.SharedArray("red", ptx.U32, 4, 0)
			warp := k.Shr(ptx.U32, tidX(k), ptx.Imm(5))
			k.Atom(ptx.Shared, "add", ptx.U32, ptx.At(k.Mad(ptx.U32, warp, ptx.Imm(4), k.Mov(ptx.U32, buf)), 0), ptx.Imm(1))
		}, []int{256}, ptx.RuleSharedBounds, []string{"atom.shared.add.u32", "bytes 0 to 31"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, k, p, n := akernel(c.dims...)
			c.write(k, p, n)
			_, err := m.Build()
			if err == nil {
				t.Fatal("Build succeeded; want a violation")
			}
			if !errors.Is(err, ptx.ErrUnsafe) {
				t.Fatalf("error does not wrap ErrUnsafe: %v", err)
			}
			var ue *ptx.UnsafeError
			if !errors.As(err, &ue) {
				t.Fatalf("no *UnsafeError in %v", err)
			}
			if ue.Kernel != "k" || ue.Rule != c.rule {
				t.Errorf("kernel %q rule %q, want k and %q: %v", ue.Kernel, ue.Rule, c.rule, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestAnalysisAccepts builds correct kernels that resemble the violations
// above: none may be reported.
func TestAnalysisAccepts(t *testing.T) {
	cases := []struct {
		name  string
		dims  []int
		write func(k *ptx.Func, p, n ptx.Reg)
	}{
		{"bar.sync under conditions on ctaid, params and loop counters", []int{128}, func(k *ptx.Func, p, n ptx.Reg) {
			cta := k.Mov(ptx.U32, ptx.CtaidX)
			k.If(k.Setp("eq", ptx.U32, cta, ptx.Imm(0)), func() { k.BarSync(0) })
			k.IfElse(k.Setp("gt", ptx.U32, n, ptx.Imm(5)), func() { k.BarSync(0) }, func() { k.BarSync(1) })
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(8), ptx.Imm(1), func(i ptx.Reg) {
				k.BarSync(0)
				k.If(k.Setp("eq", ptx.U32, i, ptx.Imm(3)), func() { k.BarSync(0) })
			})
			k.For(ptx.U32, cta, n, k.Mov(ptx.U32, ptx.NCtaidX), func(i ptx.Reg) { k.BarSync(0) })
			j := k.Mov(ptx.U32, ptx.Imm(1))
			k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, j, n) }, func() {
				k.MovTo(j, k.Shl(ptx.U32, j, ptx.Imm(1)))
				k.BarSync(0)
			})
			// A uniform value assigned under a uniform If stays uniform.
			x := k.Mov(ptx.U32, ptx.Imm(0))
			k.If(k.Setp("gt", ptx.U32, n, ptx.Imm(5)), func() { k.MovTo(x, cta) })
			k.If(k.Setp("eq", ptx.U32, x, ptx.Imm(0)), func() { k.BarSync(0) })
			// ntid is uniform; tid is bounded by .reqntid, so tid < 128 is
			// always true and tid / 128 is 0 in every thread.
			k.If(k.Setp("eq", ptx.U32, k.Shr(ptx.U32, tidX(k), ptx.Imm(7)), ptx.Imm(0)), func() { k.BarSync(0) })
			k.If(k.Setp("lt", ptx.U32, k.Mov(ptx.U32, ptx.NTidX), n), func() { k.BarSync(0) })
		}},
		{"uniform and warp-uniform early exits before bar.sync", []int{128}, func(k *ptx.Func, p, n ptx.Reg) {
			k.If(k.Setp("ge", ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), n), func() { k.Ret() })
			k.If(k.Setp("ge", ptx.U32, k.Shr(ptx.U32, tidX(k), ptx.Imm(6)), n), func() { k.Ret() })
			k.BarSync(0)
		}},
		{"bar.sync with a thread count under warp-uniform control", []int{128}, func(k *ptx.Func, p, n ptx.Reg) {
			warp := k.Shr(ptx.U32, tidX(k), ptx.Imm(5))
			k.If(k.Setp("lt", ptx.U32, warp, ptx.Imm(2)), func() { k.Raw(0, 0, "bar.sync", ptx.Imm(1), ptx.Imm(64)) })
		}},
		{"bar.sync after a varying If that returns nothing", []int{128}, func(k *ptx.Func, p, n ptx.Reg) {
			tid := tidX(k)
			acc := k.Mov(ptx.U32, ptx.Imm(0))
			k.If(k.Setp("lt", ptx.U32, tid, n), func() { k.MovTo(acc, tid) })
			store(k, p, acc)
			k.BarSync(0)
			k.Raw(0, 0, "bra.uni", ptx.Label("end"))
			k.Label("end")
			k.BarSync(0)
		}},
		{"shfl.sync under warp-uniform conditions", []int{256}, func(k *ptx.Func, p, n ptx.Reg) {
			tid := tidX(k)
			warp := k.Shr(ptx.U32, tid, ptx.Imm(5))
			k.If(k.Setp("eq", ptx.U32, warp, ptx.Imm(0)), func() { store(k, p, shflSum(k, 0xffffffff)) })
			row := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(4), k.Div(ptx.U32, tid, ptx.Imm(64)))
			k.If(k.Setp("lt", ptx.U32, row, n), func() {
				k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.Imm(1), func(i ptx.Reg) { store(k, p, shflSum(k, 0xffffffff)) })
			})
			masked := k.And(ptx.U32, tid, ptx.Imm(-64))
			k.If(k.Setp("eq", ptx.U32, masked, n), func() { store(k, p, shflSum(k, 0xffffffff)) })
			// A value from one lane is warp-uniform.
			w := k.ShflSync("idx", k.Mov(ptx.B32, tid), ptx.Imm(0), ptx.Imm(31), 0xffffffff)
			k.If(k.Setp("eq", ptx.B32, w, ptx.Imm(0)), func() { store(k, p, shflSum(k, 0xffffffff)) })
			// Uniform early exit of whole warps.
			k.If(k.Setp("ge", ptx.U32, warp, n), func() { k.Ret() })
			store(k, p, shflSum(k, 0xffffffff))
		}},
		{"shfl.sync under 2-D blocks whose rows are whole warps", []int{32, 4}, func(k *ptx.Func, p, n ptx.Reg) {
			k.If(k.Setp("lt", ptx.U32, k.Mov(ptx.U32, ptx.TidY), n), func() { store(k, p, shflSum(k, 0xffffffff)) })
		}},
		{"shfl.sync with partial masks matching lane conditions", []int{64}, func(k *ptx.Func, p, n ptx.Reg) {
			lane := k.Mov(ptx.U32, ptx.LaneID)
			k.If(k.Setp("lt", ptx.U32, lane, ptx.Imm(16)), func() { store(k, p, shflSum(k, 0x0000ffff)) })
			k.IfNot(k.Setp("lt", ptx.U32, rem(k, lane, 32), ptx.Imm(8)), func() { store(k, p, shflSum(k, 0xffffff00)) })
			q := k.Setp("ge", ptx.U32, lane, ptx.Imm(16))
			r := k.Setp("lt", ptx.U32, lane, ptx.Imm(24))
			k.If(k.And(ptx.Pred, q, r), func() { store(k, p, shflSum(k, 0x00ff0000)) })
			k.If(k.Setp("eq", ptx.U32, k.Shr(ptx.U32, tidX(k), ptx.Imm(5)), n), func() {
				k.If(k.Setp("lt", ptx.U32, lane, ptx.Imm(4)), func() { store(k, p, shflSum(k, 0xf)) })
			})
			low := k.Setp("lt", ptx.U32, lane, ptx.Imm(2))
			v := k.ShflSync("bfly", lane, ptx.Imm(1), ptx.Imm(31), 3)
			k.Guard(low, false)
			store(k, p, v)
		}},
		{"shfl.sync in a single warp of 16 threads", []int{16}, func(k *ptx.Func, p, n ptx.Reg) {
			store(k, p, shflSum(k, 0xffff))
			k.If(k.Setp("lt", ptx.U32, tidX(k), ptx.Imm(8)), func() { store(k, p, shflSum(k, 0xff)) })
		}},
		{"in-bounds shared accesses", []int{256}, func(k *ptx.Func, p, n ptx.Reg) {
			tid := tidX(k)
			buf := k.SharedArray("buf", ptx.F32, 256, 16)
			red := k.SharedArray("red", ptx.F32, 8, 0)
			small := k.SharedArray("small", ptx.F32, 64, 0)
			one := k.Mov(ptx.F32, ptx.F32Imm(1))
			base := k.Mov(ptx.U32, buf)
			k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, tid, ptx.Imm(4), base), 0), []ptx.Reg{one})
			k.BarSync(0)
			// Vectors over a quarter of the threads, 64-bit addresses.
			q := k.Setp("lt", ptx.U32, tid, ptx.Imm(64))
			a64 := k.Add(ptx.U64, k.Mov(ptx.U64, buf), k.MulWide(ptx.U32, tid, ptx.Imm(16)))
			k.If(q, func() { k.Ld(ptx.Shared, ptx.F32, 4, ptx.At(a64, 0)) })
			// The address computed before the guard, the bound learnt after.
			sa := k.Mad(ptx.U32, tid, ptx.Imm(4), k.Mov(ptx.U32, small))
			k.St(ptx.Shared, ptx.F32, ptx.At(sa, 0), []ptx.Reg{one})
			k.Guard(q, false)
			k.IfNot(k.Setp("ge", ptx.U32, tid, ptx.Imm(64)), func() { k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(sa, 0)) })
			// Per-warp slots.
			warp := k.Shr(ptx.U32, tid, ptx.Imm(5))
			lane := k.And(ptx.U32, tid, ptx.Imm(31))
			k.If(k.Setp("eq", ptx.U32, lane, ptx.Imm(0)), func() {
				k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, warp, ptx.Imm(4), k.Mov(ptx.U32, red)), 0), []ptx.Reg{one})
			})
			k.If(k.Setp("lt", ptx.U32, lane, ptx.Imm(8)), func() {
				k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mov(ptx.U32, red), 0))
				k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, lane, ptx.Imm(4), k.Mov(ptx.U32, red)), 0))
			})
			// Loop indices with immediate bounds, strided over the threads.
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(4), ptx.Imm(1), func(i ptx.Reg) {
				idx := k.Mad(ptx.U32, i, ptx.Imm(64), k.And(ptx.U32, tid, ptx.Imm(63)))
				k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, idx, ptx.Imm(4), base), 0))
			})
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(256), ptx.Imm(32), func(i ptx.Reg) {
				k.Ld(ptx.Shared, ptx.F32, 4, ptx.At(k.Add(ptx.U32, base, k.Shl(ptx.U32, i, ptx.Imm(2))), 112))
			})
			// Clamped and wrapped indices.
			c := k.Min(ptx.U32, k.Add(ptx.U32, tid, ptx.Imm(3)), ptx.Imm(255))
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, c, ptx.Imm(4), base), 0))
			w := rem(k, tid, 64)
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, w, ptx.Imm(4), base), 0))
			s := k.Selp(ptx.U32, tid, ptx.Imm(0), q)
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, s, ptx.Imm(4), base), 0))
			// A strided loop: i is 0, 256, 512 or 768.
			k.For(ptx.U32, ptx.Imm(0), ptx.Imm(1000), ptx.Imm(256), func(i ptx.Reg) {
				big := k.SharedArray("big", ptx.F32, 1024, 0)
				k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, k.Add(ptx.U32, i, tid), ptx.Imm(4), k.Mov(ptx.U32, big)), 0))
			})
			// Two indices, one bounded by a guard written after the
			// address: a transpose through a padded tile.
			tile := k.Mov(ptx.U32, k.SharedArray("tile", ptx.F32, 2*33, 0))
			slice := k.Shr(ptx.U32, tid, ptx.Imm(5))
			few := k.Setp("lt", ptx.U32, lane, ptx.Imm(2))
			for j := 0; j < 16; j++ {
				col := k.Add(ptx.U32, k.And(ptx.U32, slice, ptx.Imm(1)), ptx.Imm(2*j))
				at := k.Mad(ptx.U32, k.Mad(ptx.U32, lane, ptx.Imm(33), col), ptx.Imm(4), tile)
				k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(at, 0))
				k.Guard(few, false)
			}
		}},
		{"unbounded or dynamic shared indices are not reported", []int{256}, func(k *ptx.Func, p, n ptx.Reg) {
			buf := k.SharedArray("buf", ptx.F32, 4, 0)
			dyn := k.DynamicShared("dyn", 16)
			cta := k.Mov(ptx.U32, ptx.CtaidX)
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, cta, ptx.Imm(4), k.Mov(ptx.U32, buf)), 0))
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, n, ptx.Imm(4), k.Mov(ptx.U32, buf)), 0))
			k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, tidX(k), ptx.Imm(4), k.Mov(ptx.U32, dyn)), 4096))
			// A grid-stride index grows without bound in its loop.
			off := k.Mov(ptx.U32, ptx.Imm(0))
			k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, off, n) }, func() {
				k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Add(ptx.U32, off, k.Mov(ptx.U32, buf)), 0))
				k.MovTo(off, k.Add(ptx.U32, off, ptx.Imm(4)))
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, k, p, n := akernel(c.dims...)
			c.write(k, p, n)
			if _, err := m.Build(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAnalysisAfterBuilderErrors: a kernel with builder errors is not
// analysed (its IR may be inconsistent), and those errors do not wrap
// ErrUnsafe.
func TestAnalysisAfterBuilderErrors(t *testing.T) {
	m, k, _, _ := akernel(128)
	k.If(k.Setp("lt", ptx.U32, tidX(k), ptx.Imm(3)), func() { k.BarSync(99) })
	_, err := m.Build()
	if err == nil || errors.Is(err, ptx.ErrUnsafe) || !strings.Contains(err.Error(), "barrier id must be 0..15") {
		t.Fatalf("got %v, want only the builder's error", err)
	}
}

// TestAnalysisReportsEveryKernel: violations in two kernels of a module
// are both reported, and an unrolled mistake is reported a bounded number
// of times.
func TestAnalysisReportsEveryKernel(t *testing.T) {
	m := ptx.NewModule()
	for _, name := range []string{"a", "b"} {
		k := m.Func(name)
		k.ReqNTid(64)
		q := k.Setp("lt", ptx.U32, tidX(k), ptx.Imm(3))
		k.If(q, func() {
			for range 20 {
				k.BarSync(0)
			}
		})
	}
	_, err := m.Build()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "kernel a: unsafe") || !strings.Contains(msg, "kernel b: unsafe") {
		t.Errorf("not both kernels reported:\n%s", msg)
	}
	if !strings.Contains(msg, "kernel a: 12 more unsafe instructions") {
		t.Errorf("unrolled violations not capped:\n%s", msg)
	}
}
