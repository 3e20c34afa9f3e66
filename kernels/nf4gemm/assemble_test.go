package nf4gemm

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/simtest"
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
		groups[i] = simtest.Enumerate(f, vs)
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

// TestAssembleLoRA assembles, for sm_90a, a sample of the lora=16 and
// lora=64 variants of qwen1.5b's gate·up and down dX (one in 40 of
// each, every axis value among them; one in 5 with GRADTUNE_SWEEP=ci, all
// with full): each module accepted with no spills, no stack frame and no
// warning.
func TestAssembleLoRA(t *testing.T) {
	f := Families()[1]
	specs, err := variants.ParseSpecs("m=2048,n=8960,k=1536,lora=16; m=2048,n=1536,k=8960,scales=dq,lora=64")
	if err != nil {
		t.Fatal(err)
	}
	shapes := make([]variants.Shape, len(specs))
	groups := make([][]variants.Params, len(specs))
	for i, sp := range specs {
		if shapes[i], err = f.Shape(sp, dtype.BF16); err != nil {
			t.Fatal(err)
		}
		groups[i] = simtest.Enumerate(f, shapes[i])
	}
	jobs := sm90aJobs(t, f, shapes, sweep.PickGroups(groups, 20))
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
	t.Logf("%d modules", len(jobs))
}

// TestAssembleRegisterASplitK assembles, for sm_90a, the register-A
// variants that split the reduction at qwen1.5b's shapes at 512 tokens
// (where its tiles fill less than a wave), bf16 (sweep.PickGroups: every
// shape and axis value, then one in 16; all 48 with GRADTUNE_SWEEP=full):
// each module (the register-A kernel and gemm_bwd's reduce) accepted with
// no spills, no stack frame and no warning.
func TestAssembleRegisterASplitK(t *testing.T) {
	f := Families()[1]
	pr, _ := variants.LookupPreset("qwen1.5b", 512)
	shapes := f.Shapes(pr, []dtype.DType{dtype.BF16})
	groups := make([][]variants.Params, len(shapes))
	for i, s := range shapes {
		for _, ps := range simtest.Enumerate(f, s) {
			if ps["dequant"] == "consumer" && ps["mma"] == "wgmma" && ps["splitk"] != "1" {
				groups[i] = append(groups[i], ps)
			}
		}
	}
	jobs := sm90aJobs(t, f, shapes, sweep.PickGroups(groups, 16))
	if len(jobs) == 0 {
		t.Fatal("no register-A variant with split-K at 512 tokens")
	}
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
	t.Logf("%d modules", len(jobs))
}

// sm90aJobs emits picked[i]'s points at shapes[i] as sm_90a modules.
func sm90aJobs(t *testing.T, f kernels.Family, shapes []variants.Shape, picked [][]variants.Params) []ptxtest.Job {
	t.Helper()
	var jobs []ptxtest.Job
	for i, pts := range picked {
		for _, ps := range pts {
			prog, err := f.Emit(shapes[i], ps)
			if err != nil {
				t.Fatalf("%s %s: %v", shapes[i].Key(), ps, err)
			}
			jobs = append(jobs, ptxtest.Job{What: shapes[i].Key() + " " + ps.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: "sm_90a"}})
		}
	}
	return jobs
}
