package ptx_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/ptx/isa"
)

// opcodes returns the opcode of every instruction line of printed PTX.
func opcodes(text string) []string {
	var ops []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "\t.") || strings.HasPrefix(l, "\t//") {
			continue
		}
		f := strings.Fields(l)
		if strings.HasPrefix(f[0], "@") {
			f = f[1:]
		}
		ops = append(ops, strings.TrimSuffix(f[0], ";"))
	}
	return ops
}

// rowTarget returns the target and version the rows of ops give, on the
// builder's floor of sm_80 and PTX 7.0, and fails for an opcode without a
// row.
func rowTarget(t *testing.T, ops []string) string {
	t.Helper()
	sm, pv := 80, 70
	for _, op := range ops {
		r, ok := isa.Lookup(op)
		if !ok {
			t.Errorf("the builder emits %s, which has no row in the ISA table", op)
			continue
		}
		s, p := r.Target(op)
		sm, pv = max(sm, s), max(pv, p)
	}
	return fmt.Sprintf("sm_%d %d.%d", sm, pv/10, pv%10)
}

// TestHelpersHaveRows builds kernels that call every helper and checks
// that each instruction they emit has a row, and that the module's
// .target and .version are those its rows need.
func TestHelpersHaveRows(t *testing.T) {
	for name, k := range map[string]func(*ptx.Module) *ptx.Func{"everything": everything, "hopper": hopper} {
		m := ptx.NewModule()
		k(m)
		b, err := m.Build()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := b.Target()+" "+b.Version(), rowTarget(t, opcodes(b.String())); got != want {
			t.Errorf("%s: module is %s, its rows need %s", name, got, want)
		}
	}
}

// TestHelperTargets pins the target of helpers whose forms need more
// than the floor, and that it is what the table says.
func TestHelperTargets(t *testing.T) {
	for _, c := range []struct {
		name string
		emit func(k *ptx.Func, p ptx.Reg)
		want string
	}{
		{"add f32", func(k *ptx.Func, p ptx.Reg) { k.Add(ptx.F32, p, p) }, "sm_80 7.0"},
		{"add bf16", func(k *ptx.Func, p ptx.Reg) { h := k.Mov(ptx.BF16, ptx.Imm(0)); k.Add(ptx.BF16, h, h) }, "sm_90 7.8"},
		{"setp bf16x2 via fma", func(k *ptx.Func, p ptx.Reg) { h := k.Mov(ptx.BF16x2, ptx.Imm(0)); k.Fma(ptx.BF16x2, h, h, h) }, "sm_90 7.8"},
		{"cvt f32 from bf16 (a shift)", func(k *ptx.Func, p ptx.Reg) { k.Cvt(ptx.F32, ptx.BF16, "", k.Mov(ptx.BF16, ptx.Imm(0))) }, "sm_80 7.0"},
		{"cvt f16 from bf16", func(k *ptx.Func, p ptx.Reg) { k.Cvt(ptx.F16, ptx.BF16, "rn", k.Mov(ptx.BF16, ptx.Imm(0))) }, "sm_90 7.8"},
		{"cvt bf16 from f32", func(k *ptx.Func, p ptx.Reg) { k.Cvt(ptx.BF16, ptx.F32, "rn", p) }, "sm_80 7.0"},
		{"pack bf16x2", func(k *ptx.Func, p ptx.Reg) { k.PackHalf2(ptx.BF16x2, p, p) }, "sm_80 7.0"},
		{"ld L1::no_allocate", func(k *ptx.Func, p ptx.Reg) {
			k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Cvta(ptx.Global, k.Mov(ptx.U64, ptx.Imm(0))), 0), ptx.LdOpts{Cache: "L1::no_allocate"})
		}, "sm_80 7.4"},
		{"atom bf16", func(k *ptx.Func, p ptx.Reg) {
			k.Atom(ptx.Global, "add", ptx.BF16, ptx.At(k.Mov(ptx.U64, ptx.Imm(0)), 0), k.Mov(ptx.BF16, ptx.Imm(0)))
		}, "sm_90 7.8"},
		{"red.v4.f32", func(k *ptx.Func, p ptx.Reg) {
			k.RedAddF32(ptx.At(k.Mov(ptx.U64, ptx.Imm(0)), 0), []ptx.Reg{p, p, p, p})
		}, "sm_90 8.1"},
		{"griddepcontrol", func(k *ptx.Func, p ptx.Reg) { k.GridDepWait() }, "sm_90 7.8"},
		{"mma bf16", func(k *ptx.Func, p ptx.Reg) {
			a := k.Mov(ptx.B32, ptx.Imm(0))
			k.MmaSync(ptx.BF16, [4]ptx.Reg{a, a, a, a}, [2]ptx.Reg{a, a}, [4]ptx.Reg{p, p, p, p})
		}, "sm_80 7.0"},
	} {
		m := ptx.NewModule()
		k := m.Func("k")
		k.ReqNTid(32)
		c.emit(k, k.Mov(ptx.F32, ptx.F32Imm(1)))
		b, err := m.Build()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := b.Target() + " " + b.Version()
		if got != c.want {
			t.Errorf("%s: module is %s, want %s", c.name, got, c.want)
		}
		if rows := rowTarget(t, opcodes(b.String())); rows != got {
			t.Errorf("%s: module is %s, its rows need %s", c.name, got, rows)
		}
	}
}

