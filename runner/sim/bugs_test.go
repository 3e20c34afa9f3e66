package sim_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// testFamily is a one-shape family for validating hand-written kernels
// through runner.Session: x in, y out, f32, n elements, with a reference
// and a kernel to emit.
type testFamily struct {
	n, grid, block int
	emit           func(k *ptx.Func, x, y ptx.Reg)
	ref            func(x []float64) []float64
}

func (f *testFamily) Name() string          { return "test" }
func (f *testFamily) Doc() string           { return "test" }
func (f *testFamily) Dims() []string        { return []string{"n"} }
func (f *testFamily) DTypes() []dtype.DType { return []dtype.DType{dtype.F32} }
func (f *testFamily) Shapes(variants.Preset, []dtype.DType) []variants.Shape {
	return []variants.Shape{f.shape()}
}
func (f *testFamily) shape() variants.Shape {
	return variants.Shape{Dims: []variants.Dim{{Name: "n", Value: f.n}}, DType: dtype.F32}
}
func (f *testFamily) Shape(variants.Spec, dtype.DType) (variants.Shape, error) { return f.shape(), nil }
func (f *testFamily) Space(variants.Shape) variants.Space                      { return variants.Space{} }
func (f *testFamily) Buffers(s variants.Shape) []kernels.Buffer {
	return []kernels.Buffer{{Name: "x", DType: dtype.F32, Elems: configs.Int(f.n), Role: kernels.Input},
		{Name: "y", DType: dtype.F32, Elems: configs.Int(len(f.ref(make([]float64, f.n)))), Role: kernels.Output}}
}
func (f *testFamily) Inputs(s variants.Shape, seed uint64) map[string][]float64 {
	return map[string][]float64{"x": kernels.Uniform(dtype.F32, f.n, -1, 1, seed, "x")}
}
func (f *testFamily) Reference(s variants.Shape, in map[string][]float64) map[string][]float64 {
	return map[string][]float64{"y": f.ref(in["x"])}
}
func (f *testFamily) Cost(variants.Shape) kernels.Cost { return kernels.Cost{} }
func (f *testFamily) Tolerance(variants.Shape, string) kernels.Tolerance {
	return kernels.Tolerance{Atol: 1e-6, Rtol: 1e-6}
}
func (f *testFamily) Emit(s variants.Shape, p variants.Params) (kernels.Program, error) {
	m := ptx.NewModule()
	k := m.Func("k")
	k.ReqNTid(f.block)
	x := k.Cvta(ptx.Global, k.LdParam(k.Param("x", ptx.U64)))
	y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
	f.emit(k, x, y)
	b, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	return kernels.Program{PTX: b.String(), Launches: []kernels.Launch{{Entry: "k", Grid: configs.Grid(f.grid, 1, 1),
		Block: [3]int{f.block, 1, 1}, Args: []kernels.Arg{{Buffer: "x"}, {Buffer: "y"}}}}}, nil
}

// validate runs f's kernel through a Session on the interpreter.
func validate(t *testing.T, f *testFamily) (runner.Check, error) {
	t.Helper()
	ss := runner.NewSession(sim.New(sim.Options{}))
	defer ss.Release()
	if err := ss.Prepare(f, f.shape(), 1); err != nil {
		t.Fatal(err)
	}
	prog, err := f.Emit(f.shape(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ss.Load(prog)
	if err != nil {
		t.Fatal(err)
	}
	return ss.Validate(l)
}

// gid returns ctaid.x·ntid.x + tid.x.
func gid(k *ptx.Func) ptx.Reg {
	return k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), k.Mov(ptx.U32, ptx.NTidX), k.Mov(ptx.U32, ptx.TidX))
}

func elem(k *ptx.Func, base, i ptx.Reg) ptx.Addr {
	return ptx.At(k.Add(ptx.U64, base, k.MulWide(ptx.U32, i, ptx.Imm(4))), 0)
}

func double(x []float64) []float64 {
	y := make([]float64, len(x))
	for i := range x {
		y[i] = 2 * x[i]
	}
	return y
}

