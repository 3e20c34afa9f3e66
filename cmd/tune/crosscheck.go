package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// Verdicts of a crosscheck case.
const (
	vIdentical = "identical" // every output bit-identical
	vWithin    = "within"    // not identical, within tolerance, and the math is not exactly rounded
	vDiffers   = "differs"   // exactly rounded math, within tolerance but not bit-identical
	vDisagree  = "disagree"  // one backend passes validation against the reference, the other fails
	vOutside   = "outside"   // outputs differ beyond the family's tolerance
	vError     = "error"     // a backend failed to run the case
)

func failedVerdict(v string) bool { return v != vIdentical && v != vWithin }

// openGPU opens the device crosscheck compares with; tests substitute
// the interpreter.
var openGPU = runner.OpenCUDA

// xcase is one (family, shape, variant) of a crosscheck.
type xcase struct {
	f       kernels.Family
	s       variants.Shape
	p       variants.Params
	prog    kernels.Program
	emitErr error
	inexact string // why the math is not exactly rounded ("" when it is)
	gpu     sideResult
	sim     sideResult
}

// sideResult is what one backend made of a case.
type sideResult struct {
	check runner.Check
	err   error
	outs  map[string][]float64
	ms    float64
}

var floatAtomicRE = regexp.MustCompile(`(?m)\b(atom|red)\.[^\s]*\.(f32|f64|f16|bf16|f16x2|bf16x2)\s`)

// inexactReason says why a program's results may legitimately differ
// between the GPU and the interpreter in the last bits, or "".
func inexactReason(ptx string) string {
	var r []string
	if strings.Contains(ptx, ".approx") {
		r = append(r, "approximate instructions")
	}
	if floatAtomicRE.MatchString(ptx) {
		r = append(r, "float atomics (order)")
	}
	if strings.Contains(ptx, "mma.sync") {
		r = append(r, "tensor-core sums")
	}
	return strings.Join(r, ", ")
}

// crossCases picks at least n cases spread over families, their dtypes,
// their small shapes (sim.SmallShapes) and their variants.
func crossCases(fams []kernels.Family, dts []dtype.DType, n int, seed uint64) []*xcase {
	var out []*xcase
	quota := (n + len(fams) - 1) / len(fams)
	for _, f := range fams {
		var shapes []variants.Shape
		for _, dt := range f.DTypes() {
			if dts != nil && !containsDType(dts, dt) {
				continue
			}
			shapes = append(shapes, sim.SmallShapes(f, dt)...)
		}
		if len(shapes) == 0 {
			continue
		}
		// Round robin over the shapes; the j-th pick of a shape walks its
		// space with a prime stride from a seed-dependent start, so picks
		// spread over the space and differ from shape to shape.
		spaces := make([][]variants.Params, len(shapes))
		seen := make([]map[int]bool, len(shapes))
		for i, s := range shapes {
			spaces[i] = f.Space(s).Enumerate()
			seen[i] = map[int]bool{}
		}
		taken := 0
		for j := 0; taken < quota; j++ {
			progress := false
			for i, s := range shapes {
				all := spaces[i]
				if taken == quota || j >= len(all) {
					continue
				}
				k := (int(seed%uint64(len(all))) + 7*i + j*7919) % len(all)
				for seen[i][k] {
					k = (k + 1) % len(all)
				}
				seen[i][k] = true
				c := &xcase{f: f, s: s, p: all[k]}
				c.prog, c.emitErr = f.Emit(s, all[k])
				if c.emitErr == nil {
					c.inexact = inexactReason(c.prog.PTX)
				}
				out = append(out, c)
				taken++
				progress = true
			}
			if !progress {
				break
			}
		}
	}
	return out
}

func containsDType(dts []dtype.DType, d dtype.DType) bool {
	for _, x := range dts {
		if x == d {
			return true
		}
	}
	return false
}

