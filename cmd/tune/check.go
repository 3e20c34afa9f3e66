package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// timingFlags are tune's flags that only mean something when variants are
// timed on a GPU; check names them in its refusal.
var timingFlags = []string{"mode", "budget", "db", "device", "fresh", "strategy"}

// checkResult is the outcome of one variant on the interpreter.
type checkResult struct {
	kernel string
	shape  variants.Shape
	params string
	status string // ok, invalid, error, compile_error
	msg    string
	maxAbs float64
	maxRel float64
}

// cmdCheck validates variants on the CPU interpreter (runner/sim) against
// the family's float64 reference, through the same runner.Session that
// tune uses on a GPU. It never times anything.
func cmdCheck(args []string, stdout, stderr io.Writer) error {
	for _, a := range args {
		name := strings.TrimLeft(a, "-")
		name, _, _ = strings.Cut(name, "=")
		for _, f := range timingFlags {
			if strings.HasPrefix(a, "-") && name == f {
				return usagef("check validates on the CPU interpreter and never times: --%s does not apply (run tune on a GPU to time)", f)
			}
		}
	}
	fs := newFlags("check")
	kernelList := fs.String("kernel", "", "")
	shapes := fs.String("shapes", "", "")
	tokens := fs.Int("tokens", 0, "")
	dtypes := fs.String("dtype", "", "")
	sample := fs.Int("sample", 8, "")
	fixed := fs.String("params", "", "")
	seed := fs.Uint64("seed", 1, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *kernelList == "" {
		return usagef("check needs --kernel (kernels: %s, or all)", strings.Join(catalog.Names(), ", "))
	}
	if *shapes == "" {
		return usagef("check needs --shapes: a spec such as m=64,n=1001 (the interpreter runs about 10^8 thread-instructions per second per core, so keep shapes small) or a preset with --tokens")
	}
	if *sample < 0 {
		return usagef("--sample must be 0 (every variant) or more, got %d", *sample)
	}
	fix, err := variants.ParseParams(*fixed)
	if err != nil {
		return usagef("--params: %v", err)
	}
	list := *kernelList
	if strings.TrimSpace(list) == "all" && !variants.IsPreset(*shapes) {
		// With all kernels and explicit shape specs, check the families
		// that take those specs and say which were left out.
		list = acceptingFamilies(*shapes, stderr)
		if list == "" {
			return usagef("--shapes %s: no kernel takes it (see tune list for each kernel's dims)", *shapes)
		}
	}
	sel, err := resolve(list, *shapes, *tokens, *dtypes)
	if err != nil {
		return err
	}
	if err := checkFix(sel, fix); err != nil {
		return err
	}

	// One unit of work per (family, shape): its own backend and session,
	// so units run in parallel; CTAs of a launch share what cores are left.
	type unit struct {
		f      kernels.Family
		s      variants.Shape
		points []variants.Params
		out    []checkResult
	}
	var units []*unit
	for _, j := range sel.jobs {
		for _, s := range j.Shapes {
			u := &unit{f: j.Family, s: s, points: runner.Pick(runner.Filter(j.Family.Space(s).Enumerate(), fix), *sample)}
			if len(u.points) == 0 {
				u.out = []checkResult{{kernel: j.Family.Name(), shape: s, params: fix.String(), status: "error",
					msg: "no variant satisfies --params and the family's constraints"}}
			}
			units = append(units, u)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	workers := min(procs, len(units))
	ctaWorkers := max(1, procs/max(len(units), 1))
	next := make(chan *unit)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				u.out = append(u.out, checkShape(u.f, u.s, u.points, *seed, ctaWorkers)...)
			}
		}()
	}
	for _, u := range units {
		next <- u
	}
	close(next)
	wg.Wait()

	var all []checkResult
	for _, u := range units {
		all = append(all, u.out...)
	}
	printCheckTable(stdout, all)
	bad := 0
	counts := map[string]int{}
	for _, r := range all {
		counts[r.status]++
		if r.status != "ok" {
			bad++
		}
	}
	fmt.Fprintf(stdout, "%d variants on the interpreter: %d ok, %d invalid, %d errors, %d compile errors (correctness only: nothing was timed)\n",
		len(all), counts["ok"], counts["invalid"], counts["error"], counts["compile_error"])
	if bad > 0 {
		return fmt.Errorf("%d of %d variants failed on the interpreter", bad, len(all))
	}
	return nil
}

