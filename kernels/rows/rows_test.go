package rows_test

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/rowtest"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

func TestRowFamiliesRegistered(t *testing.T) {
	for _, name := range rowtest.Families {
		f := rowtest.Family(t, name)
		if !slices.Equal(f.Dims(), []string{"m", "n"}) {
			t.Errorf("%s: Dims = %v", name, f.Dims())
		}
		if !slices.Equal(f.DTypes(), []dtype.DType{dtype.F32, dtype.F16, dtype.BF16}) {
			t.Errorf("%s: DTypes = %v", name, f.DTypes())
		}
		if f.Doc() == "" || strings.Contains(f.Doc(), "\n") {
			t.Errorf("%s: Doc %q", name, f.Doc())
		}
	}
}

func TestRowShapes(t *testing.T) {
	for _, name := range rowtest.Families {
		f := rowtest.Family(t, name)
		for _, c := range []struct{ spec, key string }{
			{"m=2048,n=1536", "m=2048,n=1536,dtype=f32"},
			{"n=37,m=3", "m=3,n=37,dtype=f32"},
			{"M=1,N=1", "m=1,n=1,dtype=f32"},
		} {
			if s := rowtest.Shape(t, f, c.spec, dtype.F32); s.Key() != c.key {
				t.Errorf("%s.Shape(%s) = %s, want %s", name, c.spec, s.Key(), c.key)
			}
		}
		bad := []struct {
			spec variants.Spec
			dt   dtype.DType
			want string
		}{
			{rowtest.Spec(t, "n=4"), dtype.F32, name + " takes m=M,n=N (got n=4)"},
			{rowtest.Spec(t, "m=4"), dtype.F32, "takes m=M,n=N"},
			{rowtest.Spec(t, "m=4,n=4,k=2"), dtype.F32, "takes m=M,n=N"},
			{rowtest.Spec(t, "m=4,n=4"), dtype.F64, name + " does not support dtype f64"},
			{rowtest.Spec(t, "m=65536,n=65536"), dtype.F32, "4294967296 elements is more than 2147483647"},
			{variants.Spec{Dims: []variants.Dim{{Name: "m", Value: 0}, {Name: "n", Value: 3}}}, dtype.F32, name + " m=0 is not positive"},
			{rowtest.Spec(t, "m=2147483648,n=1"), dtype.F32, name + ": m=2147483648 must be in 1..2147483647"},
		}
		if name != "softmax_bwd" {
			bad = append(bad, struct {
				spec variants.Spec
				dt   dtype.DType
				want string
			}{rowtest.Spec(t, "m=2,n=32772"), dtype.BF16, "n=32772 is too long: a row must fit one tile of 1024 threads holding at most 32 elements each (n ≤ 32768 when n is a multiple of 4)"})
			rowtest.Shape(t, f, "m=2,n=32768", dtype.BF16)
			rowtest.Shape(t, f, "m=2,n=16383", dtype.F32)
		} else {
			rowtest.Shape(t, f, "m=2,n=1000003", dtype.F32)
		}
		for _, c := range bad {
			if _, err := f.Shape(c.spec, c.dt); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s.Shape(%v, %v) error = %v, want %q", name, c.spec.Dims, c.dt, err, c.want)
			}
		}
	}

	// Preset shapes.
	want := map[string]map[int]string{
		"softmax_bwd":   {2048: "m=24576,n=512,dtype=bf16", 512: "m=6144,n=512,dtype=bf16", 256: "m=3072,n=256,dtype=bf16", 1000: "m=6144,n=512,dtype=bf16"},
		"rmsnorm_bwd":   {2048: "m=2048,n=1536,dtype=bf16", 512: "m=512,n=1536,dtype=bf16", 256: "m=256,n=1536,dtype=bf16", 1000: "m=1000,n=1536,dtype=bf16"},
		"layernorm_bwd": {2048: "m=2048,n=1536,dtype=bf16", 512: "m=512,n=1536,dtype=bf16", 256: "m=256,n=1536,dtype=bf16", 1000: "m=1000,n=1536,dtype=bf16"},
	}
	for _, name := range rowtest.Families {
		f := rowtest.Family(t, name)
		for tokens, key := range want[name] {
			p, err := variants.LookupPreset("qwen1.5b", tokens)
			if err != nil {
				t.Fatal(err)
			}
			got := f.Shapes(p, []dtype.DType{dtype.BF16, dtype.F64, dtype.BF16})
			if len(got) != 1 || got[0].Key() != key {
				t.Errorf("%s.Shapes(qwen1.5b, %d tokens) = %v, want [%s]", name, tokens, got, key)
			}
		}
	}
}