// runSide validates c's program on ss (prepared for c's shape) and keeps
// every output and accumulate buffer.
func runSide(ss *runner.Session, c *xcase, seed uint64) sideResult {
	start := time.Now()
	r := sideResult{}
	defer func() { r.ms = float64(time.Since(start).Microseconds()) / 1e3 }()
	if err := ss.Prepare(c.f, c.s, seed); err != nil {
		r.err = err
		return r
	}
	l, err := ss.Load(c.prog)
	if err != nil {
		r.err = err
		return r
	}
	defer l.Unload()
	r.check, r.err = ss.Validate(l)
	if r.err != nil {
		return r
	}
	r.outs = map[string][]float64{}
	for _, b := range c.f.Buffers(c.s) {
		if b.Role != kernels.Output && b.Role != kernels.Accumulate {
			continue
		}
		v, err := ss.Output(b.Name)
		if err != nil {
			r.err = err
			return r
		}
		r.outs[b.Name] = v
	}
	r.ms = float64(time.Since(start).Microseconds()) / 1e3
	return r
}

// bufferDiff compares one output buffer between the backends.
type bufferDiff struct {
	Name      string  `json:"name"`
	Elems     int     `json:"elems"`
	Identical int     `json:"identical"`
	MaxAbs    float64 `json:"max_abs_diff"`
	MaxRel    float64 `json:"max_rel_diff"`
	FirstDiff int     `json:"first_diff"`                  // -1 when identical
	GPU       string  `json:"gpu_at_first_diff,omitempty"` // %g: may be NaN
	Sim       string  `json:"sim_at_first_diff,omitempty"`
	OutsideAt int     `json:"outside_at"` // first element outside tolerance, -1 if none
}

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

// verdict compares a case's two sides.
func verdict(c *xcase) (string, []bufferDiff) {
	if c.emitErr != nil || c.gpu.err != nil || c.sim.err != nil {
		return vError, nil
	}
	v := vIdentical
	var diffs []bufferDiff
	names := make([]string, 0, len(c.gpu.outs))
	for n := range c.gpu.outs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		g, s := c.gpu.outs[name], c.sim.outs[name]
		d := bufferDiff{Name: name, Elems: len(g), FirstDiff: -1, OutsideAt: -1}
		for i := range g {
			if i < len(s) && sameBits(g[i], s[i]) {
				d.Identical++
			} else if d.FirstDiff < 0 {
				d.FirstDiff = i
				d.GPU = strconv.FormatFloat(g[i], 'g', -1, 64)
				if i < len(s) {
					d.Sim = strconv.FormatFloat(s[i], 'g', -1, 64)
				}
			}
		}
		d.MaxAbs, d.MaxRel, d.OutsideAt = c.f.Tolerance(c.s, name).Check(g, s)
		if math.IsInf(d.MaxAbs, 0) {
			d.MaxAbs = math.MaxFloat64 // JSON has no infinity
		}
		if math.IsInf(d.MaxRel, 0) {
			d.MaxRel = math.MaxFloat64
		}
		switch {
		case d.OutsideAt >= 0:
			v = vOutside
		case d.Identical != d.Elems && v == vIdentical:
			v = vWithin
			if c.inexact == "" {
				v = vDiffers
			}
		}
		diffs = append(diffs, d)
	}
	if v != vOutside && c.gpu.check.OK != c.sim.check.OK {
		v = vDisagree
	}
	return v, diffs
}

// caseRecord is one line of the JSON lines file.
type caseRecord struct {
	Kind     string       `json:"kind"` // "case" or "probe"
	Kernel   string       `json:"kernel,omitempty"`
	Shape    string       `json:"shape,omitempty"`
	Params   string       `json:"params,omitempty"`
	Probe    string       `json:"probe,omitempty"`
	Verdict  string       `json:"verdict"`
	Exact    bool         `json:"exactly_rounded"`
	Inexact  string       `json:"inexact_because,omitempty"`
	GPU      sideRecord   `json:"gpu"`
	Sim      sideRecord   `json:"sim"`
	Buffers  []bufferDiff `json:"buffers,omitempty"`
	EmitErr  string       `json:"emit_error,omitempty"`
	ProbeErr string       `json:"probe_error,omitempty"`
}

type sideRecord struct {
	Valid   bool    `json:"valid"`
	Message string  `json:"message,omitempty"`
	Error   string  `json:"error,omitempty"`
	MaxAbs  float64 `json:"max_abs_err"`
	MaxRel  float64 `json:"max_rel_err"`
	MS      float64 `json:"ms"`
}

func sideRec(r sideResult) sideRecord {
	s := sideRecord{Valid: r.err == nil && r.check.OK, Message: r.check.Message, MaxAbs: finite(r.check.MaxAbs), MaxRel: finite(r.check.MaxRel), MS: r.ms}
	if r.err != nil {
		s.Error = r.err.Error()
	}
	return s
}

