package isa

import (
	"sort"
	"strings"
)

// Operand lists shared by many rows.
var (
	none   = []Kind{}
	ds     = []Kind{Dst, Src}
	dss    = []Kind{Dst, Src, Src}
	dsss   = []Kind{Dst, Src, Src, Src}
	dssss  = []Kind{Dst, Src, Src, Src, Src}
	da     = []Kind{Dst, Addr}
	as     = []Kind{Addr, Src}
	dsm    = []Kind{Dst, Src, Mask}
	dsssm  = []Kind{Dst, Src, Src, Src, Mask}
	pureDS = Dest | Pure
)

// bf16 raises arithmetic on bf16 and bf16x2 to sm_90 and PTX ISA 7.8.
// (fma, min, max, neg and abs have bf16 forms on sm_80; the builder keeps
// all bf16 arithmetic on one target.)
var bf16 = []Raise{{Qual: "bf16", SM: 90, PTX: 78}, {Qual: "bf16x2", SM: 90, PTX: 78}}

// cacheHint raises memory operations with a "::" qualifier (L1::no_allocate,
// L2::256B, L2::cache_hint) to PTX ISA 7.4.
var cacheHint = Raise{When: func(q []string) bool {
	for _, x := range q {
		if strings.Contains(x, "::") && spaceOf(x) == 0 {
			return true
		}
	}
	return false
}, SM: 80, PTX: 74}

// cvtBF16 raises conversions from bf16, and to bf16 from anything but f32,
// to sm_90 and PTX ISA 7.8 (cvt.rn.bf16.f32 and cvt.rn.bf16x2.f32 are
// sm_80's).
var cvtBF16 = Raise{When: func(q []string) bool {
	if len(q) < 2 {
		return false
	}
	to, from := q[len(q)-2], q[len(q)-1]
	return from == "bf16" || (to == "bf16" || to == "bf16x2") && from != "f32"
}, SM: 90, PTX: 78}