// TestRowSpaces checks the spaces over a sweep of shapes: never empty,
// every point emits, Emit rejects what Check rejects, and each launch is
// well formed. At three shapes a sample of the points (sweep.Pick of one
// in 6: every axis value, then spread; all with GRADTUNE_SWEEP=ci or
// full) is emitted
// in every dtype; of the other (shape, dtype) pairs one in 24 is swept
// (sweep.Take; a third with ci, all with full), 12 points each.
func TestRowSpaces(t *testing.T) {
	var shapes []string
	for _, n := range []int{1, 2, 3, 5, 7, 8, 16, 31, 33, 37, 64, 100, 127, 128, 129, 255, 1000, 1536, 4096, 4097, 8960, 16384, 32768} {
		for _, m := range []int{1, 7, 300} {
			shapes = append(shapes, fmt.Sprintf("m=%d,n=%d", m, n))
		}
	}
	for _, name := range rowtest.Families {
		f := rowtest.Family(t, name)
		for d, dt := range f.DTypes() {
			for i, sp := range shapes {
				every := sp == "m=7,n=37" || sp == "m=300,n=1000" || sp == "m=7,n=1536"
				if !every && !sweep.Take(i+d, 12) {
					continue
				}
				s, err := f.Shape(rowtest.Spec(t, sp), dt)
				if err != nil {
					t.Errorf("%s %s %v: %v", name, sp, dt, err)
					continue
				}
				all := simtest.Enumerate(f, s)
				if len(all) == 0 {
					t.Errorf("%s %s: empty space", name, s.Key())
					continue
				}
				// Emit a sample (every axis value; all with
				// GRADTUNE_SWEEP=ci) at a few shapes, 12 elsewhere.
				pts := variants.Spread(all, 12)
				if every {
					pts = sweep.Pick(all, 6)
				}
				for _, p := range pts {
					prog, err := f.Emit(s, p)
					if err != nil {
						t.Errorf("%s %s %s: %v", name, s.Key(), p, err)
						continue
					}
					checkRowProgram(t, f, s, p, prog)
				}
			}
		}
		// Bad params.
		s := rowtest.Shape(t, f, "m=7,n=1536", dtype.F32)
		sp := f.Space(s)
		good := simtest.Enumerate(f, s)[0]
		for _, a := range sp.Axes {
			if a.Doc == "" || len(a.Values) == 0 {
				t.Errorf("%s: axis %s has no doc or no values", name, a.Name)
			}
			p := good.Clone()
			p[a.Name] = "999"
			if _, err := f.Emit(s, p); err == nil || !strings.HasPrefix(err.Error(), name+": ") || !strings.Contains(err.Error(), "not accepted") {
				t.Errorf("%s: Emit(%s) error = %v", name, p, err)
			}
			delete(p, a.Name)
			if _, err := f.Emit(s, p); err == nil || !strings.Contains(err.Error(), "missing") {
				t.Errorf("%s: Emit(%s) error = %v", name, p, err)
			}
		}
		allowed := map[string]bool{}
		for _, p := range simtest.Enumerate(f, s) {
			allowed[p.String()] = true
		}
		for i, p := range sp.Product() {
			if i%5 == 0 && !allowed[p.String()] {
				if _, err := f.Emit(s, p); err == nil || !strings.Contains(err.Error(), "violate") {
					t.Errorf("%s: Emit(%s) of a point outside the space: %v", name, p, err)
				}
			}
		}
	}
}

