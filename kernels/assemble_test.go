package kernels_test

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

// sweepShapes are the shapes every variant is emitted and assembled for:
// a model shape that every vector width and chunk divides, a tail shape,
// and the degenerate n=1 and n=7 (no full vector at all for wide vecs).
var sweepShapes = []string{"m=2048,n=8960", "n=1003", "n=1", "n=7"}

// variant is one emitted program.
type variant struct {
	family string
	shape  variants.Shape
	params variants.Params
	prog   kernels.Program
	plan   configs.Plan // prog at shape on a device of 132 SMs
}

func (v variant) String() string { return fmt.Sprintf("%s %s %s", v.family, v.shape.Key(), v.params) }

var (
	sweepOnce     sync.Once
	emitted       []variant
	sweepProblems []string
)

// emitSample is the share of each space allVariants emits: sweep.Pick of
// one in emitSample (every axis value, then spread; every point with
// GRADTUNE_SWEEP=ci or full).
const emitSample = 1

// allVariants emits the variants of the elementwise families, for every
// dtype each supports, at the sweep shapes (a sample of each space:
// emitSample), once for all tests.
func allVariants(t *testing.T) []variant {
	t.Helper()
	sweepOnce.Do(func() { emitted, sweepProblems = emitAll() })
	for _, p := range sweepProblems {
		t.Error(p)
	}
	return emitted
}

func emitAll() (out []variant, problems []string) {
	for _, f := range catalog.All() {
		if !slices.Contains(seedFamilies, f.Name()) {
			continue // the elementwise families; others test their own spaces
		}
		for _, dt := range f.DTypes() {
			for _, sp := range sweepShapes {
				specs, err := variants.ParseSpecs(sp)
				if err != nil {
					problems = append(problems, err.Error())
					continue
				}
				s, err := f.Shape(specs[0], dt)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s %s %v: %v", f.Name(), sp, dt, err))
					continue
				}
				ps := f.Space(s).Enumerate()
				if len(ps) == 0 {
					problems = append(problems, fmt.Sprintf("%s %s: empty space", f.Name(), s.Key()))
				}
				for _, p := range sweep.Pick(ps, emitSample) {
					prog, err := f.Emit(s, p)
					if err != nil {
						problems = append(problems, fmt.Sprintf("%s %s %s: %v", f.Name(), s.Key(), p, err))
						continue
					}
					plan, err := kernels.PlanAt(f, s, prog, 132)
					if err != nil {
						problems = append(problems, fmt.Sprintf("%s %s %s: %v", f.Name(), s.Key(), p, err))
						continue
					}
					out = append(out, variant{f.Name(), s, p, prog, plan})
				}
			}
		}
	}
	return out, problems
}

// unique is one distinct PTX text and the variants that emit it.
type unique struct {
	v       variant // the first variant emitting it
	count   int
	maxnreg int
	hash    int // of the PTX: picks the sample (internal/sweep)
}