// scale writes y[i] = 2·x[i] for i < bound.
func scale(bound int) func(k *ptx.Func, x, y ptx.Reg) {
	return func(k *ptx.Func, x, y ptx.Reg) {
		i := gid(k)
		k.If(k.Setp("lt", ptx.U32, i, ptx.Imm(bound)), func() {
			v := k.Ld(ptx.Global, ptx.F32, 1, elem(k, x, i))[0]
			k.St(ptx.Global, ptx.F32, elem(k, y, i), []ptx.Reg{k.Mul(ptx.F32, v, ptx.F32Imm(2))})
		})
	}
}

// Planted bug: the kernel stops one element short, so the last output
// keeps the NaN poison and validation fails on it.
func TestPlantedOffByOneTail(t *testing.T) {
	const n = 1000
	good := &testFamily{n: n, grid: 8, block: 128, emit: scale(n), ref: double}
	if c, err := validate(t, good); err != nil || !c.OK {
		t.Fatalf("correct kernel: %+v, %v", c, err)
	}
	bad := &testFamily{n: n, grid: 8, block: 128, emit: scale(n - 1), ref: double}
	c, err := validate(t, bad)
	if err != nil {
		t.Fatal(err)
	}
	if c.OK || !strings.Contains(c.Message, "y[999] = NaN") {
		t.Errorf("off-by-one tail passed validation: %+v", c)
	}
}

// warpSum writes y[w] = the sum of x over warp w: a shfl.down reduction
// leaves the sum in lane 0, which lane src broadcasts with shfl.idx.
func warpSum(src int) func(k *ptx.Func, x, y ptx.Reg) {
	return func(k *ptx.Func, x, y ptx.Reg) {
		i := gid(k)
		v := k.Ld(ptx.Global, ptx.F32, 1, elem(k, x, i))[0]
		for _, off := range []int64{16, 8, 4, 2, 1} {
			o := k.ShflSync("down", v, ptx.Imm(off), ptx.Imm(31), 0xffffffff)
			k.MovTo(v, k.Add(ptx.F32, v, k.BitsToF32(o)))
		}
		all := k.BitsToF32(k.ShflSync("idx", v, ptx.Imm(int64(src)), ptx.Imm(31), 0xffffffff))
		lane := k.Mov(ptx.U32, ptx.LaneID)
		k.If(k.Setp("eq", ptx.U32, lane, ptx.Imm(31)), func() {
			k.St(ptx.Global, ptx.F32, elem(k, y, k.Shr(ptx.U32, i, ptx.Imm(5))), []ptx.Reg{all})
		})
	}
}

func warpSums(x []float64) []float64 {
	y := make([]float64, len(x)/32)
	for w := range y {
		// The reduction tree of shfl.down: pairs (i, i+16), then (i, i+8), ...
		var v [32]float32
		for l := range v {
			v[l] = float32(x[32*w+l])
		}
		for off := 16; off >= 1; off /= 2 {
			for l := 0; l+off < 32; l++ {
				v[l] += v[l+off]
			}
		}
		y[w] = float64(v[0])
	}
	return y
}

// Planted bug: the broadcast reads lane 1, which holds a partial sum.
func TestPlantedWrongShuffleLane(t *testing.T) {
	good := &testFamily{n: 256, grid: 2, block: 128, emit: warpSum(0), ref: warpSums}
	if c, err := validate(t, good); err != nil || !c.OK {
		t.Fatalf("correct kernel: %+v, %v", c, err)
	}
	bad := &testFamily{n: 256, grid: 2, block: 128, emit: warpSum(1), ref: warpSums}
	c, err := validate(t, bad)
	if err != nil {
		t.Fatal(err)
	}
	if c.OK {
		t.Errorf("wrong shuffle lane passed validation: %+v", c)
	}
}

