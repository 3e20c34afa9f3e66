package kernels_test

import (
	"context"
	"fmt"
	"github.com/gradtune/gradtune/contract"
	"hash/fnv"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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
	plan   contract.Plan // prog at shape on a device of 132 SMs
}

func (v variant) String() string { return fmt.Sprintf("%s %s %s", v.family, v.shape.Key(), v.params) }

var (
	sweepOnce     sync.Once
	emitted       []variant
	sweepProblems []string
)

// allVariants emits every variant of every registered family, for every
// dtype the family supports, at the sweep shapes, once for all tests.
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
				for _, p := range ps {
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

// assembly is one ptxas run: kernels of one header, renamed v0, v1, ...
type assembly struct {
	arch    string
	header  string
	members []*unique
}

// unique is one distinct PTX text and the variants that emit it.
type unique struct {
	v       variant // the first variant emitting it
	count   int
	header  string // everything before the first .visible .entry
	body    string
	maxnreg int
	hash    int // of the PTX: picks the sample (internal/sweep)
}

// TestAssembleAllVariants assembles every distinct program of every
// variant with ptxas and reads ptxas' resource report.
//
// ptxas costs about 15 ms of CPU per kernel once its start-up is shared, so
// the kernels of many variants are assembled as one module: each variant's
// kernel is renamed (its text is otherwise unchanged) and the kernels of
// one .version/.target header go into modules of batchSize kernels. ptxas
// compiles entry functions independently and reports each on its own. A
// module that fails is assembled again kernel by kernel to name the
// variants at fault.
//
// A deterministic sample of the distinct programs (by hash of the PTX) is
// assembled: a quarter for sm_90 and a sixteenth for sm_80, or every one
// for both with GRADTUNE_SWEEP=full (internal/sweep).
func TestAssembleAllVariants(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	start := time.Now()
	all := allVariants(t)

	byText := map[string]*unique{}
	var uniq []*unique
	for _, v := range all {
		if u := byText[v.prog.PTX]; u != nil {
			u.count++
			continue
		}
		i := strings.Index(v.prog.PTX, ".visible .entry ")
		if i < 0 || len(v.prog.Launches) != 1 {
			t.Errorf("%v: no kernel or not one launch", v)
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(v.prog.PTX))
		n, _ := v.params.Int("maxnreg")
		u := &unique{v: v, count: 1, header: v.prog.PTX[:i], body: v.prog.PTX[i:], maxnreg: n, hash: int(h.Sum32() >> 1)}
		byText[v.prog.PTX] = u
		uniq = append(uniq, u)
	}
	// Sort so that batches mix heavy and light kernels the same way on
	// every run.
	sort.SliceStable(uniq, func(i, j int) bool { return uniq[i].header < uniq[j].header })

	const batchSize = 40
	var jobs []assembly
	for _, arch := range []string{"sm_90", "sm_80"} {
		groups := map[string][]*unique{}
		var headers []string
		for _, u := range uniq {
			if !sweep.Take(u.hash, map[string]int{"sm_90": 4, "sm_80": 16}[arch]) {
				continue
			}
			if groups[u.header] == nil {
				headers = append(headers, u.header)
			}
			groups[u.header] = append(groups[u.header], u)
		}
		for _, h := range headers {
			g := groups[h]
			for len(g) > 0 {
				n := min(batchSize, len(g))
				jobs = append(jobs, assembly{arch, h, g[:n]})
				g = g[n:]
			}
		}
	}

	type failure struct {
		arch string
		u    *unique
		err  error
	}
	var (
		mu       sync.Mutex
		failures []failure
		problems []string
		allowed  []string
		counts   = map[string]int{}
	)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	ptxtest.Parallel(jobs, func(a assembly) {
		text, names := a.module()
		reports, _, err := ptxas.Assemble(ctx, path, text, a.arch)
		if err != nil {
			// Find the variants at fault.
			for _, u := range a.members {
				one := assembly{a.arch, a.header, []*unique{u}}
				text, _ := one.module()
				if _, _, err := ptxas.Assemble(ctx, path, text, a.arch); err != nil {
					mu.Lock()
					failures = append(failures, failure{a.arch, u, err})
					mu.Unlock()
				}
			}
			return
		}
		ps, al := checkReports(a, names, reports)
		mu.Lock()
		problems = append(problems, ps...)
		allowed = append(allowed, al...)
		counts[a.arch] += len(a.members)
		mu.Unlock()
	})

	for i, f := range failures {
		if i == 10 {
			t.Errorf("... and %d more ptxas failures", len(failures)-10)
			break
		}
		t.Errorf("%s: %v (and %d variants with the same PTX): %v", f.arch, f.u.v, f.u.count-1, f.err)
	}
	ptxtest.ReportSorted(t, problems, 20)
	sort.Strings(allowed)
	for _, a := range allowed {
		t.Logf("allowed (rcp.rn.f32 slow path): %s", a)
	}
	if sweep.Full() && counts["sm_90"] != len(uniq) && len(failures) == 0 {
		t.Errorf("assembled %d programs for sm_90, want all %d", counts["sm_90"], len(uniq))
	}
	t.Logf("%d variants, %d distinct programs; assembled %d for sm_90 and %d for sm_80 in %v with %d workers (sm_90: %s)",
		len(all), len(uniq), counts["sm_90"], counts["sm_80"], time.Since(start).Round(time.Millisecond), runtime.GOMAXPROCS(0), sweep.Describe(4))
}

// module returns the PTX of an assembly and the entry names it gives its
// members, in order.
func (a assembly) module() (string, []string) {
	var b strings.Builder
	b.WriteString(a.header)
	names := make([]string, len(a.members))
	for i, u := range a.members {
		names[i] = fmt.Sprintf("v%03d", i)
		b.WriteString(strings.ReplaceAll(u.body, u.v.prog.Launches[0].Entry, names[i]))
		b.WriteString("\n")
	}
	return b.String(), names
}

// rcpSpillBytes is the spill allowed to a kernel without a register cap
// that calls the IEEE reciprocal rcp.rn.f32. ptxas 12.4 expands it into a
// call to a slow path with a stack frame, and for a few large variants
// (gelu_bwd, vec·ept = 16, block=256, one-shot grid, sm_90) it then picks
// 48 registers and spills 4 bytes around that call; without .reqntid, or
// with rcp.approx.f32, the same kernel does not spill. Set it to 0 to see
// them fail.
const rcpSpillBytes = 8

// checkReports checks ptxas' report of each member: one report per
// kernel, no spills or stack without a register cap (but rcpSpillBytes),
// the cap respected with one, and no shared memory. It returns the
// problems and, apart, the spills it allowed.
func checkReports(a assembly, names []string, reports []ptxas.Report) (problems, allowed []string) {
	byName := map[string]ptxas.Report{}
	for _, r := range reports {
		byName[r.Function] = r
	}
	if len(reports) != len(names) {
		problems = append(problems, fmt.Sprintf("%s: %d reports for %d kernels", a.arch, len(reports), len(names)))
	}
	for i, u := range a.members {
		r, ok := byName[names[i]]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: %v: no ptxas report", a.arch, u.v))
		case r.Arch != a.arch:
			problems = append(problems, fmt.Sprintf("%s: %v: report for %s", a.arch, u.v, r.Arch))
		case u.maxnreg == 0 && r.Spills():
			msg := &problems
			if strings.Contains(u.body, "rcp.rn.f32") && r.SpillStores <= rcpSpillBytes && r.SpillLoads <= rcpSpillBytes && r.StackBytes <= 2*rcpSpillBytes {
				msg = &allowed
			}
			*msg = append(*msg, fmt.Sprintf("%s: %v: spills without a register cap: %d bytes stores, %d loads, %d stack (%d registers)",
				a.arch, u.v, r.SpillStores, r.SpillLoads, r.StackBytes, r.Registers))
		case u.maxnreg > 0 && r.Registers > u.maxnreg:
			problems = append(problems, fmt.Sprintf("%s: %v: %d registers above .maxnreg %d", a.arch, u.v, r.Registers, u.maxnreg))
		case r.Registers <= 0 || r.SharedBytes != 0:
			problems = append(problems, fmt.Sprintf("%s: %v: %d registers, %d bytes shared memory", a.arch, u.v, r.Registers, r.SharedBytes))
		}
	}
	return problems, allowed
}