// table is the ISA: one row per instruction, minimum target and PTX ISA
// version as the PTX ISA manual gives them.
var table = []Row{
	// Data movement and conversion.
	{Name: "mov", Args: ds, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "ld", Args: da, Spaces: Memory, Effects: Dest | Load, SM: 20, PTX: 10, Raise: []Raise{cacheHint, sharedCluster}},
	{Name: "ldu", Args: da, Spaces: Global | Generic, Effects: Dest | Load, SM: 20, PTX: 20},
	{Name: "st", Args: as, Spaces: Global | Shared | Local | Generic, Effects: Store, SM: 20, PTX: 10, Raise: []Raise{cacheHint, sharedCluster}},
	{Name: "cvta", Args: ds, Spaces: Global | Shared | Local | Const | Param, Effects: pureDS, SM: 20, PTX: 20,
		Raise: []Raise{{Qual: "param", SM: 70, PTX: 77}}},
	{Name: "mapa", Args: dss, Effects: pureDS, SM: 90, PTX: 78},
	{Name: "isspacep", Args: ds, Spaces: Global | Shared | Local | Const | Param, Effects: pureDS, SM: 20, PTX: 20},
	{Name: "cvt", Args: dss, Opt: 1, Effects: pureDS, SM: 20, PTX: 10, Raise: []Raise{cvtBF16}},
	{Name: "prefetch", Args: []Kind{Addr}, Spaces: Global | Local | Generic, SM: 20, PTX: 20},
	{Name: "prefetchu", Args: []Kind{Addr}, Spaces: Generic, SM: 20, PTX: 20},
	{Name: "createpolicy", Args: []Kind{Dst, Src}, Opt: 1, Effects: pureDS, SM: 80, PTX: 74},

	// Integer and floating-point arithmetic.
	{Name: "add", Args: dss, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "sub", Args: dss, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "mul", Args: dss, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "mad", Args: dsss, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "fma", Args: dsss, Effects: pureDS, SM: 20, PTX: 14, Raise: bf16},
	{Name: "div", Args: dss, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "rem", Args: dss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "min", Args: dss, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "max", Args: dss, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "neg", Args: ds, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "abs", Args: ds, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "sad", Args: dsss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "mul24", Args: dss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "mad24", Args: dsss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "addc", Args: dss, Effects: pureDS, SM: 20, PTX: 12},
	{Name: "subc", Args: dss, Effects: pureDS, SM: 20, PTX: 12},
	{Name: "madc", Args: dsss, Effects: pureDS, SM: 20, PTX: 30},
	{Name: "dp4a", Args: dsss, Effects: pureDS, SM: 61, PTX: 50},
	{Name: "dp2a", Args: dsss, Effects: pureDS, SM: 61, PTX: 50},
	{Name: "rcp", Args: ds, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "sqrt", Args: ds, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "rsqrt", Args: ds, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "ex2", Args: ds, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "lg2", Args: ds, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "sin", Args: ds, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "cos", Args: ds, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "tanh", Args: ds, Effects: pureDS, SM: 75, PTX: 70, Raise: bf16},
	{Name: "copysign", Args: dss, Effects: pureDS, SM: 20, PTX: 20},
	{Name: "testp", Args: ds, Effects: pureDS, SM: 20, PTX: 20},

	// Comparison, selection and logic.
	{Name: "setp", Args: dsss, Opt: 1, Effects: pureDS, SM: 20, PTX: 10, Raise: bf16},
	{Name: "set", Args: dsss, Opt: 1, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "selp", Args: dsss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "slct", Args: dsss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "fns", Args: dsss, Effects: pureDS, SM: 30, PTX: 60},
	{Name: "and", Args: dss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "or", Args: dss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "xor", Args: dss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "not", Args: ds, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "cnot", Args: ds, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "lop3", Args: dssss, Effects: pureDS, SM: 50, PTX: 43},
	{Name: "shl", Args: dss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "shr", Args: dss, Effects: pureDS, SM: 20, PTX: 10},
	{Name: "shf", Args: dsss, Effects: pureDS, SM: 32, PTX: 31},
	{Name: "popc", Args: ds, Effects: pureDS, SM: 20, PTX: 20},
	{Name: "clz", Args: ds, Effects: pureDS, SM: 20, PTX: 20},
	{Name: "brev", Args: ds, Effects: pureDS, SM: 20, PTX: 20},
	{Name: "bfind", Args: ds, Effects: pureDS, SM: 20, PTX: 20},
	{Name: "bfe", Args: dsss, Effects: pureDS, SM: 20, PTX: 20},
	{Name: "bfi", Args: dssss, Effects: pureDS, SM: 20, PTX: 20},
	{Name: "prmt", Args: dsss, Effects: pureDS, SM: 20, PTX: 20},

	// Control flow.
	{Name: "bra", Args: []Kind{Label}, Effects: Branch, SM: 20, PTX: 10},
	{Name: "ret", Args: none, Effects: Exit, SM: 20, PTX: 10},
	{Name: "exit", Args: none, Effects: Exit, SM: 20, PTX: 10},
	{Name: "trap", Args: none, Effects: Exit, SM: 20, PTX: 10},
	{Name: "brkpt", Args: none, SM: 20, PTX: 10},
	{Name: "nanosleep", Args: []Kind{Src}, SM: 70, PTX: 63},
	{Name: "pmevent", Args: []Kind{Src}, SM: 20, PTX: 14},

	// Barriers, fences and launch dependencies.
	{Name: "bar.sync", Args: []Kind{Src, Src}, Opt: 1, Effects: Barrier, SM: 20, PTX: 10},
	{Name: "bar.arrive", Args: []Kind{Src, Src}, Effects: Barrier, SM: 20, PTX: 20},
	{Name: "bar.red", Args: dsss, Opt: 1, Effects: Dest | Barrier, SM: 20, PTX: 20},
	{Name: "bar.cta.sync", Args: []Kind{Src, Src}, Opt: 1, Effects: Barrier, SM: 20, PTX: 78},
	{Name: "bar.cta.arrive", Args: []Kind{Src, Src}, Effects: Barrier, SM: 20, PTX: 78},
	{Name: "bar.cta.red", Args: dsss, Opt: 1, Effects: Dest | Barrier, SM: 20, PTX: 78},
	{Name: "barrier.sync", Args: []Kind{Src, Src}, Opt: 1, Effects: Barrier, SM: 30, PTX: 60},
	{Name: "barrier.arrive", Args: []Kind{Src, Src}, Effects: Barrier, SM: 30, PTX: 60},
	{Name: "barrier.red", Args: dsss, Opt: 1, Effects: Dest | Barrier, SM: 30, PTX: 60},
	{Name: "barrier.cta.sync", Args: []Kind{Src, Src}, Opt: 1, Effects: Barrier, SM: 30, PTX: 78},
	{Name: "barrier.cta.arrive", Args: []Kind{Src, Src}, Effects: Barrier, SM: 30, PTX: 78},
	{Name: "barrier.cta.red", Args: dsss, Opt: 1, Effects: Dest | Barrier, SM: 30, PTX: 78},
	{Name: "bar.warp.sync", Args: []Kind{Mask}, Effects: WarpSync, SM: 30, PTX: 60},
	{Name: "membar", Args: none, Effects: Fence, SM: 20, PTX: 14},
	{Name: "fence", Args: none, Effects: Fence, SM: 70, PTX: 60},
	{Name: "fence.proxy.async", Args: none, Effects: Fence, SM: 90, PTX: 80},
	{Name: "fence.mbarrier_init", Args: none, Effects: Fence, SM: 90, PTX: 80},
	{Name: "barrier.cluster.arrive", Args: none, Effects: Barrier, SM: 90, PTX: 78, Raise: clusterSem},
	{Name: "barrier.cluster.wait", Args: none, Effects: Barrier, SM: 90, PTX: 78, Raise: clusterSem},
	{Name: "griddepcontrol", Args: none, SM: 90, PTX: 78},

	// Warp-synchronous instructions.
	{Name: "shfl.sync", Args: dsssm, Effects: Dest | WarpSync, SM: 30, PTX: 60},
	{Name: "vote.sync", Args: dsm, Effects: Dest | WarpSync, SM: 30, PTX: 60},
	{Name: "redux.sync", Args: dsm, Effects: Dest | WarpSync, SM: 80, PTX: 70},
	{Name: "match.any.sync", Args: dsm, Effects: Dest | WarpSync, SM: 70, PTX: 60},
	{Name: "match.all.sync", Args: dsm, Effects: Dest | WarpSync, SM: 70, PTX: 60},
	{Name: "elect.sync", Args: []Kind{Dst, Mask}, Effects: Dest | WarpSync, SM: 90, PTX: 80},
	{Name: "activemask", Args: []Kind{Dst}, Effects: Dest, SM: 30, PTX: 62},

	// Atomics.
	{Name: "atom", Args: []Kind{Dst, Addr, Src, Src}, Opt: 1, Spaces: Global | Shared | Generic,
		Effects: Dest | Load | Store | Atomic, SM: 20, PTX: 12, Raise: bf16},
	{Name: "red", Args: as, Spaces: Global | Shared | Generic, Effects: Load | Store | Atomic, SM: 20, PTX: 12,
		Raise: append([]Raise{{Qual: "v2", SM: 90, PTX: 81}, {Qual: "v4", SM: 90, PTX: 81}}, bf16...)},

	// Tensor cores and asynchronous copies.
	{Name: "mma.sync", Args: dsss, Effects: Dest | Aligned, SM: 80, PTX: 70},
	{Name: "wmma.load", Args: []Kind{Dst, Addr, Src}, Opt: 1, Spaces: Global | Shared | Generic, Effects: Dest | Load | Aligned, SM: 70, PTX: 60},
	{Name: "wmma.store", Args: []Kind{Addr, Src, Src}, Opt: 1, Spaces: Global | Shared | Generic, Effects: Store | Aligned, SM: 70, PTX: 60},
	{Name: "wmma.mma", Args: dsss, Effects: Dest | Aligned, SM: 70, PTX: 60},
	{Name: "ldmatrix.sync", Args: da, Spaces: Shared, Effects: Dest | Load | Aligned, SM: 75, PTX: 65},
	{Name: "stmatrix.sync", Args: as, Spaces: Shared, Effects: Store | Aligned, SM: 90, PTX: 78},
	{Name: "movmatrix.sync", Args: ds, Effects: Dest | Aligned, SM: 75, PTX: 78},
	{Name: "cp.async", Args: []Kind{Addr, Addr, Src, Src}, Opt: 1, Spaces: Global | Shared,
		Effects: Load | Store | Async, SM: 80, PTX: 70, Raise: []Raise{cacheHint}},
	{Name: "cp.async.commit_group", Args: none, Effects: Async, SM: 80, PTX: 70},
	{Name: "cp.async.wait_group", Args: []Kind{Src}, Effects: Async, SM: 80, PTX: 70},
	{Name: "cp.async.wait_all", Args: none, Effects: Async, SM: 80, PTX: 70},

	// Hopper: warpgroup MMA, mbarriers, bulk (TMA) copies. wgmma reads its
	// A and B tiles from shared memory through 64-bit descriptors (A may
	// be registers); its operands are d, a, b, scale-d, imm-scale-a,
	// imm-scale-b and, for f16 and bf16, imm-trans-a (descriptor A only)
	// and imm-trans-b.
	{Name: "wgmma.mma_async", Args: []Kind{Dst, Src, Src, Src, Src, Src, Src, Src}, Opt: 2, Spaces: Shared,
		Effects: Dest | Load | Aligned | WarpGroup | Async, SM: 90, PTX: 80, ArchSpecific: true},
	{Name: "wgmma.fence", Args: none, Effects: Aligned | WarpGroup | Fence, SM: 90, PTX: 80, ArchSpecific: true},
	{Name: "wgmma.commit_group", Args: none, Effects: Aligned | WarpGroup | Async, SM: 90, PTX: 80, ArchSpecific: true},
	{Name: "wgmma.wait_group", Args: []Kind{Src}, Effects: Aligned | WarpGroup | Async, SM: 90, PTX: 80, ArchSpecific: true},
	{Name: "setmaxnreg", Args: []Kind{Src}, Effects: Aligned | WarpGroup, SM: 90, PTX: 80, ArchSpecific: true},
	{Name: "mbarrier.init", Args: as, Spaces: Shared | Generic, Effects: Store, SM: 80, PTX: 70, Raise: mbar},
	{Name: "mbarrier.arrive", Args: []Kind{Dst, Addr, Src}, Opt: 1, Spaces: Shared | Generic,
		Effects: Dest | Load | Store | Atomic, SM: 80, PTX: 70, Raise: mbar},
	{Name: "mbarrier.expect_tx", Args: as, Spaces: Shared | Generic, Effects: Load | Store | Atomic, SM: 90, PTX: 80},
	{Name: "mbarrier.complete_tx", Args: as, Spaces: Shared | Generic, Effects: Load | Store | Atomic, SM: 90, PTX: 80},
	{Name: "mbarrier.test_wait", Args: []Kind{Dst, Addr, Src}, Spaces: Shared | Generic, Effects: Dest | Load, SM: 80, PTX: 70,
		Raise: mbar},
	{Name: "mbarrier.try_wait", Args: []Kind{Dst, Addr, Src, Src}, Opt: 1, Spaces: Shared | Generic,
		Effects: Dest | Load, SM: 90, PTX: 78, Raise: mbar},
	{Name: "cp.async.bulk", Args: []Kind{Addr, Addr, Src, Addr, Src}, Opt: 2, Spaces: Global | Shared,
		Effects: Load | Store | Async, SM: 90, PTX: 80},
	{Name: "cp.async.bulk.tensor", Args: []Kind{Addr, Addr, Addr, Src, Src}, Opt: 3, Spaces: Global | Shared,
		Effects: Load | Store | Async, SM: 90, PTX: 80},
	{Name: "cp.reduce.async.bulk.tensor", Args: []Kind{Addr, Addr}, Spaces: Global | Shared,
		Effects: Load | Store | Async, SM: 90, PTX: 80},
	{Name: "cp.async.bulk.commit_group", Args: none, Effects: Async, SM: 90, PTX: 80},
	{Name: "cp.async.bulk.wait_group", Args: []Kind{Src}, Effects: Async, SM: 90, PTX: 80},
}

