package isa_test

import (
	"testing"

	"github.com/gradtune/gradtune/kernels/ptx/isa"
)

// TestTable checks the rules every row follows, so that a new row cannot
// contradict the readers' assumptions.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range isa.Rows() {
		if seen[r.Name] {
			t.Errorf("%s: two rows", r.Name)
		}
		seen[r.Name] = true
		if got, ok := isa.Lookup(r.Name); !ok || got != r {
			t.Errorf("Lookup(%q) does not find its row", r.Name)
		}
		if r.Opt < 0 || r.Opt > len(r.Args) {
			t.Errorf("%s: %d optional operands of %d", r.Name, r.Opt, len(r.Args))
		}
		if r.SM < 20 || r.PTX < 10 {
			t.Errorf("%s: minimum sm_%d, PTX %d: missing", r.Name, r.SM, r.PTX)
		}
		dst := len(r.Args) > 0 && r.Args[0] == isa.Dst
		if dst != r.Has(isa.Dest) {
			t.Errorf("%s: first operand %v, but Dest is %v", r.Name, r.Args, r.Has(isa.Dest))
		}
		for i, k := range r.Args {
			if k == isa.Dst && i > 0 {
				t.Errorf("%s: operand %d is a destination; only the first may be", r.Name, i+1)
			}
		}
		if r.Has(isa.WarpSync) && r.Args[len(r.Args)-1] != isa.Mask {
			t.Errorf("%s: warp-synchronous, but its last operand is not the member mask", r.Name)
		}
		mem := r.Effects&(isa.Load|isa.Store) != 0
		if mem && r.Spaces == 0 {
			t.Errorf("%s: accesses memory in no state space", r.Name)
		}
		if r.Has(isa.Pure) && (mem || r.Effects&(isa.Barrier|isa.WarpSync|isa.Aligned|isa.Branch|isa.Exit|isa.Fence|isa.Async) != 0) {
			t.Errorf("%s: pure, with effects %b", r.Name, r.Effects)
		}
		if r.Has(isa.Atomic) && !r.Has(isa.Load|isa.Store) {
			t.Errorf("%s: atomic, but not a load and a store", r.Name)
		}
		for _, x := range r.Raise {
			if (x.Qual == "") == (x.When == nil) {
				t.Errorf("%s: a Raise needs a qualifier or a rule, not both", r.Name)
			}
			if x.SM < r.SM && x.PTX < r.PTX {
				t.Errorf("%s: a Raise to sm_%d, PTX %d raises nothing", r.Name, x.SM, x.PTX)
			}
		}
	}
}

// TestLookup pins how opcodes find their rows: the longest name in whole
// components.
func TestLookup(t *testing.T) {
	for op, want := range map[string]string{
		"ld.global.nc.v4.f32":                      "ld",
		"ldmatrix.sync.aligned.m8n8.x4.shared.b16": "ldmatrix.sync",
		"cp.async.ca.shared.global":                "cp.async",
		"cp.async.wait_group":                      "cp.async.wait_group",
		"bar.sync":                                 "bar.sync",
		"bar.warp.sync":                            "bar.warp.sync",
		"bar.red.popc.u32":                         "bar.red",
		"match.any.sync.b32":                       "match.any.sync",
		"ret":                                      "ret",
	} {
		r, ok := isa.Lookup(op)
		if !ok || r.Name != want {
			t.Errorf("Lookup(%q) = %v, %v; want row %s", op, r, ok, want)
		}
	}
	for _, op := range []string{"tex.1d.v4.f32.s32", "ldx.u32", "bar", "shfl.bfly.b32", "cp.reduce.async.bulk", ""} {
		if r, ok := isa.Lookup(op); ok {
			t.Errorf("Lookup(%q) = row %s; want none", op, r.Name)
		}
	}
}

// TestTarget pins the forms that need more than their row's minimum.
func TestTarget(t *testing.T) {
	for _, c := range []struct {
		op      string
		sm, ptx int
	}{
		{"add.rn.f32", 20, 10},
		{"add.rn.bf16", 90, 78},
		{"fma.rn.bf16x2", 90, 78},
		{"cvt.rn.bf16.f32", 20, 10},
		{"cvt.rn.bf16x2.f32", 20, 10},
		{"cvt.f32.bf16", 90, 78},
		{"cvt.rn.bf16.f16", 90, 78},
		{"ld.global.L1::no_allocate.v4.f32", 80, 74},
		{"ld.shared::cta.u32", 20, 10},
		{"red.global.add.f32", 20, 12},
		{"red.global.add.v4.f32", 90, 81},
		{"atom.global.add.noftz.bf16", 90, 78},
		{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 80, 70},
		{"griddepcontrol.wait", 90, 78},
	} {
		r, ok := isa.Lookup(c.op)
		if !ok {
			t.Errorf("%s: no row", c.op)
			continue
		}
		if sm, ptx := r.Target(c.op); sm != c.sm || ptx != c.ptx {
			t.Errorf("%s needs sm_%d, PTX %d; want sm_%d, PTX %d", c.op, sm, ptx, c.sm, c.ptx)
		}
	}
}

func TestSpace(t *testing.T) {
	for op, want := range map[string]isa.Space{
		"ld.shared.v4.f32":          isa.Shared,
		"ld.shared::cta.u32":        isa.Shared,
		"ld.u32":                    isa.Generic,
		"cp.async.cg.shared.global": isa.Shared | isa.Global,
		"add.u32":                   0,
	} {
		r, _ := isa.Lookup(op)
		if got := r.Space(op); got != want {
			t.Errorf("Space(%q) = %b, want %b", op, got, want)
		}
	}
}