func finite(x float64) float64 {
	if math.IsInf(x, 0) || x != x {
		return math.MaxFloat64
	}
	return x
}

// cmdCrosscheck runs cases on the GPU (in this process) and on the
// interpreter and compares every output element.
func cmdCrosscheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("crosscheck")
	kernelList := fs.String("kernel", "all", "")
	ncases := fs.Int("cases", 240, "")
	seed := fs.Uint64("seed", 1, "")
	dev := fs.Int("device", 0, "")
	outPath := fs.String("out", "", "")
	dtypes := fs.String("dtype", "", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *outPath == "" {
		return usagef("crosscheck needs --out FILE (JSON lines, one per case)")
	}
	if st, err := os.Stat(*outPath); err == nil && st.IsDir() {
		return usagef("--out %s is a directory", *outPath)
	}
	if *ncases <= 0 {
		return usagef("--cases must be positive, got %d", *ncases)
	}
	if *dev < 0 {
		return usagef("--device must be a GPU ordinal, got %d", *dev)
	}
	fams, err := catalog.ParseList(*kernelList)
	if err != nil {
		return usageError{err}
	}
	var dts []dtype.DType
	if *dtypes != "" {
		if dts, err = dtype.ParseList(*dtypes); err != nil {
			return usagef("--dtype: %v", err)
		}
	}
	cases := crossCases(fams, dts, *ncases, *seed)
	if len(cases) == 0 {
		return usagef("no case: no family accepts a small shape in the dtypes asked for")
	}
	probes, err := sim.Probes()
	if err != nil {
		return fmt.Errorf("building the probes: %w", err)
	}

	// The GPU, in this process, on this OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gpu, closeGPU, err := openGPU(*dev)
	if err != nil {
		return err
	}
	defer closeGPU()
	info := gpu.Device()
	fmt.Fprintf(stdout, "crosscheck: %d cases of %d families and %d probes on device %d (%s, %d SMs) and the interpreter\n",
		len(cases), len(fams), len(probes), *dev, info.Name, info.SMs)
	f, err := os.Create(*outPath)
	if err != nil {
		return err
	}
	defer f.Close()
	jw := bufio.NewWriter(f)
	enc := json.NewEncoder(jw)

	// The interpreter first, in a pool (one unit per shape): a case it
	// finds faulting (out of bounds, misaligned, ...) is not run on the GPU,
	// where the fault would spoil the context for the cases after it.
	start := time.Now()
	groups := map[string][]*xcase{}
	var keys []string
	for _, c := range cases {
		k := c.f.Name() + "/" + c.s.Key()
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	next := make(chan []*xcase, len(keys))
	for _, k := range keys {
		next <- groups[k]
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range next {
				ss := runner.NewSession(sim.New(sim.Options{Workers: 1}))
				for _, c := range g {
					if c.emitErr == nil {
						c.sim = runSide(ss, c, *seed)
					}
				}
				ss.Release()
			}
		}()
	}
	wg.Wait()
	simTime := time.Since(start)
	start = time.Now()
	gss := runner.NewSession(gpu)
	var sticky error
	done := 0
	for _, k := range keys {
		for _, c := range groups[k] {
			if done++; done%50 == 0 {
				fmt.Fprintf(stderr, "crosscheck: %d/%d cases on the GPU (%.0fs)\n", done, len(cases), time.Since(start).Seconds())
			}
			switch {
			case c.emitErr != nil:
			case sticky != nil:
				c.gpu.err = fmt.Errorf("not run: an earlier case left the CUDA context unusable: %w", sticky)
			case sim.IsExecError(c.sim.err):
				c.gpu.err = fmt.Errorf("not run on the GPU: the interpreter found %w", c.sim.err)
			default:
				c.gpu = runSide(gss, c, *seed)
				if c.gpu.err != nil && cuda.IsSticky(c.gpu.err) {
					sticky = c.gpu.err
				}
			}
		}
	}
	gss.Release()
	gpuTime := time.Since(start)

	type tally struct{ cases, identical, within, differs, disagree, outside, errors, exact, exactIdentical int }
	per := map[string]*tally{}
	var famNames []string
	failed := 0
	for _, c := range cases {
		v, diffs := verdict(c)
		t := per[c.f.Name()]
		if t == nil {
			t = &tally{}
			per[c.f.Name()] = t
			famNames = append(famNames, c.f.Name())
		}
		t.cases++
		switch v {
		case vIdentical:
			t.identical++
		case vWithin:
			t.within++
		case vDiffers:
			t.differs++
		case vDisagree:
			t.disagree++
		case vOutside:
			t.outside++
		default:
			t.errors++
		}
		if c.inexact == "" && c.emitErr == nil {
			t.exact++
			if v == vIdentical {
				t.exactIdentical++
			}
		}
		if failedVerdict(v) {
			failed++
		}
		rec := caseRecord{Kind: "case", Kernel: c.f.Name(), Shape: c.s.Key(), Params: c.p.String(), Verdict: v,
			Exact: c.inexact == "", Inexact: c.inexact, GPU: sideRec(c.gpu), Sim: sideRec(c.sim), Buffers: diffs}
		if c.emitErr != nil {
			rec.EmitErr = c.emitErr.Error()
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}

	// Probes: the tensor-core and cp.async layouts against the hardware.
	type probeRes struct {
		name, verdict, detail string
	}
	var pres []probeRes
	for _, p := range probes {
		rec := caseRecord{Kind: "probe", Probe: p.Name, Exact: p.Exact}
		t0 := time.Now()
		gout, gerr := p.Run(gpu)
		rec.GPU.MS = float64(time.Since(t0).Microseconds()) / 1e3
		t0 = time.Now()
		sout, serr := p.Run(sim.New(sim.Options{}))
		rec.Sim.MS = float64(time.Since(t0).Microseconds()) / 1e3
		v, detail := vIdentical, ""
		switch {
		case gerr != nil || serr != nil:
			v = vError
			if gerr != nil {
				rec.GPU.Error = gerr.Error()
			}
			if serr != nil {
				rec.Sim.Error = serr.Error()
			}
			detail = strings.TrimSpace(rec.GPU.Error + " " + rec.Sim.Error)
		default:
			gcheck, scheck := p.Check(gout), p.Check(sout)
			rec.GPU.Valid, rec.Sim.Valid = gcheck == nil, scheck == nil
			if gcheck != nil {
				rec.GPU.Message = gcheck.Error()
			}
			if scheck != nil {
				rec.Sim.Message = scheck.Error()
			}
			same := true
			for name, g := range gout {
				if string(g) != string(sout[name]) {
					same = false
				}
			}
			switch {
			case gcheck != nil || scheck != nil:
				v, detail = vOutside, strings.TrimSpace(rec.GPU.Message+" | "+rec.Sim.Message)
			case !same && p.Exact:
				v = vDiffers
			case !same:
				v = vWithin
			}
		}
		rec.Verdict = v
		if failedVerdict(v) {
			failed++
		}
		pres = append(pres, probeRes{p.Name, v, detail})
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	if err := jw.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tcases\tidentical\twithin tol\tdiffers\tdisagree\toutside tol\terrors\texact: identical/cases\t")
	var sum tally
	for _, n := range famNames {
		t := per[n]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t\n", n, t.cases, t.identical, t.within, t.differs, t.disagree, t.outside, t.errors, t.exactIdentical, t.exact)
		sum.cases += t.cases
		sum.identical += t.identical
		sum.within += t.within
		sum.differs += t.differs
		sum.disagree += t.disagree
		sum.outside += t.outside
		sum.errors += t.errors
		sum.exact += t.exact
		sum.exactIdentical += t.exactIdentical
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t\n", sum.cases, sum.identical, sum.within, sum.differs, sum.disagree, sum.outside, sum.errors, sum.exactIdentical, sum.exact)
	tw.Flush()
	fmt.Fprintln(stdout, "probes:")
	for _, p := range pres {
		line := fmt.Sprintf("  %-22s %s", p.name, p.verdict)
		if p.detail != "" {
			line += ": " + p.detail
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "interpreter %.1fs, GPU %.1fs; %s written\n", simTime.Seconds(), gpuTime.Seconds(), *outPath)
	if failed > 0 {
		return fmt.Errorf("%d cases or probes are not identical or within tolerance (see %s)", failed, *outPath)
	}
	return nil
}