var (
	rowParamRE = regexp.MustCompile(`\.param \.(u64|u32) (\w+)_param_(\w+)`)
	reqntidRE  = regexp.MustCompile(`\n\.reqntid (\d+)\n`)
)

// checkRowProgram checks what can be read off a program without running
// it: launches against the buffers, directives, labels and registers.
func checkRowProgram(t *testing.T, f kernels.Family, s variants.Shape, p variants.Params, prog kernels.Program) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s %s %s: %s", f.Name(), s.Key(), p, fmt.Sprintf(format, args...))
	}
	bufs := map[string]kernels.Buffer{}
	for _, b := range f.Buffers(s) {
		bufs[b.Name] = b
	}
	used := map[string]bool{}
	for _, l := range prog.Launches {
		for _, a := range l.Args {
			used[a.Buffer] = true
		}
	}
	for _, b := range prog.Buffers {
		if _, dup := bufs[b.Name]; dup || b.Role != kernels.State && b.Role != kernels.Scratch || kernels.Elems(b, s) <= 0 || !used[b.Name] {
			errorf("program buffer %+v: a duplicate, not State or Scratch, empty, or unused", b)
		}
		bufs[b.Name] = b
	}
	if fmt.Sprint(prog.RuntimeDims) != "[m]" {
		errorf("runtime dims %v, want [m]", prog.RuntimeDims)
	}
	wantLaunches := 1
	if f.Name() != "softmax_bwd" && p["dgamma"] != "ticket" && p["dgamma"] != "atomic1" {
		wantLaunches = 2
	}
	if len(prog.Launches) != wantLaunches {
		errorf("%d launches, want %d", len(prog.Launches), wantLaunches)
	}
	if _, _, problems := ptxtest.Labels(prog.PTX); len(problems) > 0 {
		errorf("labels: %v", problems)
	}
	if _, problems := ptxtest.Regs(prog.PTX); len(problems) > 0 {
		errorf("registers: %v", problems)
	}
	// pdl=1 (griddepcontrol, vector red.add) and atomic1 with vectors
	// (vector red.add) need sm_90; all else runs on sm_80.
	target := "sm_80"
	vec, _ := p.Int("vec")
	if pdl, err := p.Int("pdl"); err == nil && pdl > 0 || p["dgamma"] == "atomic1" && vec > 1 {
		target = "sm_90"
	}
	if !strings.Contains(prog.PTX, "\n.target "+target+"\n") {
		errorf("not an %s module", target)
	}
	kernelsByName := map[string]string{}
	for _, k := range ptxtest.Kernels(prog.PTX) {
		kernelsByName[k[:strings.IndexByte(k, '(')]] = k
	}
	maxnreg, _ := p.Int("maxnreg")
	plan, err := kernels.PlanAt(f, s, prog, 132)
	if err != nil {
		errorf("%v", err)
		return
	}
	for i, l := range plan.Launches {
		body, ok := kernelsByName[l.Entry]
		if !ok {
			errorf("launch of %s, which the module lacks", l.Entry)
			continue
		}
		threads := l.Block[0] * l.Block[1] * l.Block[2]
		if l.Grid[0] < 1 || l.Grid[1] != 1 || l.Grid[2] != 1 || prog.Launches[i].GridPerSM != 0 || threads < 32 || threads > 1024 || threads%32 != 0 {
			errorf("launch %s grid %v block %v", l.Entry, l.Grid, l.Block)
		}
		if m := reqntidRE.FindStringSubmatch(body); m == nil || m[1] != fmt.Sprint(threads) {
			errorf("%s: .reqntid %v for %d threads", l.Entry, m, threads)
		}
		maxSmem := 96 << 10 // two CTAs per SM of sm_80
		if p["store"] == "async" {
			maxSmem = 227 << 10 // one CTA per SM of sm_90
		}
		if l.SharedBytes < 0 || l.SharedBytes > maxSmem || l.SharedBytes%16 != 0 {
			errorf("%s: %d bytes of dynamic shared memory", l.Entry, l.SharedBytes)
		}
		if (l.SharedBytes > 0) != strings.Contains(prog.PTX, l.Entry+"_dsmem_smem[]") {
			errorf("%s: dynamic shared memory %d bytes and its declaration disagree", l.Entry, l.SharedBytes)
		}
		params := rowParamRE.FindAllStringSubmatch(body, -1)
		if len(params) != len(l.Args) {
			errorf("%s: %d parameters, %d args", l.Entry, len(params), len(l.Args))
			continue
		}
		for i, a := range l.Args {
			if a.Kind == configs.ScalarArg {
				// The row count, last, or (finalize) the row kernel's CTAs.
				want := "ctas"
				if strings.HasSuffix(l.Entry, "_"+s.DType.String()) {
					want = "m"
				}
				if a.Type != configs.U32 || params[i][1] != "u32" || params[i][3] != want || i != len(l.Args)-1 {
					errorf("%s: arg %d is a %s scalar, parameter %s %s (want the last, u32 %s)", l.Entry, i, a.Type, params[i][1], params[i][3], want)
				}
				continue
			}
			b, ok := bufs[a.Buffer]
			if !ok || params[i][3] != a.Buffer || params[i][1] != "u64" {
				errorf("%s: arg %d is %q (buffer %v), parameter %s", l.Entry, i, a.Buffer, ok, params[i][3])
			}
			if b.Role == kernels.Scratch && l.Entry == f.Name()+"_"+s.DType.String()+"_zero" {
				errorf("%s zeroes the scratch buffer %s", l.Entry, a.Buffer)
			}
		}
		if l.Entry == f.Name()+"_"+s.DType.String() && maxnreg > 0 && !strings.Contains(body, fmt.Sprintf("\n.maxnreg %d\n", maxnreg)) {
			errorf("no .maxnreg %d", maxnreg)
		}
	}
}