// reverse writes each CTA's block of x reversed through shared memory,
// with or without the barrier between the stores and the loads.
func reverse(barrier bool) *ptx.Module {
	m := ptx.NewModule()
	k := m.Func("k")
	x := k.Cvta(ptx.Global, k.LdParam(k.Param("x", ptx.U64)))
	y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
	buf := k.SharedArray("buf", ptx.F32, 128, 0)
	base := k.Mov(ptx.U32, buf)
	tid := k.Mov(ptx.U32, ptx.TidX)
	i := gid(k)
	v := k.Ld(ptx.Global, ptx.F32, 1, elem(k, x, i))
	k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, tid, ptx.Imm(4), base), 0), v)
	if barrier {
		k.BarSync(0)
	}
	r := k.Sub(ptx.U32, ptx.Imm(127), tid)
	w := k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, r, ptx.Imm(4), base), 0))
	k.St(ptx.Global, ptx.F32, elem(k, y, i), w)
	return m
}

func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func ramp(n int) []byte {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return f32s(v...)
}

// Planted bug: no bar.sync between writing shared memory and reading what
// other threads wrote: the race detector reports it.
func TestPlantedMissingBarrier(t *testing.T) {
	out, err := launch(t, reverse(true), "k", 2, 128, 0, ramp(256), make([]byte, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(out[1][4*130:])); got != 253 {
		t.Errorf("reverse with barrier: y[130] = %v, want 253", got)
	}
	_, err = launch(t, reverse(false), "k", 2, 128, 0, ramp(256), make([]byte, 1024))
	var e *sim.ExecError
	if !errors.Is(err, sim.ErrRace) || !errors.As(err, &e) {
		t.Fatalf("missing barrier: %v, want ErrRace", err)
	}
	if e.Kernel != "k" || !strings.Contains(e.Inst, "shared") || e.CTA != [3]int{0, 0, 0} {
		t.Errorf("race error does not name the kernel, the shared access and the CTA: %v", err)
	}
}

// Planted bug: bar.sync inside a branch only half of a warp takes. The
// builder's static analysis may refuse the kernel already; the interpreter
// is then given the same kernel as text.
func TestPlantedBarrierInDivergentBranch(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	k.ReqNTid(64)
	k.Param("x", ptx.U64)
	k.Param("y", ptx.U64)
	tid := k.Mov(ptx.U32, ptx.TidX)
	k.If(k.Setp("lt", ptx.U32, tid, ptx.Imm(16)), func() { k.BarSync(0) })
	_, err := launchPTX(t, buildOr(t, m, divergentBarrierPTX), "k", [3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, []byte{0}, []byte{0})
	if !errors.Is(err, sim.ErrBarrier) || !strings.Contains(err.Error(), "lanes 0-15 of warp 0") ||
		!strings.Contains(err.Error(), "bar.sync 0") {
		t.Fatalf("barrier in a divergent branch: %v, want ErrBarrier naming lanes 0-15 and the instruction", err)
	}
}

const rawHead = `.version 7.0
.target sm_80
.address_size 64

.visible .entry k(
	.param .u64 k_param_x,
	.param .u64 k_param_y
)
`

const divergentBarrierPTX = rawHead + `.reqntid 64
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;

	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 16;
	@!%p1 bra $L_if1_end;
	bar.sync 0;
$L_if1_end:
	ret;
}
`

// buildOr returns m's PTX, or fallback (the same kernel written by hand)
// when the builder's static analyses refuse m: the interpreter's own
// checks are tested either way.
func buildOr(t *testing.T, m *ptx.Module, fallback string) string {
	t.Helper()
	b, err := m.Build()
	if err != nil {
		t.Logf("the builder refuses the kernel (%v); running the hand-written PTX", err)
		return fallback
	}
	return b.String()
}

// Planted bug: the store has no bound check and the grid has one thread
// more than the buffer has elements.
func TestPlantedOutOfBoundsStore(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	x := k.Cvta(ptx.Global, k.LdParam(k.Param("x", ptx.U64)))
	_ = x
	y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
	i := gid(k)
	k.St(ptx.Global, ptx.F32, elem(k, y, i), []ptx.Reg{k.Mov(ptx.F32, ptx.F32Imm(1))})
	_, err := launch(t, m, "k", 1, 101, 0, []byte{0}, make([]byte, 400))
	var e *sim.ExecError
	if !errors.Is(err, sim.ErrMemory) || !errors.As(err, &e) {
		t.Fatalf("out-of-bounds store: %v, want ErrMemory", err)
	}
	if e.Thread != [3]int{100, 0, 0} || !e.HasAdd || !strings.Contains(err.Error(), "0 bytes past the end of the 400-byte allocation") {
		t.Errorf("error does not name thread 100 and the address past the end: %v", err)
	}
}

// Planted bug: a .v4.f32 load at an address 4 bytes off a 16-byte boundary.
func TestPlantedMisalignedV4(t *testing.T) {
	for _, off := range []int64{0, 4} {
		m := ptx.NewModule()
		k := m.Func("k")
		x := k.Cvta(ptx.Global, k.LdParam(k.Param("x", ptx.U64)))
		y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
		i := k.Mov(ptx.U32, ptx.TidX)
		a := k.Add(ptx.U64, x, k.MulWide(ptx.U32, i, ptx.Imm(16)))
		v := k.Ld(ptx.Global, ptx.F32, 4, ptx.At(a, off))
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, y, k.MulWide(ptx.U32, i, ptx.Imm(16))), 0), v)
		_, err := launch(t, m, "k", 1, 8, 0, make([]byte, 16*9), make([]byte, 16*8))
		if off == 0 {
			if err != nil {
				t.Fatalf("aligned: %v", err)
			}
			continue
		}
		var e *sim.ExecError
		if !errors.Is(err, sim.ErrMisaligned) || !errors.As(err, &e) || e.Addr%16 != 4 ||
			!strings.Contains(e.Inst, "ld.global.v4.f32") {
			t.Fatalf("misaligned v4: %v, want ErrMisaligned at an address ≡ 4 mod 16", err)
		}
	}
}