// TestAssembleAllVariants assembles the distinct programs of the
// variants allVariants emits with ptxas (batched and cached:
// ptxas.Assembler.Check) and reads ptxas' resource report (checkReport).
//
// A deterministic sample of the distinct programs (by hash of the PTX) is
// assembled: of every variant's, one in 48 for sm_90 and one in 192 for
// sm_80 (one in 3 and in 12 with GRADTUNE_SWEEP=ci), or every one for
// both with full (internal/sweep); assembleStride takes into account the
// share allVariants emitted.
func TestAssembleAllVariants(t *testing.T) {
	start := time.Now()
	all := allVariants(t)

	byText := map[string]*unique{}
	var uniq []*unique
	for _, v := range all {
		if u := byText[v.prog.PTX]; u != nil {
			u.count++
			continue
		}
		if !strings.Contains(v.prog.PTX, ".visible .entry ") || len(v.prog.Launches) != 1 {
			t.Errorf("%v: no kernel or not one launch", v)
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(v.prog.PTX))
		n, _ := v.params.Int("maxnreg")
		u := &unique{v: v, count: 1, maxnreg: n, hash: int(h.Sum32() >> 1)}
		byText[v.prog.PTX] = u
		uniq = append(uniq, u)
	}

	type job struct {
		arch string
		u    *unique
	}
	var jobs []job
	var mods []ptxas.Module
	for _, arch := range []string{"sm_90", "sm_80"} {
		for _, u := range uniq {
			if u.hash%assembleStride(map[string]int{"sm_90": 12, "sm_80": 48}[arch]) == 0 {
				jobs = append(jobs, job{arch, u})
				mods = append(mods, ptxas.Module{PTX: u.v.prog.PTX, Arch: arch})
			}
		}
	}
	var (
		failures, problems, allowed []string
		counts                      = map[string]int{}
	)
	for i, r := range ptxas.ForTests(t).Check(t.Context(), mods) {
		j := jobs[i]
		if r.Err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v (and %d variants with the same PTX): %v", j.arch, j.u.v, j.u.count-1, r.Err))
			continue
		}
		ps, al := checkReport(j.arch, j.u, r.Reports)
		problems, allowed = append(problems, ps...), append(allowed, al...)
		counts[j.arch]++
	}
	ptxtest.ReportSorted(t, failures, 10)
	ptxtest.ReportSorted(t, problems, 20)
	sort.Strings(allowed)
	for _, a := range allowed {
		t.Logf("allowed (rcp.rn.f32 slow path): %s", a)
	}
	if sweep.Full() && counts["sm_90"] != len(uniq) && len(failures) == 0 {
		t.Errorf("assembled %d programs for sm_90, want all %d", counts["sm_90"], len(uniq))
	}
	t.Logf("%d variants, %d distinct programs; assembled %d for sm_90 and %d for sm_80 in %v (sm_90: of every variant's, %s)",
		len(all), len(uniq), counts["sm_90"], counts["sm_80"], time.Since(start).Round(time.Millisecond), sweep.Describe(12))
}

// assembleStride is the stride over the emitted variants' distinct
// programs that assembles about one in sweep.Every(n) of every variant's:
// allVariants emitted about one in sweep.Every(emitSample).
func assembleStride(n int) int {
	return max(1, sweep.Every(n)/sweep.Every(emitSample))
}

// rcpSpillBytes is the spill allowed to a kernel without a register cap
// that calls the IEEE reciprocal rcp.rn.f32. ptxas 12.4 expands it into a
// call to a slow path with a stack frame, and for a few large variants
// (gelu_bwd, vec·ept = 16, block=256, one-shot grid, sm_90) it then picks
// 48 registers and spills 4 bytes around that call; without .reqntid, or
// with rcp.approx.f32, the same kernel does not spill. Set it to 0 to see
// them fail.
const rcpSpillBytes = 8

// checkReport checks ptxas' report of a program for arch: one report, of
// its kernel, no spills or stack without a register cap (but
// rcpSpillBytes), the cap respected with one, and no shared memory. It
// returns the problems and, apart, the spills it allowed.
func checkReport(arch string, u *unique, reports []ptxas.Report) (problems, allowed []string) {
	if len(reports) != 1 || reports[0].Function != u.v.prog.Launches[0].Entry {
		return []string{fmt.Sprintf("%s: %v: ptxas reports %+v, want one of kernel %s", arch, u.v, reports, u.v.prog.Launches[0].Entry)}, nil
	}
	switch r := reports[0]; {
	case r.Arch != arch:
		problems = append(problems, fmt.Sprintf("%s: %v: report for %s", arch, u.v, r.Arch))
	case u.maxnreg == 0 && r.Spills():
		msg := &problems
		if strings.Contains(u.v.prog.PTX, "rcp.rn.f32") && r.SpillStores <= rcpSpillBytes && r.SpillLoads <= rcpSpillBytes && r.StackBytes <= 2*rcpSpillBytes {
			msg = &allowed
		}
		*msg = append(*msg, fmt.Sprintf("%s: %v: spills without a register cap: %d bytes stores, %d loads, %d stack (%d registers)",
			arch, u.v, r.SpillStores, r.SpillLoads, r.StackBytes, r.Registers))
	case u.maxnreg > 0 && r.Registers > u.maxnreg:
		problems = append(problems, fmt.Sprintf("%s: %v: %d registers above .maxnreg %d", arch, u.v, r.Registers, u.maxnreg))
	case r.Registers <= 0 || r.SharedBytes != 0:
		problems = append(problems, fmt.Sprintf("%s: %v: %d registers, %d bytes shared memory", arch, u.v, r.Registers, r.SharedBytes))
	}
	return problems, allowed
}