// rowKernelText is one distinct kernel of the row variants.
type rowKernelText struct {
	v       rowtest.Variant
	entry   string
	header  string // .version and .target
	externs string // its extern shared declarations
	body    string
	count   int
}

// splitKernels returns the kernels of a program's module.
func splitKernels(v rowtest.Variant) []*rowKernelText {
	text := v.Prog.PTX
	i := strings.Index(text, ".visible .entry ")
	head := text[:i]
	version := regexp.MustCompile(`(?m)^\.version .*\n\.target .*\n`).FindString(head)
	var out []*rowKernelText
	for _, body := range ptxtest.Kernels(text) {
		name := body[:strings.IndexByte(body, '(')]
		var ext []string
		for _, line := range strings.Split(head, "\n") {
			if strings.HasPrefix(line, ".extern") && strings.Contains(line, name+"_dsmem_") {
				ext = append(ext, line)
			}
		}
		out = append(out, &rowKernelText{v: v, entry: name, header: version, externs: strings.Join(ext, "\n"), body: ".visible .entry " + body, count: 1})
	}
	return out
}

// module is the kernel alone in a module, for ptxas.
func (k *rowKernelText) module() string {
	var b strings.Builder
	b.WriteString(k.header + ".address_size 64\n\n")
	if k.externs != "" {
		b.WriteString(k.externs + "\n")
	}
	b.WriteString("\n" + k.body)
	return b.String()
}

// smallSpillBytes is the spill allowed to a row kernel without a register
// cap: ptxas' register choice under .reqntid spills a few words for some
// heavier variants, which the runner's prescreen lets be measured
// (docs/kernels/rows.md, "Spills the assembly test allows").
const smallSpillBytes = 64