// TestUninitializedRegister: a register written only under a branch and
// read by every thread.
func TestUninitializedRegister(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	k.Param("x", ptx.U64)
	y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
	tid := k.Mov(ptx.U32, ptx.TidX)
	v := k.Reg(ptx.F32)
	k.If(k.Setp("lt", ptx.U32, tid, ptx.Imm(40)), func() { k.MovTo(v, ptx.F32Imm(1)) })
	k.St(ptx.Global, ptx.F32, elem(k, y, tid), []ptx.Reg{v})
	_, err := launch(t, m, "k", 1, 64, 0, []byte{0}, make([]byte, 256))
	var e *sim.ExecError
	if !errors.Is(err, sim.ErrUninitialized) || !errors.As(err, &e) || e.Thread[0] != 40 ||
		!strings.Contains(err.Error(), "register %f1 read by lanes 8-31 of warp 1") {
		t.Fatalf("uninitialized read: %v, want ErrUninitialized naming thread 40 and lanes 8-31 of warp 1", err)
	}
}

// TestBarrierDeadlocks: warps waiting at different barriers are an
// error; warps that exit early do not hold a barrier up (as on the GPU).
func TestBarrierDeadlocks(t *testing.T) {
	build := func(exit bool) *ptx.Module {
		m := ptx.NewModule()
		k := m.Func("k")
		k.ReqNTid(64)
		k.Param("x", ptx.U64)
		k.Param("y", ptx.U64)
		warp := k.Shr(ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(5))
		k.IfElse(k.Setp("eq", ptx.U32, warp, ptx.Imm(0)), func() { k.BarSync(0) }, func() {
			if exit {
				k.Ret()
			} else {
				k.BarSync(0)
			}
		})
		return m
	}
	text := buildOr(t, build(false), fmt.Sprintf(twoBarriersPTX, "bar.sync 0"))
	_, err := launchPTX(t, text, "k", [3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, []byte{0}, []byte{0})
	if !errors.Is(err, sim.ErrBarrier) || !strings.Contains(err.Error(), "while warp 1 waits at line") {
		t.Errorf("different barriers: %v", err)
	}
	text = buildOr(t, build(true), fmt.Sprintf(twoBarriersPTX, "ret"))
	if _, err := launchPTX(t, text, "k", [3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, []byte{0}, []byte{0}); err != nil {
		t.Errorf("warp 1 exits, warp 0 waits: %v, want the barrier to complete", err)
	}
}

// twoBarriersPTX: warp 0 waits at one bar.sync, warp 1 runs the %s of the
// else branch.
const twoBarriersPTX = rawHead + `.reqntid 64
{
	.reg .pred %%p<2>;
	.reg .b32 %%r<3>;

	mov.u32 %%r1, %%tid.x;
	shr.u32 %%r2, %%r1, 5;
	setp.eq.u32 %%p1, %%r2, 0;
	@!%%p1 bra $L_if1_else;
	bar.sync 0;
	bra $L_if1_end;
$L_if1_else:
	%s;
$L_if1_end:
	ret;
}
`

// TestShuffleMaskErrors: a member mask naming lanes that do not execute
// the shuffle, and a shuffle reading a lane outside the mask.
func TestShuffleMaskErrors(t *testing.T) {
	cases := []struct {
		name  string
		mask  uint32
		guard bool  // execute only in lanes < 16
		lane  int64 // source lane of shfl.idx
		want  string
	}{
		{"full mask, half the lanes", 0xffffffff, true, 0, "names lanes 16-31 of warp 0, which are inactive"},
		{"half mask, source outside", 0x0000ffff, true, 20, "lane 0 reads lane 20"},
		{"half mask, all lanes execute", 0x0000ffff, false, 0, "lanes 16-31 execute it but are not in the member mask"},
	}
	for _, c := range cases {
		m := ptx.NewModule()
		k := m.Func("k")
		k.ReqNTid(32)
		k.Param("x", ptx.U64)
		y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
		lane := k.Mov(ptx.U32, ptx.LaneID)
		body := func() {
			v := k.ShflSync("idx", lane, ptx.Imm(c.lane), ptx.Imm(31), c.mask)
			k.St(ptx.Global, ptx.B32, elem(k, y, lane), []ptx.Reg{v})
		}
		if c.guard {
			k.If(k.Setp("lt", ptx.U32, lane, ptx.Imm(16)), body)
		} else {
			body()
		}
		bound := 32
		if c.guard {
			bound = 16
		}
		text := buildOr(t, m, fmt.Sprintf(shflMaskPTX, bound, c.lane, c.mask))
		_, err := launchPTX(t, text, "k", [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, []byte{0}, make([]byte, 128))
		if !errors.Is(err, sim.ErrWarpSync) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrWarpSync with %q", c.name, err, c.want)
		}
	}
}

// shflMaskPTX: lanes below %d run shfl.sync.idx from lane %d with mask %d.
const shflMaskPTX = rawHead + `.reqntid 32
{
	.reg .pred %%p<2>;
	.reg .b32 %%r<3>;
	.reg .b64 %%rd<6>;

	ld.param.u64 %%rd1, [k_param_y];
	cvta.to.global.u64 %%rd2, %%rd1;
	mov.u32 %%r1, %%laneid;
	setp.lt.u32 %%p1, %%r1, %d;
	@!%%p1 bra $L_if1_end;
	shfl.sync.idx.b32 %%r2, %%r1, %d, 31, %d;
	mul.wide.u32 %%rd3, %%r1, 4;
	add.u64 %%rd4, %%rd2, %%rd3;
	st.global.b32 [%%rd4], %%r2;
$L_if1_end:
	ret;
}
`

// TestDivergence: nested divergent ifs and loops whose trip counts differ
// per lane reconverge and compute what a sequential program would.
func TestDivergence(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	k.Param("x", ptx.U64)
	y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
	tid := k.Mov(ptx.U32, ptx.TidX)
	acc := k.Mov(ptx.U32, ptx.Imm(0))
	// for j < tid%7: acc += j, and +100 when j is odd and tid is even
	rem7 := k.Sub(ptx.U32, tid, k.Mul(ptx.U32, k.Div(ptx.U32, tid, ptx.Imm(7)), ptx.Imm(7)))
	k.For(ptx.U32, ptx.Imm(0), rem7, ptx.Imm(1), func(j ptx.Reg) {
		k.MovTo(acc, k.Add(ptx.U32, acc, j))
		odd := k.Setp("eq", ptx.U32, k.And(ptx.U32, j, ptx.Imm(1)), ptx.Imm(1))
		k.If(odd, func() {
			k.IfElse(k.Setp("eq", ptx.U32, k.And(ptx.U32, tid, ptx.Imm(1)), ptx.Imm(0)),
				func() { k.MovTo(acc, k.Add(ptx.U32, acc, ptx.Imm(100))) },
				func() { k.MovTo(acc, k.Add(ptx.U32, acc, ptx.Imm(1000))) })
		})
	})
	k.If(k.Setp("gt", ptx.U32, tid, ptx.Imm(50)), func() { k.Ret() })
	k.St(ptx.Global, ptx.U32, elem(k, y, tid), []ptx.Reg{acc})
	out, err := launch(t, m, "k", 1, 64, 0, []byte{0}, make([]byte, 256))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		want := uint32(0)
		if i > 50 {
			want = 0
		} else {
			for j := 0; j < i%7; j++ {
				want += uint32(j)
				if j%2 == 1 {
					if i%2 == 0 {
						want += 100
					} else {
						want += 1000
					}
				}
			}
		}
		if got := binary.LittleEndian.Uint32(out[1][4*i:]); got != want {
			t.Errorf("thread %d: %d, want %d", i, got, want)
		}
	}
}

// TestAtomics: global and shared atomics from many CTAs and threads.
func TestAtomics(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	k.Param("x", ptx.U64)
	y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
	cnt := k.SharedArray("cnt", ptx.U32, 1, 0)
	tid := k.Mov(ptx.U32, ptx.TidX)
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
		k.St(ptx.Shared, ptx.U32, ptx.At(cnt, 0), []ptx.Reg{k.Mov(ptx.U32, ptx.Imm(0))})
	})
	k.BarSync(0)
	old := k.Atom(ptx.Shared, "add", ptx.U32, ptx.At(cnt, 0), ptx.Imm(1))
	k.Red(ptx.Global, "add", ptx.U32, ptx.At(y, 0), ptx.Imm(1))
	k.Red(ptx.Global, "max", ptx.U32, ptx.At(y, 4), old)
	k.Red(ptx.Global, "add", ptx.F32, ptx.At(y, 8), k.Mov(ptx.F32, ptx.F32Imm(0.5)))
	k.Atom(ptx.Global, "add", ptx.U64, ptx.At(y, 16), k.Cvt(ptx.U64, ptx.U32, "", tid))
	k.Red(ptx.Global, "min", ptx.S32, ptx.At(y, 24), k.Sub(ptx.S32, ptx.Imm(0), tid))
	k.Atom(ptx.Global, "exch", ptx.B32, ptx.At(y, 28), ptx.Imm(7))
	k.BarSync(0)
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
		total := k.Ld(ptx.Shared, ptx.U32, 1, ptx.At(cnt, 0))
		k.Red(ptx.Global, "add", ptx.U32, ptx.At(y, 32), total[0])
	})
	out, err := launch(t, m, "k", 50, 96, 0, []byte{0}, make([]byte, 40))
	if err != nil {
		t.Fatal(err)
	}
	u32 := func(o int) uint32 { return binary.LittleEndian.Uint32(out[1][o:]) }
	if got := u32(0); got != 50*96 {
		t.Errorf("red.add.u32 = %d, want %d", got, 50*96)
	}
	if got := u32(4); got != 95 {
		t.Errorf("red.max of atom.add results = %d, want 95", got)
	}
	if got := math.Float32frombits(u32(8)); got != 2400 {
		t.Errorf("red.add.f32 = %v, want 2400", got)
	}
	if got := binary.LittleEndian.Uint64(out[1][16:]); got != 50*95*96/2 {
		t.Errorf("atom.add.u64 = %d, want %d", got, 50*95*96/2)
	}
	if got := int32(u32(24)); got != -95 {
		t.Errorf("red.min.s32 = %d, want -95", got)
	}
	if u32(28) != 7 || u32(32) != 50*96 {
		t.Errorf("exch %d, shared totals %d", u32(28), u32(32))
	}
}

