package nf4gemm

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

// assembleFamily assembles a sample of f's variants at the preset's shapes
// (bf16; f16 too with GRADTUNE_SWEEP=ci or full, where the programs
// differ in their conversions alone) (sweep.PickGroups of one in every:
// every axis value and every shape, then spread; every variant with
// GRADTUNE_SWEEP=full) with ptxas for
// sm_80 and sm_90 (the wgmma path for sm_90a): each module is accepted,
// with no spills, no stack frame and no performance-loss note (wgmma
// serialized).
func assembleFamily(t *testing.T, f kernels.Family, every int) {
	pr, _ := variants.LookupPreset("qwen1.5b", 0)
	var jobs []ptxtest.Job
	dts := []dtype.DType{dtype.BF16, dtype.F16}
	if sweep.Current() == sweep.Sample {
		dts = dts[:1]
	}
	shapes := f.Shapes(pr, dts)
	groups := make([][]variants.Params, len(shapes))
	for i, vs := range shapes {
		groups[i] = f.Space(vs).Enumerate()
	}
	for i, pts := range sweep.PickGroups(groups, every) {
		vs := shapes[i]
		for _, ps := range pts {
			prog, err := f.Emit(vs, ps)
			if err != nil {
				t.Fatalf("%s %s: %v", vs.Key(), ps, err)
			}
			archs := []string{"sm_80", "sm_90"}
			if strings.Contains(ps.String(), "mma=wgmma") {
				archs = []string{"sm_90a"} // wgmma and setmaxnreg are sm_90a's
			}
			for _, arch := range archs {
				jobs = append(jobs, ptxtest.Job{What: vs.Key() + " " + ps.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: arch}})
			}
		}
	}
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, false), 20)
	t.Logf("%s: %d modules (%s)", f.Name(), len(jobs), sweep.Describe(every))
}

func TestAssembleDequant(t *testing.T) { assembleFamily(t, Families()[0], 7) }
func TestAssembleGEMM(t *testing.T)    { assembleFamily(t, Families()[1], 80) }
