package isa

// pendingSim holds the sm_90 rows the interpreter (runner/sim) needs that
// table.go does not have yet: the branch that adds them to the table
// (hopper-isa) and this one are developed in parallel. A row here is used
// only while table.go has no row of the same Name; once it has, this
// entry is dead and should be deleted when the branches are reconciled.
var pendingSim = []Row{
	{Name: "mbarrier.complete_tx", Args: as, Spaces: Shared | Generic, Effects: Load | Store | Atomic, SM: 90, PTX: 80},
	{Name: "mbarrier.test_wait", Args: []Kind{Dst, Addr, Src}, Spaces: Shared | Generic, Effects: Dest | Load, SM: 80, PTX: 70,
		Raise: mbar},
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
