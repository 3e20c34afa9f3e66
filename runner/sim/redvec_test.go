package sim_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/runner/sim"
)

// Tests of the sm_90 vector reduction red.global.add.{v2,v4}.f32 (PTX
// ISA 8.1), written as PTX text: each element is an independent atomic
// add to consecutive words.

const redVecHead = `.version 8.1
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 k_param_x,
	.param .u64 k_param_y
)
`

// redVecV4PTX: thread t of CTA c adds {1, c, t, -2} to the 16-byte slot
// t%8 of y and, with ignored qualifiers and an address offset, {t, t, 1, 1}
// to slot 8 + t%8.
const redVecV4PTX = redVecHead + `.reqntid 96
{
	.reg .b32 %r<4>;
	.reg .f32 %f<5>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [k_param_y];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	and.b32 %r3, %r1, 7;
	mul.wide.u32 %rd3, %r3, 16;
	add.s64 %rd4, %rd2, %rd3;
	cvt.rn.f32.u32 %f1, %r2;
	cvt.rn.f32.u32 %f2, %r1;
	mov.f32 %f3, 0f3F800000;
	mov.f32 %f4, 0fC0000000;
	red.global.add.v4.f32 [%rd4], {%f3, %f1, %f2, %f4};
	red.relaxed.gpu.global.add.v4.f32 [%rd4+128], {%f2, %f2, %f3, %f3};
	ret;
}
`

// TestRedVecV4: many threads of several CTAs reduce into a small array
// with red.global.add.v4.f32; the sums are integers, exact in f32.
func TestRedVecV4(t *testing.T) {
	const grid, block = 6, 96
	out, err := launchPTX(t, redVecV4PTX, "k", [3]int{grid, 1, 1}, [3]int{block, 1, 1}, 0, []byte{0}, make([]byte, 256))
	if err != nil {
		t.Fatal(err)
	}
	var want [64]float32
	for c := 0; c < grid; c++ {
		for tid := 0; tid < block; tid++ {
			s := tid % 8
			for i, v := range [4]int{1, c, tid, -2} {
				want[4*s+i] += float32(v)
			}
			for i, v := range [4]int{tid, tid, 1, 1} {
				want[32+4*s+i] += float32(v)
			}
		}
	}
	checkWords(t, out[1], want[:])
}

// redVecV2PTX: thread t of CTA c adds {c+1, t%5} to the 8-byte slot t%8
// of y and {-1, 3} to slot 15.
const redVecV2PTX = redVecHead + `.reqntid 64
{
	.reg .b32 %r<6>;
	.reg .f32 %f<5>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [k_param_y];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	and.b32 %r3, %r1, 7;
	mul.wide.u32 %rd3, %r3, 8;
	add.s64 %rd4, %rd2, %rd3;
	add.u32 %r4, %r2, 1;
	rem.u32 %r5, %r1, 5;
	cvt.rn.f32.u32 %f1, %r4;
	cvt.rn.f32.u32 %f2, %r5;
	mov.f32 %f3, 0fBF800000;
	mov.f32 %f4, 0f40400000;
	red.global.add.v2.f32 [%rd4], {%f1, %f2};
	red.global.add.v2.f32 [%rd2+120], {%f3, %f4};
	ret;
}
`

// TestRedVecV2: red.global.add.v2.f32 likewise.
func TestRedVecV2(t *testing.T) {
	const grid, block = 5, 64
	out, err := launchPTX(t, redVecV2PTX, "k", [3]int{grid, 1, 1}, [3]int{block, 1, 1}, 0, []byte{0}, make([]byte, 128))
	if err != nil {
		t.Fatal(err)
	}
	var want [32]float32
	for c := 0; c < grid; c++ {
		for tid := 0; tid < block; tid++ {
			want[2*(tid%8)] += float32(c + 1)
			want[2*(tid%8)+1] += float32(tid % 5)
			want[30] += -1
			want[31] += 3
		}
	}
	checkWords(t, out[1], want[:])
}

// checkWords compares the f32 words of out with want, exactly.
func checkWords(t *testing.T, out []byte, want []float32) {
	t.Helper()
	for i, w := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])); got != w {
			t.Errorf("y[%d] = %v, want %v", i, got, w)
		}
	}
}

// redVecAtPTX returns a kernel whose threads run
// red.global.add.<vec>.f32 at y+off.
func redVecAtPTX(vec, off string) string {
	regs := "{%f1, %f1}"
	if vec == "v4" {
		regs = "{%f1, %f1, %f1, %f1}"
	}
	return redVecHead + `.reqntid 32
{
	.reg .f32 %f<2>;
	.reg .b64 %rd<3>;

	ld.param.u64 %rd1, [k_param_y];
	cvta.to.global.u64 %rd2, %rd1;
	mov.f32 %f1, 0f3F800000;
	red.global.add.` + vec + `.f32 [%rd2+` + off + `], ` + regs + `;
	ret;
}
`
}

