package sim_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
)

// launch builds m, runs entry on a fresh interpreter over the given
// buffers (passed as the kernel's arguments, in order) and returns their
// contents afterwards and the error of the launch or of Sync.
func launch(t *testing.T, m *ptx.Module, entry string, grid, block int, smem int, bufs ...[]byte) ([][]byte, error) {
	t.Helper()
	b, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	return launchPTX(t, b.String(), entry, [3]int{grid, 1, 1}, [3]int{block, 1, 1}, smem, bufs...)
}

func launchPTX(t *testing.T, text, entry string, grid, block [3]int, smem int, bufs ...[]byte) ([][]byte, error) {
	t.Helper()
	be := sim.New(sim.Options{Workers: 2})
	mod, err := be.Load(text)
	if err != nil {
		return nil, err
	}
	fn, err := mod.Function(entry)
	if err != nil {
		t.Fatal(err)
	}
	var args []any
	var ptrs []runner.Ptr
	for _, b := range bufs {
		p, err := be.Alloc(max(len(b), 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := be.Upload(p, b); err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, p)
		args = append(args, p)
	}
	if err := be.Launch(fn, grid, block, smem, args); err != nil {
		return nil, err
	}
	serr := be.Sync()
	out := make([][]byte, len(bufs))
	for i, p := range ptrs {
		out[i] = make([]byte, len(bufs[i]))
		if err := be.Download(out[i], p); err != nil {
			t.Fatal(err)
		}
	}
	return out, serr
}

// opKernel writes a kernel in which thread i loads its operands from
// in[i][0..2] (8-byte slots, little endian), runs the one instruction op
// with a fresh destination of type dt, and stores the destination into
// out[i] (an 8-byte slot).
func opKernel(op string, dt ptx.Type, src []ptx.Type) *ptx.Module {
	m := ptx.NewModule()
	k := m.Func("op")
	in := k.Cvta(ptx.Global, k.LdParam(k.Param("in", ptx.U64)))
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	tid := k.Mov(ptx.U32, ptx.TidX)
	ia := k.Add(ptx.U64, in, k.MulWide(ptx.U32, tid, ptx.Imm(24)))
	args := []ptx.Operand{}
	d := k.Reg(dt)
	args = append(args, d)
	for j, st := range src {
		args = append(args, k.Ld(ptx.Global, st, 1, ptx.At(ia, int64(8*j)))[0])
	}
	k.Raw(80, 70, op, args...)
	k.St(ptx.Global, dt, ptx.At(k.Add(ptx.U64, out, k.MulWide(ptx.U32, tid, ptx.Imm(8))), 0), []ptx.Reg{d})
	return m
}

func f32b(f float32) uint64 { return uint64(math.Float32bits(f)) }

// TestInstructions checks single instructions against hand-computed
// results, one thread per row.
func TestInstructions(t *testing.T) {
	one := float32(1 + 0x1p-12)
	inf := float32(math.Inf(1))
	nan := uint64(0x7fffffff)
	cases := []struct {
		op   string
		dt   ptx.Type
		src  []ptx.Type
		in   [][]uint64
		want []uint64
	}{
		{"add.rn.f32", ptx.F32, []ptx.Type{ptx.F32, ptx.F32}, [][]uint64{{f32b(1), f32b(0x1p-24)}, {f32b(1), f32b(0x1p-23)}, {f32b(inf), f32b(-inf)}},
			[]uint64{f32b(1), f32b(1 + 0x1p-23), nan}},
		{"fma.rn.f32", ptx.F32, []ptx.Type{ptx.F32, ptx.F32, ptx.F32}, [][]uint64{{f32b(one), f32b(one), f32b(0x1p-80)}},
			[]uint64{f32b(1 + 0x1p-11 + 0x1p-23)}},
		{"div.rn.f32", ptx.F32, []ptx.Type{ptx.F32, ptx.F32}, [][]uint64{{f32b(1), f32b(3)}, {f32b(1), f32b(0)}}, []uint64{f32b(1.0 / 3), f32b(inf)}},
		{"sqrt.rn.f32", ptx.F32, []ptx.Type{ptx.F32}, [][]uint64{{f32b(2)}, {f32b(-1)}}, []uint64{f32b(float32(math.Sqrt(2))), nan}},
		{"rcp.rn.f32", ptx.F32, []ptx.Type{ptx.F32}, [][]uint64{{f32b(3)}}, []uint64{f32b(1.0 / 3)}},
		{"min.f32", ptx.F32, []ptx.Type{ptx.F32, ptx.F32}, [][]uint64{{nan, f32b(2)}, {f32b(float32(math.Copysign(0, -1))), 0}}, []uint64{f32b(2), 0x80000000}},
		{"cvt.rn.f16.f32", ptx.B16, []ptx.Type{ptx.F32}, [][]uint64{{f32b(1 + 0x1p-11)}, {f32b(1 + 0x1p-11 + 0x1p-20)}, {f32b(70000)}, {f32b(1e-8)}},
			[]uint64{0x3c00, 0x3c01, 0x7c00, 0}},
		{"cvt.rz.f16.f32", ptx.B16, []ptx.Type{ptx.F32}, [][]uint64{{f32b(70000)}, {f32b(1.9999)}}, []uint64{0x7bff, 0x3fff}},
		{"cvt.rn.bf16.f32", ptx.B16, []ptx.Type{ptx.F32}, [][]uint64{{f32b(1 + 0x1p-8)}, {f32b(1 + 0x1p-8 + 0x1p-20)}, {nan}}, []uint64{0x3f80, 0x3f81, 0x7fff}},
		{"cvt.f32.f16", ptx.F32, []ptx.Type{ptx.B16}, [][]uint64{{0x3555}, {0x0001}}, []uint64{f32b(0.333251953125), f32b(0x1p-24)}},
		{"cvt.rni.s32.f32", ptx.S32, []ptx.Type{ptx.F32}, [][]uint64{{f32b(2.5)}, {f32b(-3.5)}, {f32b(1e10)}, {f32b(-1e10)}, {nan}},
			[]uint64{2, 0xfffffffc, 0x7fffffff, 0x80000000, 0}},
		{"cvt.rzi.u32.f32", ptx.U32, []ptx.Type{ptx.F32}, [][]uint64{{f32b(-5)}, {f32b(7.9)}}, []uint64{0, 7}},
		{"cvt.rn.f32.s32", ptx.F32, []ptx.Type{ptx.S32}, [][]uint64{{0xffffffff}, {16777217}}, []uint64{f32b(-1), f32b(16777216)}},
		{"cvt.rmi.f32.f32", ptx.F32, []ptx.Type{ptx.F32}, [][]uint64{{f32b(-1.5)}}, []uint64{f32b(-2)}},
		{"cvt.s32.s16", ptx.S32, []ptx.Type{ptx.S16}, [][]uint64{{0x8000}}, []uint64{0xffff8000}},
		{"cvt.u32.u16", ptx.U32, []ptx.Type{ptx.U16}, [][]uint64{{0x8000}}, []uint64{0x8000}},
		{"cvt.rn.f16x2.f32", ptx.B32, []ptx.Type{ptx.F32, ptx.F32}, [][]uint64{{f32b(1), f32b(2)}}, []uint64{0x3c004000}},
		{"mul.wide.s32", ptx.S64, []ptx.Type{ptx.S32, ptx.S32}, [][]uint64{{0xffffffff, 5}}, []uint64{0xfffffffffffffffb}},
		{"mul.hi.u64", ptx.U64, []ptx.Type{ptx.U64, ptx.U64}, [][]uint64{{1 << 63, 4}}, []uint64{2}},
		{"mul.hi.s32", ptx.S32, []ptx.Type{ptx.S32, ptx.S32}, [][]uint64{{0xffffffff, 0xffffffff}}, []uint64{0}},
		{"div.s32", ptx.S32, []ptx.Type{ptx.S32, ptx.S32}, [][]uint64{{0xfffffff9, 2}}, []uint64{0xfffffffd}},
		{"rem.s32", ptx.S32, []ptx.Type{ptx.S32, ptx.S32}, [][]uint64{{0xfffffff9, 2}}, []uint64{0xffffffff}},
		{"shr.s32", ptx.S32, []ptx.Type{ptx.S32, ptx.U32}, [][]uint64{{0x80000000, 4}, {0x80000000, 40}}, []uint64{0xf8000000, 0xffffffff}},
		{"shr.u32", ptx.U32, []ptx.Type{ptx.U32, ptx.U32}, [][]uint64{{0x80000000, 4}, {0x80000000, 40}}, []uint64{0x08000000, 0}},
		{"shl.b32", ptx.B32, []ptx.Type{ptx.B32, ptx.U32}, [][]uint64{{1, 31}, {1, 32}}, []uint64{0x80000000, 0}},
		{"max.s32", ptx.S32, []ptx.Type{ptx.S32, ptx.S32}, [][]uint64{{0xffffffff, 1}}, []uint64{1}},
		{"max.u32", ptx.U32, []ptx.Type{ptx.U32, ptx.U32}, [][]uint64{{0xffffffff, 1}}, []uint64{0xffffffff}},
		{"add.rn.f16", ptx.B16, []ptx.Type{ptx.B16, ptx.B16}, [][]uint64{{0x3c00, 0x1400}}, []uint64{0x3c01}},
		{"fma.rn.f16x2", ptx.B32, []ptx.Type{ptx.B32, ptx.B32, ptx.B32}, [][]uint64{{0x3c004000, 0x40004000, 0x3c003c00}}, []uint64{0x42004500}},
		{"neg.f32", ptx.F32, []ptx.Type{ptx.F32}, [][]uint64{{0}}, []uint64{0x80000000}},
		{"popc.b32", ptx.U32, []ptx.Type{ptx.B32}, [][]uint64{{0xf0f0}}, []uint64{8}},
		{"clz.b32", ptx.U32, []ptx.Type{ptx.B32}, [][]uint64{{1}}, []uint64{31}},
		{"brev.b32", ptx.B32, []ptx.Type{ptx.B32}, [][]uint64{{1}}, []uint64{0x80000000}},
		{"bfe.u32", ptx.U32, []ptx.Type{ptx.U32, ptx.U32, ptx.U32}, [][]uint64{{0xabcd, 4, 8}}, []uint64{0xbc}},
		{"bfe.s32", ptx.S32, []ptx.Type{ptx.S32, ptx.U32, ptx.U32}, [][]uint64{{0xabcd, 4, 8}}, []uint64{0xffffffbc}},
		{"prmt.b32", ptx.B32, []ptx.Type{ptx.B32, ptx.B32, ptx.B32}, [][]uint64{{0x33221100, 0x77665544, 0x5410}}, []uint64{0x55441100}},
		{"copysign.f32", ptx.F32, []ptx.Type{ptx.F32, ptx.F32}, [][]uint64{{f32b(-1), f32b(2)}}, []uint64{f32b(-2)}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			in := make([]byte, 24*len(c.in))
			for i, row := range c.in {
				for j, v := range row {
					binary.LittleEndian.PutUint64(in[24*i+8*j:], v)
				}
			}
			out, err := launch(t, opKernel(c.op, c.dt, c.src), "op", 1, len(c.in), 0, in, make([]byte, 8*len(c.in)))
			if err != nil {
				t.Fatal(err)
			}
			mask := uint64(1)<<(8*uint(c.dt.Bits()/8)) - 1
			if c.dt.Bits() == 64 {
				mask = ^uint64(0)
			}
			for i, w := range c.want {
				if got := binary.LittleEndian.Uint64(out[1][8*i:]) & mask; got != w {
					t.Errorf("%s %#x: got %#x, want %#x", c.op, c.in[i], got, w)
				}
			}
		})
	}
}