// sharedCluster raises ld and st on the cluster's shared memory window
// (distributed shared memory): sm_90, PTX ISA 7.8.
var sharedCluster = Raise{Qual: "shared::cluster", SM: 90, PTX: 78}

// mbar raises mbarrier forms: .shared::cta needs PTX ISA 7.8; expect_tx,
// the .shared::cluster window and the .release/.acquire and .cluster
// qualifiers need sm_90 and PTX ISA 8.0.
var mbar = []Raise{
	{Qual: "shared::cta", SM: 80, PTX: 78},
	{Qual: "expect_tx", SM: 90, PTX: 80},
	{Qual: "shared::cluster", SM: 90, PTX: 80},
	{Qual: "release", SM: 90, PTX: 80},
	{Qual: "acquire", SM: 90, PTX: 80},
	{Qual: "cluster", SM: 90, PTX: 80},
}

// clusterSem raises barrier.cluster with a memory-order qualifier to PTX
// ISA 8.0.
var clusterSem = []Raise{{Qual: "release", SM: 90, PTX: 80}, {Qual: "acquire", SM: 90, PTX: 80}, {Qual: "relaxed", SM: 90, PTX: 80}}

// sregs are the special registers: the CTA's and the warp's of every
// target, and the cluster's of sm_90 (PTX ISA 7.8).
var sregs = map[string]SpecialReg{}