// TestRowVariantsAssemble assembles the distinct kernels of the row
// variants at the model shapes and the odd shapes with ptxas (batched and
// cached: ptxas.Assembler.Check): one in 32 for sm_90 and one in 128 for
// sm_80 (sweep.Take; a quarter and a sixteenth with GRADTUNE_SWEEP=ci, all
// of them for both with full); and checks ptxas' report: no spills
// without a register cap, the cap respected with one, and static shared
// memory only in the finalize kernels and the ticket's flag.
func TestRowVariantsAssemble(t *testing.T) {
	start := time.Now()
	vs := rowtest.EmitAll(t, rowtest.Families...)
	byKey := map[string]*rowKernelText{}
	var uniq []*rowKernelText
	for _, v := range vs {
		for _, k := range splitKernels(v) {
			// A kernel's text does not depend on its module's header, which
			// a PDL kernel next to it raises to sm_90: keep the lowest.
			key := strings.ReplaceAll(k.externs+k.body, k.entry, "K")
			if u := byKey[key]; u != nil {
				u.count++
				if k.header < u.header {
					u.header = k.header
				}
				continue
			}
			byKey[key] = k
			uniq = append(uniq, k)
		}
	}
	type job struct {
		arch string
		k    *rowKernelText
	}
	var jobs []job
	var mods []ptxas.Module
	for _, arch := range []string{"sm_90", "sm_80"} {
		for i, k := range uniq {
			switch {
			case !sweep.Take(i, map[string]int{"sm_90": 16, "sm_80": 64}[arch]):
				continue
			case arch == "sm_80" && strings.Contains(k.header, ".target sm_90"):
				continue // griddepcontrol (pdl=1) needs sm_90
			}
			jobs = append(jobs, job{arch, k})
			mods = append(mods, ptxas.Module{PTX: k.module(), Arch: arch})
		}
	}
	var (
		problems []string
		allowed  []string
		counts   = map[string]int{}
	)
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	check := func(arch string, k *rowKernelText, r ptxas.Report) {
		maxnreg := 0
		if k.entry == k.v.Family+"_"+k.v.Shape.DType.String() {
			maxnreg, _ = k.v.Params.Int("maxnreg")
		}
		// Static shared memory: the finalize kernel's transpose, and the
		// ticket's flag.
		main := k.entry == k.v.Family+"_"+k.v.Shape.DType.String()
		staticOK := strings.HasSuffix(k.entry, "_finalize") || main && k.v.Params["dgamma"] == "ticket" && r.SharedBytes <= 16
		spill := r.Spills()
		switch {
		case maxnreg == 0 && spill && r.SpillStores <= smallSpillBytes && r.StackBytes <= smallSpillBytes+8:
			allowed = append(allowed, fmt.Sprintf("%s %s (%v): %d/%d bytes spilled, %d stack, %d registers", arch, k.entry, k.v, r.SpillStores, r.SpillLoads, r.StackBytes, r.Registers))
		case maxnreg == 0 && spill:
			report("%s %s (%v): spills without a register cap: %d/%d bytes, %d stack, %d registers", arch, k.entry, k.v, r.SpillStores, r.SpillLoads, r.StackBytes, r.Registers)
		case maxnreg > 0 && r.Registers > maxnreg:
			report("%s %s (%v): %d registers above .maxnreg %d", arch, k.entry, k.v, r.Registers, maxnreg)
		case r.Registers <= 0 || r.SharedBytes != 0 && !staticOK:
			report("%s %s (%v): %d registers, %d bytes static shared memory", arch, k.entry, k.v, r.Registers, r.SharedBytes)
		}
	}
	for i, res := range ptxas.ForTests(t).Check(t.Context(), mods) {
		j := jobs[i]
		if res.Err != nil {
			report("%s %s (%v, %d variants): %v", j.arch, j.k.entry, j.k.v, j.k.count, res.Err)
			continue
		}
		i := slices.IndexFunc(res.Reports, func(r ptxas.Report) bool { return r.Function == j.k.entry })
		if i < 0 {
			report("%s %s (%v): no ptxas report", j.arch, j.k.entry, j.k.v)
			continue
		}
		check(j.arch, j.k, res.Reports[i])
		counts[j.arch]++
	}
	ptxtest.ReportSorted(t, problems, 30)
	sort.Strings(allowed)
	for i, a := range allowed {
		if i == 10 {
			t.Logf("... and %d more", len(allowed)-10)
			break
		}
		t.Logf("allowed (ptxas register heuristic): %s", a)
	}
	t.Logf("%d variants, %d distinct kernels; assembled %d for sm_90 and %d for sm_80 in %v; %d small spills allowed",
		len(vs), len(uniq), counts["sm_90"], counts["sm_80"], time.Since(start).Round(time.Millisecond), len(allowed))
}