// TestApproximations checks the approximate instructions against math
// within the PTX ISA's error bounds (the interpreter is exact to f32);
// 2^-130 is subnormal, kept by ex2 and flushed to 0 by ex2.ftz.
func TestApproximations(t *testing.T) {
	xs := []float32{-130, -3.7, -1, -0.3, 0, 0.25, 1, 2.5, 10}
	flushed := func(f func(float64) float64) func(float64) float64 {
		return func(x float64) float64 {
			if r := f(x); math.Abs(r) >= 0x1p-126 {
				return r
			}
			return 0
		}
	}
	cases := []struct {
		op  string
		ref func(float64) float64
		ok  func(x float32) bool
	}{
		{"ex2.approx.f32", math.Exp2, func(float32) bool { return true }},
		{"ex2.approx.ftz.f32", flushed(math.Exp2), func(float32) bool { return true }},
		{"lg2.approx.f32", math.Log2, func(x float32) bool { return x > 0 }},
		{"rcp.approx.f32", func(x float64) float64 { return 1 / x }, func(x float32) bool { return x != 0 }},
		{"rsqrt.approx.f32", func(x float64) float64 { return 1 / math.Sqrt(x) }, func(x float32) bool { return x > 0 }},
		{"tanh.approx.f32", math.Tanh, func(float32) bool { return true }},
		{"sin.approx.f32", math.Sin, func(float32) bool { return true }},
		{"cos.approx.f32", math.Cos, func(float32) bool { return true }},
	}
	for _, c := range cases {
		in := make([]byte, 24*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint32(in[24*i:], math.Float32bits(x))
		}
		out, err := launch(t, opKernel(c.op, ptx.F32, []ptx.Type{ptx.F32}), "op", 1, len(xs), 0, in, make([]byte, 8*len(xs)))
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		for i, x := range xs {
			if !c.ok(x) {
				continue
			}
			got := float64(math.Float32frombits(binary.LittleEndian.Uint32(out[1][8*i:])))
			want := c.ref(float64(x))
			if math.Abs(got-want) > 0x1p-23*math.Abs(want)+0x1p-149 {
				t.Errorf("%s(%g) = %g, want %g", c.op, x, got, want)
			}
		}
	}
}

