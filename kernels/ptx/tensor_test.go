package ptx_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// tensorKernel uses every tensor-core and cp.async helper, with shared
// addresses given as 32-bit registers, 64-bit registers and symbols.
func tensorKernel(m *ptx.Module) {
	k := m.Func("tensor")
	k.ReqNTid(32)
	g := k.Cvta(ptx.Global, k.LdParam(k.Param("g", ptx.U64)))
	tile := k.SharedArray("tile", ptx.B16, 512, 16)
	lane := k.Mov(ptx.U32, ptx.LaneID)
	s32 := k.Mad(ptx.U32, lane, ptx.Imm(16), k.Mov(ptx.U32, tile))
	s64 := k.Add(ptx.U64, k.Mov(ptx.U64, tile), k.MulWide(ptx.U32, lane, ptx.Imm(16)))
	src := k.Add(ptx.U64, g, k.MulWide(ptx.U32, lane, ptx.Imm(16)))
	k.CpAsync("cg", ptx.At(s32, 0), ptx.At(src, 0), 16)
	k.CpAsync("ca", ptx.At(s64, 512), ptx.At(src, 512), 8)
	k.CpAsyncCommit()
	k.CpAsync("ca", ptx.At(tile, 1020), ptx.At(src, 1024), 4)
	k.CpAsyncCommit()
	k.CpAsyncWait(1)
	k.CpAsyncWait(0)
	k.BarSync(0)
	a := k.Ldmatrix(4, false, ptx.At(s32, 0))
	b := k.Ldmatrix(2, true, ptx.At(s64, 0))
	x1 := k.Ldmatrix(1, false, ptx.At(tile, 0))
	c := [4]ptx.Reg{}
	for i := range c {
		c[i] = k.Mov(ptx.F32, ptx.F32Imm(0))
	}
	d := k.MmaSync(ptx.F16, [4]ptx.Reg{a[0], a[1], a[2], a[3]}, [2]ptx.Reg{b[0], b[1]}, c)
	k.MmaSyncTo(ptx.BF16, d, [4]ptx.Reg{a[0], a[1], x1[0], a[3]}, [2]ptx.Reg{b[1], b[0]}, d)
	k.St(ptx.Global, ptx.F32, ptx.At(src, 0), d[:])
}

func TestTensorPrinting(t *testing.T) {
	m := ptx.NewModule()
	tensorKernel(m)
	b, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if b.Target() != "sm_80" || b.Version() != "7.0" {
		t.Errorf("target %s, version %s; want sm_80 and 7.0", b.Target(), b.Version())
	}
	for _, want := range []string{
		"cp.async.cg.shared.global [%r", "], [%rd", "], 16;",
		"cp.async.ca.shared.global [%rd", "+512], 8;",
		"cp.async.ca.shared.global [tensor_smem_tile+1020], [%rd", "+1024], 4;",
		"cp.async.commit_group;", "cp.async.wait_group 1;", "cp.async.wait_group 0;",
		"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r",
		"ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r", "}, [tensor_smem_tile];",
		"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("PTX lacks %q:\n%s", want, text)
		}
	}
	checkLabels(t, text)
	checkRegs(t, text)
}

func TestTensorAssembles(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	m := ptx.NewModule()
	tensorKernel(m)
	b, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, arch := range []string{"sm_80", "sm_90"} {
		if _, _, err := ptxas.Assemble(ctx, path, b.String(), arch); err != nil {
			t.Errorf("%s: %v\n%s", arch, err, numbered(b.String()))
		}
	}
}