// TestCpAsyncMissingWait: reading a cp.async destination without waiting
// for the copy gets the old bytes, and the copy completing later in the
// same barrier interval is reported as a race with the readers.
func TestCpAsyncMissingWait(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	x := k.Cvta(ptx.Global, k.LdParam(k.Param("x", ptx.U64)))
	y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
	buf := k.SharedArray("buf", ptx.B32, 128, 16)
	lane := k.Mov(ptx.U32, ptx.TidX)
	mine := k.Mad(ptx.U32, lane, ptx.Imm(16), k.Mov(ptx.U32, buf))
	k.CpAsync("cg", ptx.At(mine, 0), ptx.At(k.Add(ptx.U64, x, k.MulWide(ptx.U32, lane, ptx.Imm(16))), 0), 16)
	k.CpAsyncCommit()
	k.BarSync(0) // no wait: the barrier does not complete the copies
	v := k.Ld(ptx.Shared, ptx.B32, 4, ptx.At(k.Xor(ptx.U32, mine, ptx.Imm(16)), 0))
	k.St(ptx.Global, ptx.B32, ptx.At(k.Add(ptx.U64, y, k.MulWide(ptx.U32, lane, ptx.Imm(16))), 0), v)
	k.CpAsyncWait(0)
	_, err := launch(t, m, "k", 1, 32, 0, ramp(128), make([]byte, 512))
	if !errors.Is(err, sim.ErrRace) || !strings.Contains(err.Error(), "cp.async") {
		t.Fatalf("missing cp.async wait: %v, want ErrRace at the cp.async", err)
	}
}