// rowSimShapes are the shapes run on the interpreter, with how many
// variants of each (0: a sweep.Pick quarter, every axis value; all of them
// with GRADTUNE_SWEEP=ci or full).
func rowSimShapes(name string) []struct {
	spec   string
	sample int
} {
	out := []struct {
		spec   string
		sample int
	}{
		{"m=3,n=37", 0}, // no vector divides n; a partial last chunk
		{"m=1,n=1", 0},
		{"m=33,n=64", 24},  // sub-warp rows (softmax), rows past m
		{"m=5,n=1536", 24}, // the model's row: tpr 96..768, vpt 1..12
		{"m=67,n=200", 16}, // several warps per row with a partial chunk
	}
	if name == "softmax_bwd" {
		out = append(out, struct {
			spec   string
			sample int
		}{"m=2,n=20000", 8}) // rows of several tiles
	} else {
		out = append(out, struct {
			spec   string
			sample int
		}{"m=2100,n=6", 8}) // more than 512 CTAs: the finalize loop
	}
	return out
}

// TestRowVariantsOnInterpreter runs row variants on the CPU interpreter
// through runner.Session (outputs poisoned, Scratch left as it is) and
// checks each output against the reference with its own tolerance.
func TestRowVariantsOnInterpreter(t *testing.T) {
	onInterpreter(t, func(t *testing.T, name string, f kernels.Family, ss *runner.Session) (runs int) {
		for _, dt := range f.DTypes() {
			for _, c := range rowSimShapes(name) {
				s := rowtest.Shape(t, f, c.spec, dt)
				if err := ss.Prepare(f, s, 1); err != nil {
					t.Fatalf("%s: %v", s.Key(), err)
				}
				ref := f.Reference(s, f.Inputs(s, 1))
				pts := simtest.Enumerate(f, s)
				switch n := c.sample; {
				case testing.Short():
					pts = variants.Spread(pts, min(max(n, 1), 6))
				case n == 0:
					pts = sweep.Pick(pts, 4)
				default:
					pts = variants.Spread(pts, n)
				}
				for _, p := range pts {
					runs++
					if msg := rowtest.RunOnSim(ss, f, s, p, ref); msg != "" {
						t.Errorf("%s %s: %s", s.Key(), p, msg)
					}
				}
			}
		}
		return runs
	})
}

// onInterpreter runs test for each row family in parallel, on an
// interpreter session of its own, and logs the runs it reports.
func onInterpreter(t *testing.T, test func(t *testing.T, name string, f kernels.Family, ss *runner.Session) int) {
	for _, name := range rowtest.Families {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ss := runner.NewSession(sim.New(sim.Options{Workers: 1}))
			defer ss.Release()
			t.Logf("%d runs", test(t, name, rowtest.Family(t, name), ss))
		})
	}
}