// TestRawOperandKinds checks Raw's operands against the row.
func TestRawOperandKinds(t *testing.T) {
	for _, c := range []struct {
		name string
		emit func(k *ptx.Func, r ptx.Reg)
		want string
	}{
		{"count", func(k *ptx.Func, r ptx.Reg) { k.Raw(0, 0, "add.u32", r, r) }, "add.u32 takes 3 operands, not 2"},
		{"optional", func(k *ptx.Func, r ptx.Reg) { k.Raw(0, 0, "bar.sync", r, r, r) }, "bar.sync takes 1 or 2 operands, not 3"},
		{"label", func(k *ptx.Func, r ptx.Reg) { k.Raw(0, 0, "bra", r) }, "bra: operand 1 (%r1) is not a label"},
		{"address", func(k *ptx.Func, r ptx.Reg) { k.Raw(0, 0, "ld.global.u32", r, r) }, "operand 2 (%r1) is not an address"},
		{"destination", func(k *ptx.Func, r ptx.Reg) { k.Raw(0, 0, "mov.u32", ptx.Imm(1), r) }, "operand 1 (1) is not a destination"},
	} {
		m := ptx.NewModule()
		k := m.Func("k")
		c.emit(k, k.Mov(ptx.U32, ptx.Imm(0)))
		_, err := m.Build()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestRowAlone shows what a row gives an instruction before it has a
// helper: stmatrix, written with Raw, raises the target, is warp-collective
// to the analyses and is checked against its operand kinds.
func TestRowAlone(t *testing.T) {
	const op = "stmatrix.sync.aligned.m8n8.x1.shared.b16"
	for _, divergent := range []bool{false, true} {
		m := ptx.NewModule()
		k := m.Func("k")
		k.ReqNTid(32)
		buf := k.SharedArray("buf", ptx.B32, 64, 16)
		v := k.Mov(ptx.B32, ptx.Imm(0))
		st := func() { k.Raw(0, 0, op, ptx.At(buf, 0), ptx.Vec{v}) }
		if divergent {
			k.If(k.Setp("lt", ptx.U32, k.Mov(ptx.U32, ptx.LaneID), ptx.Imm(16)), st)
		} else {
			st()
		}
		b, err := m.Build()
		switch {
		case divergent:
			var ue *ptx.UnsafeError
			if !errors.As(err, &ue) || ue.Rule != ptx.RuleWarpSync {
				t.Errorf("stmatrix under a lane condition: error %v, want %q", err, ptx.RuleWarpSync)
			}
		case err != nil:
			t.Errorf("stmatrix: %v", err)
		case b.Target() != "sm_90" || b.Version() != "7.8":
			t.Errorf("stmatrix: module is %s %s, want sm_90 7.8 (its row)", b.Target(), b.Version())
		}
	}
}