func TestTensorErrors(t *testing.T) {
	cases := []struct {
		name  string
		write func(k *ptx.Func)
		want  string
	}{
		{"mma f32 multiplicands", func(k *ptx.Func) {
			r, f := k.Mov(ptx.B32, ptx.Imm(0)), k.Mov(ptx.F32, ptx.F32Imm(0))
			k.MmaSync(ptx.F32, [4]ptx.Reg{r, r, r, r}, [2]ptx.Reg{r, r}, [4]ptx.Reg{f, f, f, f})
		}, "multiplicand type f32 (want f16 or bf16)"},
		{"mma float fragment", func(k *ptx.Func) {
			r, f := k.Mov(ptx.B32, ptx.Imm(0)), k.Mov(ptx.F32, ptx.F32Imm(0))
			k.MmaSync(ptx.F16, [4]ptx.Reg{r, f, r, r}, [2]ptx.Reg{r, r}, [4]ptx.Reg{f, f, f, f})
		}, "mma.sync a[1]: register %f1 is f32"},
		{"mma b32 accumulator", func(k *ptx.Func) {
			r, f := k.Mov(ptx.B32, ptx.Imm(0)), k.Mov(ptx.F32, ptx.F32Imm(0))
			k.MmaSync(ptx.F16, [4]ptx.Reg{r, r, r, r}, [2]ptx.Reg{r, r}, [4]ptx.Reg{f, f, r, f})
		}, "mma.sync c[2]: register %r1 is b32; want f32"},
		{"mma missing register", func(k *ptx.Func) {
			r, f := k.Mov(ptx.B32, ptx.Imm(0)), k.Mov(ptx.F32, ptx.F32Imm(0))
			k.MmaSync(ptx.F16, [4]ptx.Reg{r, r, r, r}, [2]ptx.Reg{r, {}}, [4]ptx.Reg{f, f, f, f})
		}, "mma.sync b[1]: uninitialised register"},
		{"ldmatrix x3", func(k *ptx.Func) {
			k.Ldmatrix(3, false, ptx.At(k.Mov(ptx.U32, ptx.Imm(0)), 0))
		}, "ldmatrix: 3 matrices (want 1, 2 or 4)"},
		{"ldmatrix float address", func(k *ptx.Func) {
			k.Ldmatrix(1, false, ptx.At(k.Mov(ptx.F32, ptx.F32Imm(0)), 0))
		}, "is not a 32- or 64-bit integer register"},
		{"cp.async 12 bytes", func(k *ptx.Func) {
			k.CpAsync("ca", ptx.At(k.Mov(ptx.U32, ptx.Imm(0)), 0), ptx.At(k.Mov(ptx.U64, ptx.Imm(0)), 0), 12)
		}, "cp.async: 12 bytes (want 4, 8 or 16)"},
		{"cp.async.cg 8 bytes", func(k *ptx.Func) {
			k.CpAsync("cg", ptx.At(k.Mov(ptx.U32, ptx.Imm(0)), 0), ptx.At(k.Mov(ptx.U64, ptx.Imm(0)), 0), 8)
		}, "cp.async.cg copies 16 bytes, not 8"},
		{"cp.async cache", func(k *ptx.Func) {
			k.CpAsync("cs", ptx.At(k.Mov(ptx.U32, ptx.Imm(0)), 0), ptx.At(k.Mov(ptx.U64, ptx.Imm(0)), 0), 16)
		}, `cache operator "cs" (want ca or cg)`},
		{"cp.async 32-bit global source", func(k *ptx.Func) {
			k.CpAsync("ca", ptx.At(k.Mov(ptx.U32, ptx.Imm(0)), 0), ptx.At(k.Mov(ptx.U32, ptx.Imm(0)), 0), 4)
		}, "32-bit address register %r2 used for the global space"},
		{"cp.async symbol source", func(k *ptx.Func) {
			s := k.SharedArray("s", ptx.B32, 4, 16)
			k.CpAsync("ca", ptx.At(s, 0), ptx.At(s, 0), 4)
		}, "cp.async source must be a global address register"},
		{"wait_group negative", func(k *ptx.Func) { k.CpAsyncWait(-1) }, "cp.async.wait_group -1"},
	}
	for _, c := range cases {
		m := ptx.NewModule()
		k := m.Func("k")
		c.write(k)
		_, err := m.Build()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), "tensor_test.go:") {
			t.Errorf("%s: error does not name the caller's line: %v", c.name, err)
		}
	}
}
