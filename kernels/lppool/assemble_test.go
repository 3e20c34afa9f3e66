package lppool

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
)

// TestAssemble assembles the variants of the benchmark shape and the odd
// shapes, in every dtype, with ptxas (batched and cached:
// ptxas.Assembler.Check), and reads ptxas' report of every kernel: no
// spills or stack without a register cap, the cap respected with one, no
// shared memory. It assembles a deterministic sample (sweep.Take): one in
// 32 for sm_90 and one in 128 for sm_80 (a quarter and a sixteenth with
// GRADTUNE_SWEEP=ci, all of them for both with full).
func TestAssemble(t *testing.T) {
	start := time.Now()
	all := lpAllVariants(t)
	type job struct {
		arch string
		v    int // index into all
	}
	var jobs []job
	var mods []ptxas.Module
	for _, arch := range []string{"sm_90", "sm_80"} {
		for i, v := range all {
			if sweep.Take(i+3, map[string]int{"sm_90": 16, "sm_80": 64}[arch]) {
				jobs = append(jobs, job{arch, i})
				mods = append(mods, ptxas.Module{PTX: lpProgram(t, v).PTX, Arch: arch})
			}
		}
	}
	var problems []string
	counts := map[string]int{}
	for i, r := range ptxas.ForTests(t).Check(t.Context(), mods) {
		j, v := jobs[i], all[jobs[i].v]
		if r.Err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s %s: %v", j.arch, v.shape.Key(), v.key, r.Err))
			continue
		}
		for _, l := range lpProgram(t, v).Launches {
			if !slices.ContainsFunc(r.Reports, func(r ptxas.Report) bool { return r.Function == l.Entry }) {
				problems = append(problems, fmt.Sprintf("%s: %s %s: no report for kernel %s", j.arch, v.shape.Key(), v.key, l.Entry))
			}
		}
		for _, rep := range r.Reports {
			if p := reportProblem(v, rep); p != "" {
				problems = append(problems, j.arch+": "+p)
			}
		}
		counts[j.arch]++
	}
	ptxtest.ReportSorted(t, problems, 20)
	if want := len(all); sweep.Full() && len(problems) == 0 && counts["sm_90"] != want {
		t.Errorf("assembled %d variants for sm_90, want all %d", counts["sm_90"], want)
	}
	t.Logf("%d variants; assembled %d for sm_90 and %d for sm_80 in %v", len(all), counts["sm_90"], counts["sm_80"], time.Since(start).Round(time.Millisecond))
}

// reportProblem says what is wrong with ptxas' report of a kernel of v:
// spills or stack without a register cap, registers above the cap, or
// shared memory. It returns "" for a good report.
func reportProblem(v lpVariant, r ptxas.Report) string {
	switch cap := v.params.MaxNReg; {
	case cap == 0 && r.Spills():
		return fmt.Sprintf("%s %s %s: spills without a register cap: %d/%d bytes, %d stack, %d registers",
			v.shape.Key(), v.key, r.Function, r.SpillStores, r.SpillLoads, r.StackBytes, r.Registers)
	case cap > 0 && r.Registers > cap:
		return fmt.Sprintf("%s %s %s: %d registers above .maxnreg %d", v.shape.Key(), v.key, r.Function, r.Registers, cap)
	case r.SharedBytes != 0:
		return fmt.Sprintf("%s %s: %d bytes shared memory", v.shape.Key(), v.key, r.SharedBytes)
	}
	return ""
}