// TestRowSpaceSizes logs the size of each row family's space at its model
// shape and keeps it tunable in one session: at most 1500 points
// (docs/kernels/rows.md, "Space sizes").
func TestRowSpaceSizes(t *testing.T) {
	for _, name := range rowtest.Families {
		f := rowtest.Family(t, name)
		for _, dt := range f.DTypes() {
			s := rowtest.Shape(t, f, rowtest.ModelShape[name], dt)
			sp := f.Space(s)
			n := len(simtest.Enumerate(f, s))
			if n == 0 || n > 1500 {
				t.Errorf("%s %s: %d points", name, s.Key(), n)
			}
			t.Logf("%s %s: %d of %d points", name, s.Key(), n, sp.Size())
		}
	}
}

// runtimeGroups are the kinds of variant TestRowRuntimeRows runs: per
// family, each row store, and for the norms each column-sum strategy with
// and without a dependent second launch.
func runtimeGroups(name string) []variants.Params {
	if name == "softmax_bwd" {
		return []variants.Params{{"store": "regs"}, {"store": "regs", "prefetch": "1"}, {"store": "reread"}, {"store": "smem"}}
	}
	var out []variants.Params
	for _, dg := range []string{"atomic", "partial", "ticket", "atomic1"} {
		out = append(out, variants.Params{"dgamma": dg, "pdl": "0"})
		if dg == "atomic" || dg == "partial" {
			out = append(out, variants.Params{"dgamma": dg, "pdl": "1"})
		}
	}
	return append(out, variants.Params{"store": "async"}, variants.Params{"store": "smem"}, variants.Params{"prefetch": "1"})
}

// TestRowRuntimeRows runs row programs emitted at one row count on the
// interpreter at awkward others: one row, fewer rows than a CTA holds,
// counts that leave the last CTA partly empty, and (rows of 6) 1999 rows,
// whose partial variants' finalize walks several rounds of eight partial
// rows per slice and a tail, with the last round of some slices ending
// within eight rows of the end (with 2, 4 or 8 rows per CTA). Validation checks every output and that the
// ticket and atomic1 counters, which wrap at the CTAs launched, are left
// zero.
func TestRowRuntimeRows(t *testing.T) {
	cases := []struct {
		emitAt string
		rows   []int
	}{
		{"m=40,n=200", []int{1, 5, 33, 77}},
		{"m=40,n=6", []int{2, 3, 1999}},
	}
	onInterpreter(t, func(t *testing.T, name string, f kernels.Family, ss *runner.Session) (runs int) {
		for i, c := range cases {
			dt := []dtype.DType{dtype.BF16, dtype.F32}[i]
			s := rowtest.Shape(t, f, c.emitAt, dt)
			var progs []rowtest.Variant
			for _, grp := range runtimeGroups(name) {
				pts := variants.Filter(simtest.Enumerate(f, s), grp)
				if len(pts) == 0 {
					t.Errorf("%s: no variant with %s", s.Key(), grp)
				}
				for _, p := range variants.Spread(pts, 2) {
					prog, err := f.Emit(s, p)
					if err != nil {
						t.Fatalf("%s %s: %v", s.Key(), p, err)
					}
					progs = append(progs, rowtest.Variant{Family: name, Shape: s, Params: p, Prog: prog})
				}
			}
			for _, m := range c.rows {
				o := rowtest.Shape(t, f, fmt.Sprintf("m=%d,n=%d", m, s.Get("n")), dt)
				if err := ss.Prepare(f, o, 1); err != nil {
					t.Fatalf("%s: %v", o.Key(), err)
				}
				ref := f.Reference(o, f.Inputs(o, 1))
				for _, v := range progs {
					runs++
					if msg := rowtest.RunProgram(ss, f, o, v.Prog, ref); msg != "" {
						t.Errorf("%s emitted at m=%d, run at m=%d: %s", v, s.Get("m"), m, msg)
					}
				}
			}
		}
		return runs
	})
}