func init() {
	for _, n := range []string{"%tid", "%ntid", "%ctaid", "%nctaid"} {
		for _, d := range []string{".x", ".y", ".z"} {
			sregs[n+d] = SpecialReg{Name: n + d, SM: 20, PTX: 10}
		}
	}
	for _, n := range []string{"%laneid", "%warpid", "%smid"} {
		sregs[n] = SpecialReg{Name: n, SM: 20, PTX: 13}
	}
	for _, n := range []string{"%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid"} {
		for _, d := range []string{".x", ".y", ".z"} {
			sregs[n+d] = SpecialReg{Name: n + d, SM: 90, PTX: 78}
		}
	}
	for _, n := range []string{"%cluster_ctarank", "%cluster_nctarank"} {
		sregs[n] = SpecialReg{Name: n, SM: 90, PTX: 78}
	}
	for _, s := range sregs {
		sortedSRegs = append(sortedSRegs, s)
	}
	sort.Slice(sortedSRegs, func(i, j int) bool { return sortedSRegs[i].Name < sortedSRegs[j].Name })
}

var sortedSRegs []SpecialReg

// directives are the kernel directives that need more than the floor.
var directives = []Directive{
	{Name: ".reqnctapercluster", SM: 90, PTX: 78},
	{Name: ".explicitcluster", SM: 90, PTX: 78},
	{Name: ".maxclusterrank", SM: 90, PTX: 78},
}

var (
	byHead = map[string][]*Row{}
	sorted []*Row
)

func init() {
	for i := range table {
		r := &table[i]
		head, _, _ := strings.Cut(r.Name, ".")
		byHead[head] = append(byHead[head], r)
		sorted = append(sorted, r)
	}
	for _, rs := range byHead {
		sort.Slice(rs, func(i, j int) bool { return len(rs[i].Name) > len(rs[j].Name) })
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
}
