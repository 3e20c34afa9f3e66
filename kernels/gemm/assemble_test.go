package gemm

import (
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

// TestAssemble assembles a deterministic sample of the preset's variants
// with ptxas (sweep.PickGroups over the shapes: every axis value and
// shape, then one in 64 of each; one in 4 with GRADTUNE_SWEEP=ci, all
// with full; both dtypes): the sync path for
// sm_80 and sm_90,
// the wgmma path for sm_90a. ptxas must accept each module and report no
// spills, no stack frame, no performance-loss note (C7515: wgmma
// serialized) and no warning: on the wgmma path each is a performance bug.
func TestAssemble(t *testing.T) {
	f := Families()[0]
	var jobs []ptxtest.Job
	sps := preset(t)
	groups := make([][]variants.Params, len(sps))
	for i, sp := range sps {
		groups[i] = sp.points
	}
	for i, pts := range sweep.PickGroups(groups, 16) {
		vs := sps[i].shape
		for _, ps := range pts {
			prog, err := f.Emit(vs, ps)
			if err != nil {
				t.Fatal(err)
			}
			for _, arch := range archs(ps) {
				jobs = append(jobs, ptxtest.Job{What: vs.Key() + " " + ps.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: arch}})
			}
		}
	}
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
}

// archs lists the architectures a variant is assembled for.
func archs(ps variants.Params) []string {
	if ps["mma"] == string(Sync) {
		return []string{"sm_80", "sm_90"}
	}
	return []string{"sm_90a"}
}

// TestAssembleWinners assembles the committed tables' gemm_bwd winners
// (configs/<gpu>/), emitted from their params at their shape: a spill, a
// stack frame, a warning or a performance note fails, as in TestAssemble.
func TestAssembleWinners(t *testing.T) {
	set, err := configs.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	f := Families()[0]
	var jobs []ptxtest.Job
	for _, tb := range set.Tables {
		for _, e := range tb.Entries {
			if e.Kernel != name {
				continue
			}
			dt, err := dtype.Parse(e.DType)
			if err != nil {
				t.Fatal(err)
			}
			specs, err := variants.ParseSpecs(e.Shape)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := f.Shape(specs[0], dt)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := variants.ParseParams(e.Params)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := f.Emit(vs, ps)
			if err != nil {
				t.Fatalf("%s %s: %v", vs.Key(), ps, err)
			}
			for _, arch := range archs(ps) {
				jobs = append(jobs, ptxtest.Job{What: tb.GPU.Name + " " + vs.Key() + " " + ps.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: arch}})
			}
		}
	}
	if len(jobs) == 0 {
		t.Fatal("no gemm_bwd entry in the committed tables")
	}
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
}

// TestAssembleLoRA assembles, for sm_90a, the lora=16 and lora=64
// variants of qwen1.5b's gate·up dX covering every axis value, as
// TestAssemble does.
func TestAssembleLoRA(t *testing.T) {
	f := Families()[0]
	var jobs []ptxtest.Job
	for _, spec := range []string{"m=2048,n=8960,k=1536,grad=dx,lora=16", "m=2048,n=1536,k=8960,grad=dx,lora=64"} {
		specs, err := variants.ParseSpecs(spec)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := f.Shape(specs[0], dtype.BF16)
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range sweep.Pick(f.Space(vs).Enumerate(), 1000) {
			prog, err := f.Emit(vs, ps)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, ptxtest.Job{What: vs.Key() + " " + ps.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: "sm_90a"}})
		}
	}
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
}