// TestRedVecFaults: a vector reduction not aligned to its size faults
// with ErrMisaligned, one outside (or crossing the end of) its
// allocation with ErrMemory, naming the instruction; nothing is written.
func TestRedVecFaults(t *testing.T) {
	cases := []struct {
		vec, off string
		size     int
		want     error
		detail   string
	}{
		{"v4", "8", 64, sim.ErrMisaligned, "16-byte vector atomic is not 16-byte aligned"},
		{"v4", "4", 64, sim.ErrMisaligned, "16-byte vector atomic is not 16-byte aligned"},
		{"v2", "4", 64, sim.ErrMisaligned, "8-byte vector atomic is not 8-byte aligned"},
		{"v4", "16", 24, sim.ErrMemory, "crosses the end of the 24-byte allocation"},
		{"v4", "4194304", 64, sim.ErrMemory, ""},
	}
	for _, c := range cases {
		out, err := launchPTX(t, redVecAtPTX(c.vec, c.off), "k", [3]int{2, 1, 1}, [3]int{32, 1, 1}, 0, []byte{0}, make([]byte, c.size))
		inst := "red.global.add." + c.vec + ".f32 [%rd2+" + c.off + "]"
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), inst) || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("%s at +%s: %v, want %v naming %q (%s)", c.vec, c.off, err, c.want, inst, c.detail)
			continue
		}
		var e *sim.ExecError
		if !errors.As(err, &e) {
			t.Errorf("%s at +%s: %T is not an *ExecError", c.vec, c.off, err)
		}
		for i, b := range out[1] {
			if b != 0 {
				t.Errorf("%s at +%s: byte %d written by a faulting reduction", c.vec, c.off, i)
				break
			}
		}
	}
}

// TestRedVecDecodeErrors: vector atomics other than
// red.global.add.{v2,v4}.f32 with a vector of matching length are
// refused with ErrParse naming the line.
func TestRedVecDecodeErrors(t *testing.T) {
	head := ".version 8.1\n.target sm_90\n.address_size 64\n.visible .entry k(\n\t.param .u64 p\n)\n{\n" +
		"\t.reg .b32 %r<3>;\n\t.reg .f32 %f<5>;\n\t.reg .f64 %fd<5>;\n\t.reg .b64 %rd<2>;\n"
	cases := []struct {
		name, body, want string
	}{
		{"shared", "red.shared.add.v4.f32 [%r1], {%f1, %f2, %f3, %f4};", "needs the .global space (found .shared)"},
		{"generic", "red.add.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};", "needs the .global space (found .generic)"},
		{"f64", "red.global.add.v4.f64 [%rd1], {%fd1, %fd2, %fd3, %fd4};", "red.global.add.v4.f64 is not supported: vector reductions need .f32"},
		{"u32", "red.global.add.v2.u32 [%rd1], {%r1, %r2};", "red.global.add.v2.u32 is not supported: vector reductions need .f32"},
		{"min", "red.global.min.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};", "vector reductions exist only for .add"},
		{"three registers", "red.global.add.v4.f32 [%rd1], {%f1, %f2, %f3};", "3 registers for a .v4 reduction"},
		{"five registers", "red.global.add.v2.f32 [%rd1], {%f1, %f2, %f3, %f4};", "4 registers for a .v2 reduction"},
		{"scalar operand", "red.global.add.v2.f32 [%rd1], %f1;", "needs a vector of 2 registers"},
		{"order", "red.global.v4.add.f32 [%rd1], {%f1, %f2, %f3, %f4};", ".v4 must follow the operation"},
		{"v8", "red.global.add.v8.f32 [%rd1], {%f1, %f2, %f3, %f4, %f1, %f2, %f3, %f4};", "red.v8 is not supported"},
		{"atom", "atom.global.add.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1], {%f1, %f2, %f3, %f4};", "atom.v4: vector atomics are not supported"},
		{"order, type last", "red.global.v4.f32.add [%rd1], {%f1, %f2, %f3, %f4};", ".v4 must follow the operation"},
		{"atom v2", "atom.global.v2.f32.add {%f1, %f2}, [%rd1], {%f1, %f2};", "atom.v2: vector atomics are not supported"},
	}
	for _, c := range cases {
		_, err := sim.Parse(head + "\t" + c.body + "\n\tret;\n}\n")
		if !errors.Is(err, sim.ErrParse) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "line 12") {
			t.Errorf("%s: got %v, want ErrParse at line 12 containing %q", c.name, err, c.want)
		}
	}
	// The same module with the valid forms parses.
	for _, body := range []string{
		"red.global.add.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};",
		"red.relaxed.gpu.global.add.v2.f32 [%rd1+8], {%f1, %f2};",
		"red.global.add.f32 [%rd1], %f1;",
	} {
		if _, err := sim.Parse(head + "\t" + body + "\n\tret;\n}\n"); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}