// TestShuffles checks every shfl.sync mode, the clamp and segment rules
// and the predicate output, against the PTX ISA's pseudocode.
func TestShuffles(t *testing.T) {
	cases := []struct {
		mode string
		b, c int64
		src  func(lane int) (int, bool) // source lane and predicate
	}{
		{"idx", 5, 31, func(l int) (int, bool) { return 5, true }},
		{"idx", 3, 0x181f, func(l int) (int, bool) { return l&^7 | 3, true }},
		{"up", 3, 0, func(l int) (int, bool) {
			if l >= 3 {
				return l - 3, true
			}
			return l, false
		}},
		{"down", 2, 31, func(l int) (int, bool) {
			if l+2 <= 31 {
				return l + 2, true
			}
			return l, false
		}},
		{"down", 1, 0x0f07, func(l int) (int, bool) { // segments of 16, clamp at 7 within the segment
			max := l&0xf | 7&^0xf
			if l+1 <= max {
				return l + 1, true
			}
			return l, false
		}},
		{"bfly", 4, 31, func(l int) (int, bool) { return l ^ 4, true }},
	}
	for _, c := range cases {
		text := fmt.Sprintf(shflPTX, c.mode, c.b, c.c)
		res, err := launchPTX(t, text, "shfl", [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, make([]byte, 32*8))
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		for l := 0; l < 32; l++ {
			j, ok := c.src(l)
			got := binary.LittleEndian.Uint32(res[0][8*l:])
			gotP := binary.LittleEndian.Uint32(res[0][8*l+4:]) == 1
			if got != uint32(10*j) || gotP != ok {
				t.Errorf("shfl.%s b=%d c=%#x lane %d: got %d (p %v), want %d (p %v)", c.mode, c.b, c.c, l, got, gotP, 10*j, ok)
			}
		}
	}
}

// shflPTX stores, for every lane, the shuffled value and the predicate
// output of shfl.sync.MODE.b32 d|p, lane·10, B, C, 0xffffffff.
const shflPTX = `.version 7.0
.target sm_80
.address_size 64
.visible .entry shfl(
	.param .u64 out
)
{
	.reg .pred %%p<2>;
	.reg .b32 %%r<5>;
	.reg .b64 %%rd<4>;
	ld.param.u64 %%rd1, [out];
	mov.u32 %%r1, %%laneid;
	mul.lo.u32 %%r2, %%r1, 10;
	shfl.sync.%s.b32 %%r3|%%p1, %%r2, %d, %d, -1;
	selp.u32 %%r4, 1, 0, %%p1;
	mul.wide.u32 %%rd2, %%r1, 8;
	add.u64 %%rd3, %%rd1, %%rd2;
	st.global.v2.b32 [%%rd3], {%%r3, %%r4};
	ret;
}
`

// TestBlockSumGolden runs the builder's golden module (block_sum: a
// grid-stride sum with shuffles, shared memory and red.global; fill_bf16:
// dynamic shared memory) and checks the results.
func TestBlockSumGolden(t *testing.T) {
	text := readGolden(t)
	const n = 5000
	x := make([]byte, 4*n)
	want := 0.0
	for i := 0; i < n; i++ {
		v := float32(i%13) - 6
		binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(v))
		want += float64(v)
	}
	nb := make([]byte, 4)
	binary.LittleEndian.PutUint32(nb, n)
	be := sim.New(sim.Options{})
	mod, err := be.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("block_sum")
	if err != nil {
		t.Fatal(err)
	}
	px, _ := be.Alloc(len(x))
	po, _ := be.Alloc(4)
	be.Upload(px, x)
	be.Memset(po, 0, 4)
	if err := be.Launch(fn, [3]int{7, 1, 1}, [3]int{256, 1, 1}, 0, []any{px, po, uint64(n)}); err != nil {
		t.Fatal(err)
	}
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	be.Download(got, po)
	if g := math.Float32frombits(binary.LittleEndian.Uint32(got)); float64(g) != want {
		t.Errorf("block_sum = %g, want %g", g, want)
	}

	// fill_bf16 is a printing test, not a working kernel: thread 65 reads
	// 8 bytes at shared offset 4.
	fill, err := mod.Function("fill_bf16")
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := be.Alloc(128 * 8)
	if err := be.Launch(fill, [3]int{1, 1, 1}, [3]int{128, 1, 1}, 512, []any{pd}); err != nil {
		t.Fatal(err)
	}
	if err := be.Sync(); !errors.Is(err, sim.ErrMisaligned) {
		t.Errorf("fill_bf16: %v, want ErrMisaligned", err)
	}
}

