package ptxtest

import (
	"fmt"
	"testing"

	"github.com/gradtune/gradtune/internal/ptxas"
)

// Job is one module to assemble and what it is, for messages.
type Job struct {
	What string // e.g. the variant's shape and params
	ptxas.Module
	// SpillAllowed, when set, lets a function's spill pass where it
	// returns true for the function's report (logged, not a problem).
	SpillAllowed func(ptxas.Report) bool
}

// Assemble assembles jobs with the test's ptxas (ptxas.ForTests: batched, results cached) and
// returns one line per problem: a module ptxas rejects, each fault of its reports
// (ptxas.Report.Faults) and, when warningsFail, each warning ptxas prints. It logs how many
// modules were assembled and how many results the cache held.
func Assemble(t *testing.T, jobs []Job, warningsFail bool) []string {
	t.Helper()
	asm := ptxas.ForTests(t)
	mods := make([]ptxas.Module, len(jobs))
	for i, j := range jobs {
		mods[i] = j.Module
	}
	var problems []string
	cached := 0
	for i, r := range asm.Check(t.Context(), mods) {
		j := jobs[i]
		if r.Cached {
			cached++
		}
		if r.Err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: %v", j.Arch, j.What, r.Err))
			continue
		}
		for _, rep := range r.Reports {
			if rep.Spills() && j.SpillAllowed != nil && j.SpillAllowed(rep) {
				t.Logf("%s %s: spill allowed: %d/%d bytes, stack %d, %d registers", j.Arch, j.What, rep.SpillStores, rep.SpillLoads, rep.StackBytes, rep.Registers)
				rep.SpillStores, rep.SpillLoads, rep.StackBytes = 0, 0, 0
			}
			for _, f := range rep.Faults() {
				problems = append(problems, fmt.Sprintf("%s %s %s", j.Arch, j.What, f))
			}
		}
		if warningsFail {
			for _, w := range r.Warnings {
				problems = append(problems, fmt.Sprintf("%s %s: %s", j.Arch, j.What, w))
			}
		}
	}
	t.Logf("ptxas: %d modules, %d results from the cache (%s)", len(jobs), cached, asm.Cache)
	return problems
}