// acceptingFamilies returns, comma-separated, the families that accept
// every spec of shapes in at least one of their dtypes, and notes the
// others on w.
func acceptingFamilies(shapes string, w io.Writer) string {
	specs, err := variants.ParseSpecs(shapes)
	if err != nil {
		return "all" // resolve reports the malformed spec
	}
	var names []string
	for _, f := range catalog.All() {
		var why error
		for _, sp := range specs {
			ok := false
			for _, dt := range f.DTypes() {
				if sp.DType != dtype.Invalid && sp.DType != dt {
					continue
				}
				if _, err := f.Shape(sp, dt); err == nil {
					ok = true
					break
				} else if why == nil {
					why = err
				}
			}
			if !ok {
				if why == nil {
					why = fmt.Errorf("no dtype of %s matches", f.Name())
				}
				break
			}
			why = nil
		}
		if why != nil {
			fmt.Fprintf(w, "tune check: skipping %s: %v\n", f.Name(), why)
			continue
		}
		names = append(names, f.Name())
	}
	return strings.Join(names, ",")
}

// checkShape validates points of f at shape s on a fresh interpreter.
func checkShape(f kernels.Family, s variants.Shape, points []variants.Params, seed uint64, ctaWorkers int) []checkResult {
	ss := runner.NewSession(sim.New(sim.Options{Workers: ctaWorkers}))
	defer ss.Release()
	var out []checkResult
	res := func(p variants.Params) checkResult {
		return checkResult{kernel: f.Name(), shape: s, params: p.String()}
	}
	if err := ss.Prepare(f, s, seed); err != nil {
		r := res(variants.Params{})
		r.status, r.msg = "error", err.Error()
		return []checkResult{r}
	}
	for _, p := range points {
		r := res(p)
		prog, err := f.Emit(s, p)
		if err != nil {
			r.status, r.msg = "compile_error", "emit: "+err.Error()
			out = append(out, r)
			continue
		}
		l, err := ss.Load(prog)
		if err != nil {
			r.status, r.msg = "compile_error", err.Error()
			out = append(out, r)
			continue
		}
		c, err := ss.Validate(l)
		l.Unload()
		switch {
		case err != nil:
			r.status, r.msg = "error", err.Error()
			if errors.Is(err, sim.ErrParse) {
				r.status = "compile_error"
			}
		case !c.OK:
			r.status, r.msg, r.maxAbs, r.maxRel = "invalid", c.Message, c.MaxAbs, c.MaxRel
		default:
			r.status, r.maxAbs, r.maxRel = "ok", c.MaxAbs, c.MaxRel
		}
		out = append(out, r)
	}
	return out
}

func printCheckTable(w io.Writer, rs []checkResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tshape\tdtype\tparams\tstatus\tmax abs err\tmax rel err")
	for _, r := range rs {
		abs, rel := "-", "-"
		if r.status == "ok" || r.status == "invalid" {
			abs, rel = fmt.Sprintf("%.3g", r.maxAbs), fmt.Sprintf("%.3g", r.maxRel)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.kernel, r.shape.Size(), r.shape.DType, r.params, r.status, abs, rel)
	}
	tw.Flush()
	for _, r := range rs {
		if r.msg != "" {
			fmt.Fprintf(w, "%s %s %s: %s\n", r.kernel, r.shape.Key(), r.params, r.msg)
		}
	}
}