// readGolden reads the builder's golden module; a missing one fails the
// test (kernels/ptx's go test -update writes it).
func readGolden(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../kernels/ptx/testdata/module.golden")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseErrors: text outside the dialect fails with ErrParse naming
// the line.
func TestParseErrors(t *testing.T) {
	head := ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k(\n\t.param .u64 p\n)\n{\n\t.reg .b32 %r<3>;\n"
	cases := []struct {
		name, body, want string
	}{
		{"unknown instruction", "\ttex.1d.v4.f32.s32 %r1, [%r2];\n", "line 9 `tex.1d.v4.f32.s32 %r1, [%r2];`: instruction tex is not supported"},
		{"undeclared register", "\tmov.u32 %r5, 1;\n", "line 9 `mov.u32 %r5, 1;`: unknown register %r5"},
		{"undefined label", "\tbra $L_nowhere;\n", "branch to undefined label"},
		{"bad qualifier", "\tld.global.zz.u32 %r1, [%r2];\n", "unknown qualifier .zz"},
		{"const space", "\tld.const.u32 %r1, [%r2];\n", ".const space is not supported"},
		{"missing mode", "\tcvt.f16.f32 %r1, %r2;\n", "needs a float rounding mode"},
		{"garbage", "\tmov.u32 %r1, #3;\n", "unexpected character '#'"},
		{"range policy", "\t.reg .b64 %rd<2>;\n\tcreatepolicy.range.L2::evict_first.b64 %rd1;\n", "only createpolicy.fractional"},
		{"policy priority", "\t.reg .b64 %rd<2>;\n\tcreatepolicy.fractional.L2::evict_soon.b64 %rd1;\n", "only createpolicy.fractional.L2::evict_*.b64"},
		{"TMA eviction qualifier", "\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::evict_first [%r1], [p, {%r1, %r1}], [%r2];\n", "unsupported qualifier .L2::evict_first"},
		{"TMA policy missing", "\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%r1], [p, {%r1, %r1}], [%r2];\n", "[mbar], cachePolicy"},
		{"TMA multicast with a policy", "\t.reg .b64 %rd<2>;\n\t.reg .b16 %rs<2>;\n\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint [%r1], [p, {%r1, %r1}], [%r2], %rs1, %rd1;\n", ".multicast::cluster with .L2::cache_hint is not supported"},
		{"policy fraction", "\t.reg .b64 %rd<2>;\n\tcreatepolicy.fractional.L2::evict_last.b64 %rd1, 2.0;\n", "fraction must be a float constant in (0, 1]"},
	}
	for _, c := range cases {
		_, err := sim.Parse(head + c.body + "\tret;\n}\n")
		if !errors.Is(err, sim.ErrParse) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrParse containing %q", c.name, err, c.want)
		}
	}
	if _, err := sim.Parse(".version 7.0\n"); !errors.Is(err, sim.ErrParse) {
		t.Errorf("empty module: %v", err)
	}
}

// TestLaunchErrors: configurations the GPU refuses are refused by Launch.
func TestLaunchErrors(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	k.ReqNTid(64)
	k.Param("p", ptx.U64)
	b, _ := m.Build()
	be := sim.New(sim.Options{})
	mod, err := be.Load(b.String())
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := mod.Function("k")
	cases := []struct {
		grid, block [3]int
		smem        int
		args        []any
		want        string
	}{
		{[3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, []any{uint64(0)}, ".reqntid"},
		{[3]int{0, 1, 1}, [3]int{64, 1, 1}, 0, []any{uint64(0)}, "must be positive"},
		{[3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, nil, "takes 1 arguments, got 0"},
		{[3]int{1, 1, 1}, [3]int{64, 1, 1}, 300 << 10, []any{uint64(0)}, "shared memory"},
		{[3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, []any{"x"}, "has type string"},
	}
	for _, c := range cases {
		err := be.Launch(fn, c.grid, c.block, c.smem, c.args)
		if !errors.Is(err, sim.ErrLaunch) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: got %v, want ErrLaunch with %q", c.grid, c.block, err, c.want)
		}
	}
	if _, err := mod.Function("nope"); !errors.Is(err, sim.ErrLaunch) {
		t.Errorf("unknown entry: %v", err)
	}
}

// rawPTX exercises what the builder does not print: .local arrays,
// generic addressing through cvta, vote, activemask, bar.warp.sync,
// atom.cas, setp with a boolean operand and p|q destinations.
const rawPTX = `.version 7.0
.target sm_80
.address_size 64
.visible .entry raw(
	.param .u64 out
)
.maxntid 64
{
	.reg .pred %p<5>;
	.reg .b32 %r<20>;
	.reg .b64 %rd<10>;
	.local .align 8 .b8 scratch[16];
	.shared .align 4 .u32 flag[1];

	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %tid.x;
	// local memory, through a generic address
	mov.u64 %rd2, scratch;
	cvta.local.u64 %rd3, %rd2;
	st.u32 [%rd3+4], %r1;
	ld.local.u32 %r2, [scratch+4];
	// vote and activemask in a divergent region (odd lanes)
	and.b32 %r3, %r1, 1;
	setp.eq.u32 %p1|%p2, %r3, 1;
	mov.u32 %r4, 0;
	@!%p1 bra $skip;
	activemask.b32 %r4;
	bar.warp.sync %r4;
$skip:
	setp.lt.u32 %p3, %r1, 40;
	vote.sync.ballot.b32 %r5, %p3, -1;
	vote.sync.all.pred %p4, %p2, -1;
	selp.u32 %r6, 1, 0, %p4;
	setp.gt.and.u32 %p4, %r1, 5, %p2;
	selp.u32 %r7, 1, 0, %p4;
	// cas on shared memory: the first thread to arrive wins
	setp.eq.u32 %p4, %r1, 0;
	@%p4 st.shared.u32 [flag], 1000;
	bar.sync 0;
	atom.shared.cas.b32 %r8, [flag], 1000, %r1;
	// out[tid] = {local, activemask, ballot, all, gt.and, cas}
	mul.wide.u32 %rd4, %r1, 24;
	add.u64 %rd5, %rd1, %rd4;
	st.global.v2.u32 [%rd5], {%r2, %r4};
	st.global.v2.u32 [%rd5+8], {%r5, %r6};
	st.global.v2.u32 [%rd5+16], {%r7, %r8};
	ret;
}
`

func TestRawPTX(t *testing.T) {
	out, err := launchPTX(t, rawPTX, "raw", [3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, make([]byte, 64*24))
	if err != nil {
		t.Fatal(err)
	}
	winners := 0
	for i := 0; i < 64; i++ {
		u := func(j int) uint32 { return binary.LittleEndian.Uint32(out[0][24*i+4*j:]) }
		wantMask := uint32(0)
		if i%2 == 1 {
			wantMask = 0xaaaaaaaa
		}
		wantBallot := uint32(0xffffffff)
		if i >= 32 {
			wantBallot = 0xff
		}
		wantAnd := uint32(0)
		if i > 5 && i%2 == 0 {
			wantAnd = 1
		}
		if u(0) != uint32(i) || u(1) != wantMask || u(2) != wantBallot || u(3) != 0 || u(4) != wantAnd {
			t.Errorf("thread %d: %v, want local %d, activemask %#x, ballot %#x, all 0, gt.and %d",
				i, []uint32{u(0), u(1), u(2), u(3), u(4)}, i, wantMask, wantBallot, wantAnd)
		}
		if u(5) == 1000 {
			winners++
		}
	}
	if winners != 1 {
		t.Errorf("%d threads won the cas, want 1", winners)
	}
}

func TestResources(t *testing.T) {
	be := sim.New(sim.Options{})
	mod, err := be.Load(rawPTX)
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := mod.Function("raw")
	r, err := fn.Resources(64, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 19 b32 and 9 b64 registers declared (register 0 of each range unused).
	if r.Registers != 19+2*9 || r.LocalBytes != 16 || r.SharedBytes != 4 {
		t.Errorf("resources %+v: want 37 registers, 16 local bytes, 4 shared bytes", r)
	}
	// 37 registers → 1280 per warp → 51 warps by registers → 25 CTAs of
	// 2 warps; threads allow 32, CTAs 32: 25·64/2048.
	if want := 25.0 * 64 / 2048; r.Occupancy != want {
		t.Errorf("occupancy %v, want %v", r.Occupancy, want)
	}
	if _, err := fn.Resources(2048, 0); !errors.Is(err, sim.ErrLaunch) {
		t.Errorf("2048 threads: %v", err)
	}
	if _, err := fn.Resources(64, 300<<10); !errors.Is(err, sim.ErrLaunch) {
		t.Errorf("300 KiB of shared memory: %v", err)
	}
	if be.Name() != "sim" || be.Device().SMs != 132 {
		t.Errorf("device %+v", be.Device())
	}
}

// reducePTX: redux.sync, bar.red, testp and min.NaN.
const reducePTX = `.version 7.0
.target sm_80
.address_size 64
.visible .entry red(
	.param .u64 out
)
.reqntid 64
{
	.reg .pred %p<6>;
	.reg .b32 %r<12>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<4>;

	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	redux.sync.add.u32 %r2, %r1, -1;
	redux.sync.max.s32 %r3, %r1, -1;
	and.b32 %r4, %r1, 3;
	setp.eq.u32 %p1, %r4, 0;
	bar.red.popc.u32 %r5, 0, %p1;
	setp.lt.u32 %p2, %r1, 100;
	bar.red.and.pred %p3, 0, %p2;
	selp.u32 %r6, 1, 0, %p3;
	bar.red.or.pred %p4, 0, !%p2;
	selp.u32 %r7, 1, 0, %p4;
	mov.f32 %f1, 0f7FC00000;
	min.NaN.f32 %f2, %f1, 0f3F800000;
	min.f32 %f3, %f1, 0f3F800000;
	testp.notanumber.f32 %p5, %f2;
	selp.u32 %r8, 1, 0, %p5;
	mov.b32 %r9, %f3;
	mul.wide.u32 %rd2, %r1, 32;
	add.u64 %rd3, %rd1, %rd2;
	st.global.v4.u32 [%rd3], {%r2, %r3, %r5, %r6};
	st.global.v4.u32 [%rd3+16], {%r7, %r8, %r9, %r1};
	ret;
}
`

func TestReductions(t *testing.T) {
	out, err := launchPTX(t, reducePTX, "red", [3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, make([]byte, 64*32))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		var got [8]uint32
		for j := range got {
			got[j] = binary.LittleEndian.Uint32(out[0][32*i+4*j:])
		}
		w := i / 32 * 32
		sum := uint32(0)
		for l := w; l < w+32; l++ {
			sum += uint32(l)
		}
		want := [8]uint32{sum, uint32(w + 31), 16, 1, 0, 1, math.Float32bits(1), uint32(i)}
		if got != want {
			t.Errorf("thread %d: %v, want %v", i, got, want)
		}
	}
}

// TestDynamicShared: the dynamic shared array follows the static ones,
// aligned, and accesses beyond static plus dynamic bytes fault. An extern
// array declared inside the kernel (older printers) works too.
func TestDynamicShared(t *testing.T) {
	const text = `.version 7.0
.target sm_80
.address_size 64
.visible .entry dyn(
	.param .u64 out
)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<3>;
	.shared .align 4 .b32 stat[3];
	.extern .shared .align 16 .b8 dsm[];

	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, stat;
	mov.u32 %r3, dsm;
	sub.u32 %r4, %r3, %r2;
	mad.lo.u32 %r5, %r1, 4, %r3;
	st.shared.u32 [%r5], %r1;
	st.global.u32 [%rd1], %r4;
	ret;
}
`
	out, err := launchPTX(t, text, "dyn", [3]int{1, 1, 1}, [3]int{32, 1, 1}, 128, make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	if off := binary.LittleEndian.Uint32(out[0]); off != 16 {
		t.Errorf("dynamic shared memory at offset %d from the static array, want 16", off)
	}
	_, err = launchPTX(t, text, "dyn", [3]int{1, 1, 1}, [3]int{32, 1, 1}, 64, make([]byte, 4))
	if !errors.Is(err, sim.ErrMemory) || !strings.Contains(err.Error(), "outside the CTA's 80 bytes of shared memory") {
		t.Errorf("64 dynamic bytes for 128 written: %v, want ErrMemory", err)
	}
}
