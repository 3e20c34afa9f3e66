package isa_test

import (
	"strings"
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
		if r.Has(isa.WarpGroup) && !r.Has(isa.Aligned) {
			t.Errorf("%s: warpgroup-collective, but not Aligned", r.Name)
		}
		if r.ArchSpecific && r.SM < 90 {
			t.Errorf("%s: architecture-specific on sm_%d (sm_90a is the first)", r.Name, r.SM)
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
		"ld.global.nc.v4.f32":                        "ld",
		"createpolicy.fractional.L2::evict_last.b64": "createpolicy",
		"ldmatrix.sync.aligned.m8n8.x4.shared.b16":   "ldmatrix.sync",
		"cp.async.ca.shared.global":                  "cp.async",
		"cp.async.wait_group":                        "cp.async.wait_group",
		"bar.sync":                                   "bar.sync",
		"bar.warp.sync":                              "bar.warp.sync",
		"bar.red.popc.u32":                           "bar.red",
		"match.any.sync.b32":                         "match.any.sync",
		"ret":                                        "ret",
		"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16":                            "wgmma.mma_async",
		"wgmma.wait_group.sync.aligned":                                                    "wgmma.wait_group",
		"mbarrier.arrive.expect_tx.shared::cta.b64":                                        "mbarrier.arrive",
		"mbarrier.try_wait.parity.shared::cta.b64":                                         "mbarrier.try_wait",
		"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes": "cp.async.bulk.tensor",
		"cp.async.bulk.wait_group.read":                                                    "cp.async.bulk.wait_group",
		"cp.async.bulk.global.shared::cta.bulk_group":                                      "cp.async.bulk",
		"fence.proxy.async.shared::cta":                                                    "fence.proxy.async",
		"fence.acq_rel.gpu":                                                                "fence",
		"barrier.cluster.arrive.release":                                                   "barrier.cluster.arrive",
		"setmaxnreg.inc.sync.aligned.u32":                                                  "setmaxnreg",
		"mapa.shared::cluster.u32":                                                         "mapa",
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
		{"ld.shared::cluster.v4.f32", 90, 78},
		{"red.global.add.f32", 20, 12},
		{"red.global.add.v4.f32", 90, 81},
		{"atom.global.add.noftz.bf16", 90, 78},
		{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 80, 70},
		{"griddepcontrol.wait", 90, 78},
		{"createpolicy.fractional.L2::evict_first.b64", 80, 74},
		{"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint", 90, 80},
		{"fence.proxy.async.shared::cta", 90, 80},
		{"fence.mbarrier_init.release.cluster", 90, 80},
		{"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", 90, 80},
		{"setmaxnreg.dec.sync.aligned.u32", 90, 80},
		{"mbarrier.init.shared::cta.b64", 80, 78},
		{"mbarrier.init.shared.b64", 80, 70},
		{"mbarrier.arrive.shared::cta.b64", 80, 78},
		{"mbarrier.arrive.expect_tx.shared::cta.b64", 90, 80},
		{"mbarrier.arrive.release.cluster.shared::cluster.b64", 90, 80},
		{"mbarrier.arrive.shared::cluster.b64", 90, 80},
		{"mbarrier.try_wait.parity.shared::cta.b64", 90, 78},
		{"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster", 90, 80},
		{"barrier.cluster.arrive", 90, 78},
		{"barrier.cluster.wait.acquire", 90, 80},
		{"cvta.param.u64", 70, 77},
		{"cvta.to.global.u64", 20, 20},
		{"mapa.shared::cluster.u32", 90, 78},
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

// TestArchSpecific pins which rows need the sm_90a target: wgmma and
// setmaxnreg, and nothing else of Hopper's.
func TestArchSpecific(t *testing.T) {
	var got []string
	for _, r := range isa.Rows() {
		if r.ArchSpecific {
			got = append(got, r.Name)
		}
	}
	want := "setmaxnreg wgmma.commit_group wgmma.fence wgmma.mma_async wgmma.wait_group"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("architecture-specific rows: %s, want %s", g, want)
	}
}

// TestSRegs pins the targets of special registers: the cluster's need
// sm_90 and PTX ISA 7.8, the CTA's none beyond the floor.
func TestSRegs(t *testing.T) {
	for name, want := range map[string][2]int{
		"%tid.x": {20, 10}, "%laneid": {20, 13}, "%cluster_ctarank": {90, 78}, "%cluster_nctarank": {90, 78},
		"%clusterid.x": {90, 78}, "%cluster_ctaid.y": {90, 78}, "%nclusterid.z": {90, 78},
	} {
		s, ok := isa.LookupSReg(name)
		if !ok || [2]int{s.SM, s.PTX} != want {
			t.Errorf("%s: %+v, %v; want sm_%d, PTX %d", name, s, ok, want[0], want[1])
		}
	}
	if _, ok := isa.LookupSReg("%cluster_rank"); ok {
		t.Errorf("%%cluster_rank has a row")
	}
	if d, ok := isa.LookupDirective(".reqnctapercluster"); !ok || d.SM != 90 || d.PTX != 78 {
		t.Errorf(".reqnctapercluster: %+v, %v", d, ok)
	}
}
