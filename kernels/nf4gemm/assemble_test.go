package nf4gemm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

// assembleFamily assembles a sample of f's variants at the preset's shapes
// (every variant with GRADTUNE_SWEEP=full) with ptxas for sm_80 and sm_90
// (the wgmma path for sm_90a):
// each module is accepted, with no spills, no stack frame and no
// performance-loss note (wgmma serialized).
func assembleFamily(t *testing.T, f kernels.Family, every int) {
	path := ptxas.RequireOrSkip(t)
	pr, _ := variants.LookupPreset("qwen1.5b", 0)
	type job struct{ what, ptx, arch string }
	var jobs []job
	i := 0
	for _, vs := range f.Shapes(pr, []dtype.DType{dtype.BF16, dtype.F16}) {
		for _, ps := range f.Space(vs).Enumerate() {
			if i++; !sweep.Take(i, every) {
				continue
			}
			prog, err := f.Emit(vs, ps)
			if err != nil {
				t.Fatalf("%s %s: %v", vs.Key(), ps, err)
			}
			archs := []string{"sm_80", "sm_90"}
			if strings.Contains(ps.String(), "mma=wgmma") {
				archs = []string{"sm_90a"} // wgmma and setmaxnreg are sm_90a's
			}
			for _, arch := range archs {
				jobs = append(jobs, job{vs.Key() + " " + ps.String(), prog.PTX, arch})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute) // the full sweep: every module of a space with clusters and the codes ring
	defer cancel()
	results := make([][]string, len(jobs))
	idx := make([]int, len(jobs))
	for j := range idx {
		idx[j] = j
	}
	ptxtest.Parallel(idx, func(j int) {
		c := jobs[j]
		reports, _, err := ptxas.Assemble(ctx, path, c.ptx, c.arch)
		if err != nil {
			results[j] = []string{fmt.Sprintf("%s %s: %v", c.arch, c.what, err)}
			return
		}
		for _, r := range reports {
			for _, f := range r.Faults() {
				results[j] = append(results[j], fmt.Sprintf("%s %s %s", c.arch, c.what, f))
			}
		}
	})
	var problems []string
	for _, r := range results {
		problems = append(problems, r...)
	}
	ptxtest.ReportSorted(t, problems, 20)
	t.Logf("%d modules assembled (%s)", len(jobs), sweep.Describe(every))
}

func TestAssembleDequant(t *testing.T) { assembleFamily(t, Families()[0], 7) }
func TestAssembleGEMM(t *testing.T)    { assembleFamily(t, Families()[1], 5) }
