package tuning

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// CheckOptions configure Check.
type CheckOptions struct {
	Sample int    // variants per shape, spread evenly over the valid ones; 0: all
	Seed   uint64 // input data seed
	// Memory bounds the InterpreterBytes of the shapes checked side by
	// side; a shape larger than it still runs, alone (CheckHost refuses
	// those first).
	Memory Limit
	Procs  int // goroutines in all; 0: GOMAXPROCS
}

// CheckResult is one variant on the interpreter, or a shape that could not
// be prepared (Params empty).
type CheckResult struct {
	Kernel         string
	Shape          variants.Shape
	Params         string
	Status         eval.Status // ok, invalid, compile_error, or launch_error for a run that failed
	Message        string
	MaxAbs, MaxRel float64
	// Bound is the tolerance the outputs were held to: ToleranceText's,
	// then "; exact inputs: 0" where the family's exact inputs
	// (kernels.Exacter) were validated too, with none.
	Bound string
}

// ToleranceText is the bound f's validation holds its outputs to at s on
// its random inputs:
// "|err| ≤ atol + rtol·|ref|" element by element, once when every output
// buffer has the same tolerance, else per buffer ("dx: …; dgamma: …").
func ToleranceText(f kernels.Family, s variants.Shape) string {
	var parts []string
	var texts []string
	for _, b := range f.Buffers(s) {
		if b.Role != kernels.Output && b.Role != kernels.Accumulate && b.Role != kernels.InOut {
			continue
		}
		t := f.Tolerance(s, b.Name)
		text := fmt.Sprintf("%.3g + %.3g·|ref|", t.Atol, t.Rtol)
		parts = append(parts, b.Name+": "+text)
		if !slices.Contains(texts, text) {
			texts = append(texts, text)
		}
	}
	if len(texts) == 1 {
		return texts[0]
	}
	return strings.Join(parts, "; ")
}

// checkUnit is one (family, shape) with its sampled points.
type checkUnit struct {
	fs     FamilyShape
	points []variants.Params
	need   uint64
	out    []CheckResult
}

// Check validates sampled variants of every shape of sel on the
// interpreter against the family's float64 reference, through the same
// runner.Session a GPU worker uses. It never times anything. Shapes run in
// parallel, each on its own interpreter, as far as opt.Memory allows; the
// CTAs of a launch share the remaining goroutines. A panic while checking
// a shape becomes a launch_error result that says "internal error" and
// carries the stack.
func Check(sel Selection, opt CheckOptions) []CheckResult {
	var units []*checkUnit
	for _, fs := range sel.Shapes() {
		pts := variants.Spread(variants.Filter(fs.F.Space(fs.S).Enumerate(), sel.Fix), opt.Sample)
		units = append(units, &checkUnit{fs: fs, points: pts, need: InterpreterBytes(fs.F, fs.S)})
	}
	procs := opt.Procs
	if procs <= 0 {
		procs = runtime.GOMAXPROCS(0)
	}
	ctaWorkers := max(1, procs/max(len(units), 1))
	mem := newBudget(opt.Memory.Bytes)
	next := make(chan *checkUnit)
	var wg sync.WaitGroup
	for w := 0; w < min(procs, len(units)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				mem.acquire(u.need)
				u.out = checkUnitSafely(u, opt.Seed, ctaWorkers)
				mem.release(u.need)
			}
		}()
	}
	for _, u := range units {
		next <- u
	}
	close(next)
	wg.Wait()
	var all []CheckResult
	for _, u := range units {
		all = append(all, u.out...)
	}
	return all
}

// checkUnitSafely runs checkShape and turns a panic into a result.
func checkUnitSafely(u *checkUnit, seed uint64, ctaWorkers int) (out []CheckResult) {
	defer func() {
		if r := recover(); r != nil {
			out = append(out, CheckResult{Kernel: u.fs.F.Name(), Shape: u.fs.S, Status: eval.LaunchError,
				Message: fmt.Sprintf("internal error: %v\n%s", r, debug.Stack())})
		}
	}()
	return checkShape(u.fs.F, u.fs.S, u.points, seed, ctaWorkers)
}

// checkShape validates points of f at shape s on a fresh interpreter.
func checkShape(f kernels.Family, s variants.Shape, points []variants.Params, seed uint64, ctaWorkers int) []CheckResult {
	ss := runner.NewSession(sim.New(sim.Options{Workers: ctaWorkers}))
	defer ss.Release()
	if err := ss.Prepare(f, s, seed); err != nil {
		return []CheckResult{{Kernel: f.Name(), Shape: s, Status: eval.LaunchError, Message: err.Error()}}
	}
	var out []CheckResult
	bound := ToleranceText(f, s)
	if ss.Exact() {
		bound += "; exact inputs: 0"
	}
	for _, p := range points {
		r := checkPoint(ss, f, s, p)
		r.Bound = bound
		out = append(out, r)
	}
	return out
}

// checkPoint emits, loads and validates one variant on ss.
func checkPoint(ss *runner.Session, f kernels.Family, s variants.Shape, p variants.Params) CheckResult {
	r := CheckResult{Kernel: f.Name(), Shape: s, Params: p.String()}
	prog, err := f.Emit(s, p)
	if err != nil {
		r.Status, r.Message = eval.CompileError, "emit: "+err.Error()
		return r
	}
	l, err := ss.Load(prog)
	if err != nil {
		r.Status, r.Message = eval.CompileError, err.Error()
		return r
	}
	defer l.Unload()
	c, err := ss.Validate(l)
	switch {
	case errors.Is(err, sim.ErrParse):
		r.Status, r.Message = eval.CompileError, err.Error()
	case err != nil:
		r.Status, r.Message = eval.LaunchError, err.Error()
	case !c.OK:
		r.Status, r.Message, r.MaxAbs, r.MaxRel = eval.Invalid, c.Message, c.MaxAbs, c.MaxRel
	default:
		r.Status, r.MaxAbs, r.MaxRel = eval.OK, c.MaxAbs, c.MaxRel
	}
	return r
}

// budget admits work while the memory it needs fits in total (0: no
// bound); one piece of work always runs, whatever it needs.
type budget struct {
	mu         sync.Mutex
	cond       *sync.Cond
	total, use uint64
	busy       int
}

func newBudget(total uint64) *budget {
	b := &budget{total: total}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *budget) acquire(n uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.busy > 0 && b.total > 0 && b.use+n > b.total {
		b.cond.Wait()
	}
	b.use += n
	b.busy++
}

func (b *budget) release(n uint64) {
	b.mu.Lock()
	b.use -= n
	b.busy--
	b.mu.Unlock()
	b.cond.Broadcast()
}
