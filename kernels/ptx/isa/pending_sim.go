package isa

// pendingSim holds the sm_90 rows the interpreter (runner/sim) needs that
// table.go does not have yet: the branch that adds them to the table
// (hopper-isa) and this one are developed in parallel. A row here is used
// only while table.go has no row of the same Name; once it has, this
// entry is dead and should be deleted when the branches are reconciled.
var pendingSim = []Row{
	{Name: "wgmma.mma_async", Args: []Kind{Dst, Src, Src, Src, Src, Src, Src, Src}, Opt: 2, Spaces: Shared,
		Effects: Dest | Load | Aligned | Async, SM: 90, PTX: 80},
	{Name: "wgmma.fence", Args: none, Effects: Aligned | Fence, SM: 90, PTX: 80},
	{Name: "wgmma.commit_group", Args: none, Effects: Aligned | Async, SM: 90, PTX: 80},
	{Name: "wgmma.wait_group", Args: []Kind{Src}, Effects: Aligned | Async, SM: 90, PTX: 80},
	{Name: "mbarrier.init", Args: as, Spaces: Shared | Generic, Effects: Store, SM: 80, PTX: 70},
	{Name: "mbarrier.arrive", Args: []Kind{Dst, Addr, Src}, Opt: 1, Spaces: Shared | Generic,
		Effects: Dest | Load | Store | Atomic, SM: 80, PTX: 70,
		Raise: []Raise{{Qual: "expect_tx", SM: 90, PTX: 80}, {Qual: "shared::cluster", SM: 90, PTX: 80}}},
	{Name: "mbarrier.expect_tx", Args: as, Spaces: Shared | Generic, Effects: Load | Store | Atomic, SM: 90, PTX: 80},
	{Name: "mbarrier.complete_tx", Args: as, Spaces: Shared | Generic, Effects: Load | Store | Atomic, SM: 90, PTX: 80},
	{Name: "mbarrier.try_wait", Args: []Kind{Dst, Addr, Src, Src}, Opt: 1, Spaces: Shared | Generic,
		Effects: Dest | Load, SM: 90, PTX: 78},
	{Name: "mbarrier.test_wait", Args: []Kind{Dst, Addr, Src}, Spaces: Shared | Generic, Effects: Dest | Load, SM: 80, PTX: 70},
	{Name: "cp.async.bulk.tensor", Args: []Kind{Addr, Addr, Addr, Src, Src}, Opt: 3, Spaces: Global | Shared,
		Effects: Load | Store | Async, SM: 90, PTX: 80},
	{Name: "cp.async.bulk.commit_group", Args: none, Effects: Async, SM: 90, PTX: 80},
	{Name: "cp.async.bulk.wait_group", Args: []Kind{Src}, Effects: Async, SM: 90, PTX: 80},
	{Name: "barrier.cluster.arrive", Args: none, Effects: Barrier, SM: 90, PTX: 78},
	{Name: "barrier.cluster.wait", Args: none, Effects: Barrier, SM: 90, PTX: 78},
	{Name: "mapa", Args: dss, Spaces: Shared | Generic, Effects: Dest | Pure, SM: 90, PTX: 78},
	{Name: "setmaxnreg", Args: []Kind{Src}, Effects: Aligned, SM: 90, PTX: 80},
}

// withPending is table plus the pending rows it lacks. It is evaluated
// with the package's variables, after table and before table.go's init
// indexes the rows.
var _ = func() bool {
	have := map[string]bool{}
	for _, r := range table {
		have[r.Name] = true
	}
	for _, r := range pendingSim {
		if !have[r.Name] {
			table = append(table, r)
		}
	}
	return true
}()
