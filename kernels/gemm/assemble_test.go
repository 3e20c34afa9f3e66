package gemm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

// asmCase is one module to assemble for one architecture.
type asmCase struct {
	arch, what string
	ptx        string
}

// TestAssemble assembles a deterministic sample of the preset's variants
// with ptxas (every sixth in enumeration order, every third with
// GRADTUNE_SWEEP=full; both dtypes): the sync path for sm_80 and sm_90. ptxas must accept each module and report no
// spills and no stack frame.
func TestAssemble(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	f := Families()[0]
	pr, _ := variants.LookupPreset("qwen1.5b", 0)
	var cases []asmCase
	i, every := 0, 6
	if sweep.Full() {
		every = 3
	}
	for _, vs := range f.Shapes(pr, []dtype.DType{dtype.BF16, dtype.F16}) {
		for _, ps := range f.Space(vs).Enumerate() {
			if i++; !sweep.Take(i, every) {
				continue
			}
			prog, err := f.Emit(vs, ps)
			if err != nil {
				t.Fatal(err)
			}
			what := vs.Key() + " " + ps.String()
			for _, arch := range archs(ps) {
				cases = append(cases, asmCase{arch: arch, what: what, ptx: prog.PTX})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var problems []string
	results := make([][]string, len(cases))
	ptxtest.Parallel(indices(len(cases)), func(j int) { _, results[j] = assembleOne(ctx, path, cases[j]) })
	for _, r := range results {
		problems = append(problems, r...)
	}
	ptxtest.ReportSorted(t, problems, 20)
	t.Logf("%d modules assembled", len(cases))
}

// TestAssembleWinners assembles the committed tables' gemm_bwd winners
// (configs/<gpu>/), emitted from their params at their shape, and reports
// each one's ptxas resources (registers per thread, spills, stack); a
// spill, a stack frame, a warning or a performance note fails, as in
// TestAssemble.
func TestAssembleWinners(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	set, err := configs.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	f := Families()[0]
	n := 0
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
				c := asmCase{arch: arch, what: vs.Key() + " " + ps.String(), ptx: prog.PTX}
				reports, problems := assembleOne(context.Background(), path, c)
				for _, r := range reports {
					t.Logf("%s %s %s: %d registers, spills %d/%d bytes, stack %d", tb.GPU.Name, c.what, r.Function, r.Registers, r.SpillStores, r.SpillLoads, r.StackBytes)
				}
				for _, p := range problems {
					t.Error(p)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no gemm_bwd entry in the committed tables")
	}
}

// archs lists the architectures a variant is assembled for.
func archs(ps variants.Params) []string {
	if ps["mma"] == string(Sync) {
		return []string{"sm_80", "sm_90"}
	}
	return []string{"sm_90a"}
}

func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// assembleOne assembles c and returns ptxas's reports and what is wrong:
// an error, a warning, a spill, a stack frame or a performance note.
func assembleOne(ctx context.Context, path string, c asmCase) ([]ptxas.Report, []string) {
	reports, warnings, err := assembleWarn(ctx, path, c.ptx, c.arch)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s %s: %v", c.arch, c.what, err)}
	}
	var ps []string
	for _, w := range warnings {
		ps = append(ps, fmt.Sprintf("%s %s: %s", c.arch, c.what, w))
	}
	for _, r := range reports {
		for _, f := range r.Faults() {
			ps = append(ps, fmt.Sprintf("%s %s %s", c.arch, c.what, f))
		}
	}
	return reports, ps
}

// assembleWarn runs `ptxas -v` on ptx and returns its reports and its
// warnings (ptxas.Assemble drops them). A warning, like a report's
// PerfLoss note (C7515: wgmma serialized), is a performance bug on the
// wgmma path, so the test counts it as a failure.
func assembleWarn(ctx context.Context, path, ptx, arch string) ([]ptxas.Report, []string, error) {
	dir, err := os.MkdirTemp("", "gemm-ptxas-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "k.ptx"), []byte(ptx), 0o644); err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, path, "-v", "-arch="+arch, "-o", "k.cubin", "k.ptx")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, nil, fmt.Errorf("%v:\n%s", err, out)
	}
	var warnings []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(strings.ToLower(line), "warning") {
			warnings = append(warnings, strings.TrimSpace(line))
		}
	}
	reports, err := ptxas.ParseReport(string(out))
	return reports, warnings, err
}