// TestMmaNeedsFullWarp: mma.sync executed by half a warp.
func TestMmaNeedsFullWarp(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	k.ReqNTid(32)
	k.Param("x", ptx.U64)
	k.Param("y", ptx.U64)
	z := k.Mov(ptx.B32, ptx.Imm(0))
	zf := k.Mov(ptx.F32, ptx.F32Imm(0))
	lane := k.Mov(ptx.U32, ptx.LaneID)
	k.If(k.Setp("lt", ptx.U32, lane, ptx.Imm(16)), func() {
		k.MmaSync(ptx.F16, [4]ptx.Reg{z, z, z, z}, [2]ptx.Reg{z, z}, [4]ptx.Reg{zf, zf, zf, zf})
	})
	text := buildOr(t, m, halfWarpMmaPTX)
	_, err := launchPTX(t, text, "k", [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, []byte{0}, []byte{0})
	if !errors.Is(err, sim.ErrWarpSync) || !strings.Contains(err.Error(), "lanes 16-31 do not execute it") {
		t.Fatalf("mma in half a warp: %v", err)
	}
}

const halfWarpMmaPTX = rawHead + `.reqntid 32
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	.reg .f32 %f<6>;

	mov.b32 %r1, 0;
	mov.f32 %f1, 0f00000000;
	mov.u32 %r2, %laneid;
	setp.lt.u32 %p1, %r2, 16;
	@!%p1 bra $L_if1_end;
	mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f2, %f3, %f4, %f5}, {%r1, %r1, %r1, %r1}, {%r1, %r1}, {%f1, %f1, %f1, %f1};
$L_if1_end:
	ret;
}
`

// TestDeterministicFirstError: with many failing CTAs and several
// workers, the error is always the lowest CTA's.
func TestDeterministicFirstError(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("k")
	k.Param("x", ptx.U64)
	y := k.Cvta(ptx.Global, k.LdParam(k.Param("y", ptx.U64)))
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	k.If(k.Setp("ge", ptx.U32, cta, ptx.Imm(37)), func() {
		k.St(ptx.Global, ptx.U32, ptx.At(y, 1<<22), []ptx.Reg{cta})
	})
	b, _ := m.Build()
	for i := 0; i < 5; i++ {
		be := sim.New(sim.Options{Workers: 8})
		mod, _ := be.Load(b.String())
		fn, _ := mod.Function("k")
		p, _ := be.Alloc(64)
		if err := be.Launch(fn, [3]int{200, 1, 1}, [3]int{32, 1, 1}, 0, []any{p, p}); err != nil {
			t.Fatal(err)
		}
		err := be.Sync()
		var e *sim.ExecError
		if !errors.As(err, &e) || e.CTA != [3]int{37, 0, 0} {
			t.Fatalf("run %d: %v, want the error of CTA 37", i, err)
		}
		if be.Sync() != nil {
			t.Error("Sync does not clear the error")
		}
	}
}
