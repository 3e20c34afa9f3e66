package runner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/launch"
	"github.com/gradtune/gradtune/variants"
)

// Session holds one shape's buffers, inputs and reference on a backend,
// and validates programs against it. Inputs are uploaded and the reference
// computed once per (family, shape, seed).
//
// A family with exact inputs (kernels.Exacter) gets a second input set:
// its Input buffers again, filled with the exact inputs, and the
// reference on them rounded to each output buffer's dtype. Validate runs
// a program on both sets, the exact one held to zero tolerance; Run (what
// is timed) uses the random inputs.
type Session struct {
	be    Backend
	key   string
	fam   kernels.Family
	shape variants.Shape
	bufs  map[string]Ptr
	// pristine holds the random inputs' data of each InOut buffer, which
	// a run overwrites: copied back into the buffer before every
	// validation.
	pristine map[string]Ptr
	// symbolic are the family's buffers as it declares them; specs the
	// same resolved at the shape, in env (its dims and the device's
	// multiprocessor count "sms").
	symbolic []kernels.Buffer
	specs    []configs.BufferSpec
	env      configs.Env
	ref      map[string][]float64
	// exact is the exact input set, nil when the family has none here.
	exact   *exactSet
	scratch []byte
	// dev, when set, compares outputs on the device (CheckOnDevice).
	dev *devChecker
	// refs, when set, keeps references across processes (UseRefCache).
	refs *RefCache
}

// UseRefCache makes Prepare read references from c, and store there the
// ones it computes (see RefCache).
func (ss *Session) UseRefCache(c *RefCache) { ss.refs = c }

// NewSession returns a session on be with nothing prepared.
func NewSession(be Backend) *Session { return &Session{be: be} }

// Prepare makes the session hold shape s of family f with inputs from seed,
// reusing what it holds when nothing changed.
func (ss *Session) Prepare(f kernels.Family, s variants.Shape, seed uint64) error {
	key := fmt.Sprintf("%s/%s/%d", f.Name(), s.Key(), seed)
	if key == ss.key {
		return nil
	}
	ss.Release()
	exact := exactInputsAsync(f, s, seed)
	in := f.Inputs(s, seed)
	ss.fam, ss.shape = f, s
	ss.ref = ss.refs.reference(f, s, RandomInputs, seed, in)
	if err := ss.setBuffers(f.Buffers(s), kernels.Env(s)); err != nil {
		return fmt.Errorf("family %s at %s: %w", f.Name(), s.Key(), err)
	}
	ss.bufs = map[string]Ptr{}
	for _, b := range ss.specs {
		p, err := ss.be.Alloc(max(b.Bytes(), 16))
		if err != nil {
			return fmt.Errorf("allocating buffer %s (%d bytes): %w", b.Name, b.Bytes(), err)
		}
		ss.bufs[b.Name] = p
		if b.Role == kernels.Input {
			if err := ss.upload(b, p, in, ""); err != nil {
				return err
			}
		}
		if b.Role == kernels.InOut {
			if err := ss.keepPristine(b, in, ""); err != nil {
				return err
			}
		}
	}
	if ex := <-exact; ex.ok {
		if err := ss.prepareExact(ex.in, seed); err != nil {
			return err
		}
	}
	ss.key = key
	return nil
}

// exactInputs is a family's exact input set; ok is false when it has none
// at the shape.
type exactInputs struct {
	in map[string][]float64
	ok bool
}

// exactInputsAsync makes f's exact inputs at s (kernels.Exacter) beside
// the caller, which makes the random set and its reference meanwhile:
// generating inputs is serial, seconds at a large GEMM's shape. The
// channel holds the one answer, so a Prepare that fails before reading
// it leaves nothing blocked (the goroutine ends with the generation).
func exactInputsAsync(f kernels.Family, s variants.Shape, seed uint64) <-chan exactInputs {
	ch := make(chan exactInputs, 1)
	e, ok := f.(kernels.Exacter)
	if !ok {
		ch <- exactInputs{}
		return ch
	}
	go func() {
		in, ok := e.ExactInputs(s, seed)
		ch <- exactInputs{in, ok}
	}()
	return ch
}

// exactSet is a session's exact input set (kernels.Exacter): its Input
// buffers (the other buffers are the session's), the data of its InOut
// buffers (copied into the session's before each run on it) and the
// reference on them, rounded to each output buffer's dtype.
type exactSet struct {
	bufs     map[string]Ptr
	pristine map[string]Ptr
	ref      map[string][]float64
}

// prepareExact allocates and fills the exact set's Input buffers with in
// and computes its reference: the family's, rounded once to each Output
// and Accumulate buffer's dtype, as the program rounds its exact result.
func (ss *Session) prepareExact(in map[string][]float64, seed uint64) error {
	ex := &exactSet{bufs: map[string]Ptr{}, pristine: map[string]Ptr{}}
	ss.exact = ex
	for _, b := range ss.specs {
		if b.Role == kernels.InOut {
			p, err := ss.be.Alloc(max(b.Bytes(), 16))
			if err != nil {
				return fmt.Errorf("allocating the exact inputs' copy of %s (%d bytes): %w", b.Name, b.Bytes(), err)
			}
			ex.pristine[b.Name] = p
			if err := ss.upload(b, p, in, "exact "); err != nil {
				return err
			}
			continue
		}
		if b.Role != kernels.Input {
			continue
		}
		p, err := ss.be.Alloc(max(b.Bytes(), 16))
		if err != nil {
			return fmt.Errorf("allocating buffer %s of the exact inputs (%d bytes): %w", b.Name, b.Bytes(), err)
		}
		ex.bufs[b.Name] = p
		if err := ss.upload(b, p, in, "exact "); err != nil {
			return err
		}
	}
	ex.ref = ss.refs.reference(ss.fam, ss.shape, ExactInputs, seed, in)
	for _, b := range ss.specs {
		if writes(b.Role) {
			r := ex.ref[b.Name]
			for i, v := range r {
				r[i] = b.DType.Round(v)
			}
		}
	}
	return nil
}

// keepPristine uploads the data in gives InOut buffer b into the
// session's buffer and into a copy kept to restore it before each
// validation; what says which input set it is.
func (ss *Session) keepPristine(b configs.BufferSpec, in map[string][]float64, what string) error {
	p, err := ss.be.Alloc(max(b.Bytes(), 16))
	if err != nil {
		return fmt.Errorf("allocating the %scopy of %s (%d bytes): %w", what, b.Name, b.Bytes(), err)
	}
	if ss.pristine == nil {
		ss.pristine = map[string]Ptr{}
	}
	ss.pristine[b.Name] = p
	if err := ss.upload(b, p, in, what); err != nil {
		return err
	}
	return ss.upload(b, ss.bufs[b.Name], in, what)
}

// restore copies input set inputs' data into the InOut buffers, which
// the last run overwrote.
func (ss *Session) restore(inputs string) error {
	src := ss.pristine
	if inputs == ExactInputs {
		src = ss.exact.pristine
	}
	for _, b := range ss.specs {
		if b.Role == kernels.InOut {
			if err := copyDevice(ss.be, ss.bufs[b.Name], src[b.Name], b.Bytes()); err != nil {
				return fmt.Errorf("restoring %s: %w", b.Name, err)
			}
		}
	}
	return nil
}

// writes reports whether the launches write a buffer of role r that
// validation compares: output, accumulate and inout buffers.
func writes(r configs.Role) bool {
	return r == kernels.Output || r == kernels.Accumulate || r == kernels.InOut
}

// upload writes the data in gives input buffer b to p; what says which
// input set it is ("" or "exact ").
func (ss *Session) upload(b configs.BufferSpec, p Ptr, in map[string][]float64, what string) error {
	data, ok := in[b.Name]
	if !ok || len(data) != b.Elems {
		return fmt.Errorf("family %s gave no %sinput data for buffer %s", ss.fam.Name(), what, b.Name)
	}
	if err := ss.be.Upload(p, kernels.Encode(b.DType, data)); err != nil {
		return fmt.Errorf("uploading %s%s: %w", what, b.Name, err)
	}
	return nil
}

// setBuffers makes bufs, resolved in env and the device's multiprocessor
// count, the session's buffers.
func (ss *Session) setBuffers(bufs []kernels.Buffer, env configs.Env) error {
	env["sms"] = int64(ss.be.Device().SMs)
	plan, err := configs.Resolve(nil, bufs, env)
	if err != nil {
		return err
	}
	ss.symbolic, ss.specs, ss.env = bufs, plan.Buffers, env
	return nil
}

// Exact reports whether the session holds exact inputs (kernels.Exacter)
// beside the random ones, on which Validate runs programs too.
func (ss *Session) Exact() bool { return ss.exact != nil }

// CheckOnDevice makes Validate compare outputs with their references on
// the device (see devChecker), which downloads a few words instead of
// every output: what a GPU worker wants when outputs are megabytes.
// Outputs of a dtype the check kernels do not read are still compared
// here.
func (ss *Session) CheckOnDevice() error {
	if ss.dev != nil {
		return nil
	}
	dc, err := newDevChecker(ss.be)
	if err != nil {
		return err
	}
	ss.dev = dc
	return nil
}

// Release frees the session's buffers.
func (ss *Session) Release() {
	for _, p := range ss.bufs {
		ss.be.Free(p)
	}
	for _, p := range ss.pristine {
		ss.be.Free(p)
	}
	if ss.exact != nil {
		for _, p := range ss.exact.bufs {
			ss.be.Free(p)
		}
		for _, p := range ss.exact.pristine {
			ss.be.Free(p)
		}
	}
	if ss.dev != nil {
		ss.dev.release()
	}
	ss.bufs, ss.pristine, ss.ref, ss.exact, ss.specs, ss.symbolic, ss.key = nil, nil, nil, nil, nil, nil, ""
}

// Loaded is a compiled program ready to launch on the session's buffers
// and its own.
type Loaded struct {
	be      Backend
	own     []configs.BufferSpec // the program's State and Scratch buffers
	ownPtrs map[string]Ptr
	mod     Module
	plan    configs.Plan
	bound   *launch.Bound
	// exact is the program bound to the exact inputs' buffers (nil when
	// the session has none, and for a baseline).
	exact *launch.Bound
	// call, when set, is the whole run instead of launches: a baseline's
	// library call (LoadBaseline). checks, when set, are the only buffers
	// Validate compares.
	call   func() error
	checks []string
	// poisoned: a validation poisoned the Scratch buffers once.
	poisoned bool
	// Res is the resource use of the heaviest launch.
	Res Resources
}

// Unload frees the program's module and its own buffers.
func (l *Loaded) Unload() error {
	for _, p := range l.ownPtrs {
		l.be.Free(p)
	}
	l.ownPtrs = nil
	if l.mod == nil {
		return nil
	}
	return l.mod.Unload()
}

// Plan is the program's launches and buffers resolved at the session's
// shape.
func (l *Loaded) Plan() configs.Plan { return l.plan }

// allocOwn allocates the program's own buffers, State ones zeroed.
func (ss *Session) allocOwn(l *Loaded) error {
	l.ownPtrs = map[string]Ptr{}
	for _, b := range l.own {
		if b.Role != kernels.State && b.Role != kernels.Scratch {
			return fmt.Errorf("program buffer %s has role %v (a program declares State and Scratch buffers; data buffers are the family's)", b.Name, b.Role)
		}
		p, err := ss.be.Alloc(max(b.Bytes(), 16))
		if err != nil {
			return fmt.Errorf("allocating buffer %s (%d bytes): %w", b.Name, b.Bytes(), err)
		}
		l.ownPtrs[b.Name] = p
		if err := ss.be.Memset(p, 0, max(b.Bytes(), 16)); err != nil {
			return fmt.Errorf("zeroing buffer %s: %w", b.Name, err)
		}
	}
	return nil
}

// loadedMemory is the buffers a loaded program's launches see: its own
// and the session's, with the Input buffers of inputs (an input set's)
// in place of the session's when set.
type loadedMemory struct {
	ss     *Session
	l      *Loaded
	inputs map[string]Ptr
}

func (m loadedMemory) Buffer(name string) (uint64, int, bool) {
	if p, ok := m.l.ownPtrs[name]; ok {
		return uint64(p), allocated(m.l.own, name), true
	}
	if p, ok := m.inputs[name]; ok {
		return uint64(p), allocated(m.ss.specs, name), true
	}
	p, ok := m.ss.bufs[name]
	return uint64(p), allocated(m.ss.specs, name), ok
}

// allocated is the size of buffer name of specs, as allocated.
func allocated(specs []configs.BufferSpec, name string) int {
	for _, b := range specs {
		if b.Name == name {
			return max(b.Bytes(), 16)
		}
	}
	return 0
}

// Load compiles a program and binds its arguments to the session's buffers:
// buffer addresses, tensor maps encoded by the backend, scalars. It checks
// first, before compiling, what the program asks of the backend (see
// checkProgram).
func (ss *Session) Load(p kernels.Program) (*Loaded, error) { return ss.LoadCompiled(p, nil) }

// LoadCompiled is Load with the program's PTX already compiled into cubin
// (by a compile helper): a backend that implements CubinLoader loads the
// cubin without JIT; without one, or without a cubin, the PTX is
// compiled as Load does. Resources still come from the loaded functions.
func (ss *Session) LoadCompiled(p kernels.Program, cubin []byte) (*Loaded, error) {
	plan, err := ss.resolve(p)
	if err != nil {
		return nil, err
	}
	var mod Module
	if cl, ok := ss.be.(CubinLoader); ok && len(cubin) > 0 {
		mod, err = cl.LoadCubin(cubin)
	} else {
		mod, err = ss.be.Load(p.PTX)
	}
	if err != nil {
		return nil, err
	}
	l := &Loaded{be: ss.be, own: plan.Buffers[len(ss.specs):], mod: mod, plan: plan}
	if err := ss.allocOwn(l); err != nil {
		l.Unload()
		return nil, err
	}
	if err := ss.bind(l); err != nil {
		l.Unload()
		return nil, err
	}
	return l, nil
}

// resolve checks what p asks of the backend (checkProgram) and resolves
// its launches and buffers at the session's shape; the plan's buffers are
// the session's, then the program's own.
func (ss *Session) resolve(p kernels.Program) (configs.Plan, error) {
	if err := ss.checkProgram(p); err != nil {
		return configs.Plan{}, err
	}
	return configs.Resolve(p.Launches, append(slices.Clip(ss.symbolic), p.Buffers...), ss.env)
}

// bind looks up the function of each launch of l, sets the largest
// shared-memory carveout where the launch was built for several CTAs an
// SM, reads its resources (which opts it in to the launch's dynamic
// shared memory) and binds the arguments: to the session's buffers, and
// again to the exact inputs' when the session has them.
func (ss *Session) bind(l *Loaded) error {
	var funcs []any
	for i, ln := range l.plan.Launches {
		fn, err := l.mod.Function(ln.Entry)
		if err != nil {
			return err
		}
		if c, ok := fn.(CarveoutSetter); ok && ln.MaxCarveout {
			if err := c.PreferMaxShared(); err != nil {
				return fmt.Errorf("launch %s: %w", ln.Entry, err)
			}
		}
		res, err := fn.Resources(ln.Threads(), ln.SharedBytes)
		if err != nil {
			return err
		}
		if i == 0 || res.Registers > l.Res.Registers {
			l.Res = res
			l.Res.SharedBytes += ln.SharedBytes
		}
		funcs = append(funcs, fn)
	}
	b, err := launch.Bind(sessionDevice{ss.be}, l.plan, funcs, loadedMemory{ss: ss, l: l})
	if err != nil {
		return err
	}
	l.bound = b
	if ss.exact != nil {
		if l.exact, err = launch.Bind(sessionDevice{ss.be}, l.plan, funcs, loadedMemory{ss, l, ss.exact.bufs}); err != nil {
			return fmt.Errorf("binding to the exact inputs: %w", err)
		}
	}
	return nil
}

func errNoTensorMaps(be Backend) error {
	return fmt.Errorf("the %s backend cannot pass tensor maps (it does not implement runner.TensorMapEncoder)", be.Name())
}

// checkProgram rejects, before anything is compiled, a program that the
// backend cannot run: tensor-map arguments on a backend without
// TensorMapEncoder, clusters on a backend without ClusterLauncher.
// Everything else the launch contract checks (configs.Resolve).
func (ss *Session) checkProgram(p kernels.Program) error {
	_, encodes := ss.be.(TensorMapEncoder)
	_, clusters := ss.be.(ClusterLauncher)
	for _, ln := range p.Launches {
		for j, a := range ln.Args {
			if a.TensorMap != nil && !encodes {
				return fmt.Errorf("launch %s argument %d: %w", ln.Entry, j, errNoTensorMaps(ss.be))
			}
		}
		if ln.Cluster != [3]int{} && !clusters {
			return fmt.Errorf("launch %s asks for clusters %v, but the %s backend cannot launch clusters (it does not implement runner.ClusterLauncher)", ln.Entry, ln.Cluster, ss.be.Name())
		}
	}
	return nil
}

// Run enqueues one run of the program on the random inputs: zeroing of
// accumulate buffers, then every launch in order (package launch):
// dependent launches dependently where the backend can, launches with a
// cluster in clusters.
func (ss *Session) Run(l *Loaded) error { return ss.run(l, l.bound) }

// run is Run with the program bound as b (to one input set).
func (ss *Session) run(l *Loaded, b *launch.Bound) error {
	if err := ss.zeroAccumulators(); err != nil {
		return err
	}
	if l.call != nil {
		return l.call()
	}
	return b.Run(sessionDevice{ss.be})
}

// zeroAccumulators enqueues the zeroing of the accumulate buffers.
func (ss *Session) zeroAccumulators() error {
	for _, b := range ss.specs {
		if b.Role == kernels.Accumulate {
			if err := ss.be.Memset(ss.bufs[b.Name], 0, b.Bytes()); err != nil {
				return err
			}
		}
	}
	return nil
}

// sessionDevice is a backend as package launch sees it.
type sessionDevice struct{ be Backend }

func (d sessionDevice) Pointer(addr uint64) any { return Ptr(addr) }

// TensorMap encodes m over global, its buffer's address plus its offset
// (launch.Bind adds it).
func (d sessionDevice) TensorMap(m configs.TensorMapSpec, global uint64) (any, error) {
	enc, ok := d.be.(TensorMapEncoder)
	if !ok {
		return nil, errNoTensorMaps(d.be)
	}
	return enc.EncodeTensorMap(m, Ptr(global))
}

// Launch enqueues ln: in clusters when it has one, dependently when it
// asks for it and the backend can (else an error wrapping
// ErrNoDependentLaunch), plainly otherwise.
func (d sessionDevice) Launch(fn any, ln configs.LaunchSpec, args []any) error {
	f, ok := fn.(Function)
	if !ok {
		return fmt.Errorf("the %s backend was given a function %T", d.be.Name(), fn)
	}
	switch {
	case ln.Clustered():
		cl, ok := d.be.(ClusterLauncher)
		if !ok {
			return fmt.Errorf("the %s backend cannot launch clusters", d.be.Name())
		}
		return cl.LaunchCluster(f, ln.Grid, ln.Block, ln.Cluster, ln.SharedBytes, args)
	case ln.Dependent:
		dl, ok := d.be.(DependentLauncher)
		if !ok {
			return fmt.Errorf("the %s backend: %w", d.be.Name(), ErrNoDependentLaunch)
		}
		return dl.LaunchDependent(f, ln.Grid, ln.Block, ln.SharedBytes, args)
	}
	return d.be.Launch(f, ln.Grid, ln.Block, ln.SharedBytes, args)
}

// The input sets a session validates on (SetCheck.Inputs).
const (
	// RandomInputs are the family's Inputs, held to its Tolerance.
	RandomInputs = "random"
	// ExactInputs are a kernels.Exacter's, held to zero tolerance.
	ExactInputs = "exact"
)

// Check is the outcome of validating a program.
type Check struct {
	OK bool
	// Message says what failed, when not OK: the first element outside
	// tolerance (or the state left behind) of each input set that failed,
	// named by its set ("exact inputs: dx[7] = 3, want 4 (atol 0, rtol
	// 0)") when the session has two.
	Message string
	// MaxAbs and MaxRel are the largest errors on the random inputs.
	MaxAbs, MaxRel float64
	// Sets are the outcomes of each input set: the random inputs', then
	// the exact inputs' when the family has them at the shape and the
	// program is not a baseline (a vendor library's arithmetic is not
	// the family's to hold exact: cuBLASLt may reduce split-K partials in
	// the output type).
	Sets []SetCheck
}

// SetCheck is the outcome of validating a program on one input set.
type SetCheck struct {
	Inputs         string // RandomInputs or ExactInputs
	OK             bool
	Message        string // the first element outside tolerance, when not OK
	MaxAbs, MaxRel float64
}

// Validate runs the program once on each input set, on outputs poisoned
// with NaN (so an element the program never writes cannot pass), and
// compares each output and accumulate buffer (of a baseline: each buffer
// it writes) with the set's reference: the random inputs' under the
// family's tolerance, the exact inputs' (kernels.Exacter) with none. The
// exact set runs first, so the outputs hold the random inputs' results
// afterwards, as after Run. An error means a run itself failed.
func (ss *Session) Validate(l *Loaded) (Check, error) {
	return ss.ValidateOn(l, RandomInputs, ExactInputs)
}

// ValidateOn is Validate on the input sets named (RandomInputs,
// ExactInputs) alone: a test's sweep that alternates them halves its
// runs. A set the session or the program lacks is left out; the random
// inputs, when named, run last.
func (ss *Session) ValidateOn(l *Loaded, sets ...string) (Check, error) {
	var exact, random *SetCheck
	if l.exact != nil && slices.Contains(sets, ExactInputs) {
		sc, err := ss.validateSet(l, ExactInputs)
		if err != nil {
			return Check{}, fmt.Errorf("on the exact inputs: %w", err)
		}
		exact = &sc
	}
	if slices.Contains(sets, RandomInputs) || exact == nil {
		sc, err := ss.validateSet(l, RandomInputs)
		if err != nil {
			return Check{}, err
		}
		random = &sc
	}
	c := Check{OK: true}
	if random != nil {
		c.MaxAbs, c.MaxRel, c.Sets = random.MaxAbs, random.MaxRel, []SetCheck{*random}
	}
	if exact != nil {
		c.Sets = append(c.Sets, *exact)
	}
	var msgs []string
	for _, sc := range c.Sets {
		if sc.OK {
			continue
		}
		c.OK = false
		if ss.exact != nil {
			msgs = append(msgs, sc.Inputs+" inputs: "+sc.Message)
		} else {
			msgs = append(msgs, sc.Message)
		}
	}
	c.Message = strings.Join(msgs, "; ")
	return c, nil
}

// validateSet poisons the outputs, and before the program's first run
// its Scratch buffers (a run that reads scratch before it writes it reads
// NaN), runs l once on input set inputs and compares its outputs with
// the set's reference. Later validations leave scratch as the runs
// before them did: what a program left there is what its timed runs saw.
func (ss *Session) validateSet(l *Loaded, inputs string) (SetCheck, error) {
	for _, b := range ss.specs {
		if b.Role == kernels.Output {
			if err := ss.be.Memset(ss.bufs[b.Name], 0xff, b.Bytes()); err != nil {
				return SetCheck{}, err
			}
		}
	}
	for _, b := range l.own {
		if p, ok := l.ownPtrs[b.Name]; ok && b.Role == kernels.Scratch && !l.poisoned {
			if err := ss.be.Memset(p, 0xff, b.Bytes()); err != nil {
				return SetCheck{}, err
			}
		}
	}
	l.poisoned = true
	if err := ss.restore(inputs); err != nil {
		return SetCheck{}, err
	}
	b := l.bound
	if inputs == ExactInputs {
		b = l.exact
	}
	if err := ss.run(l, b); err != nil {
		return SetCheck{}, err
	}
	if err := ss.be.Sync(); err != nil {
		return SetCheck{}, err
	}
	c := SetCheck{Inputs: inputs, OK: true}
	for _, b := range ss.specs {
		if !l.checked(b) {
			continue
		}
		if err := ss.compareBuffer(b, inputs, &c); err != nil {
			return SetCheck{}, err
		}
	}
	if c.OK {
		c.OK, c.Message = ss.stateZero(l)
	}
	return c, nil
}

// checked reports whether Validate compares buffer b after a run of l:
// every output and accumulate buffer, or those of l.checks.
func (l *Loaded) checked(b configs.BufferSpec) bool {
	if !writes(b.Role) {
		return false
	}
	return l.checks == nil || slices.Contains(l.checks, b.Name)
}

// compareBuffer downloads buffer b and compares it with input set
// inputs' reference under its tolerance (the family's, or none for the
// exact inputs), adding the outcome to c.
func (ss *Session) compareBuffer(b configs.BufferSpec, inputs string, c *SetCheck) error {
	tol := ss.fam.Tolerance(ss.shape, b.Name)
	ref, key := ss.ref[b.Name], b.Name
	if inputs == ExactInputs {
		tol, ref, key = kernels.Tolerance{}, ss.exact.ref[b.Name], ExactInputs+"/"+b.Name
	}
	if ss.dev != nil {
		m, ok, err := ss.dev.check(key, b.DType, ss.bufs[b.Name], ref, tol)
		if err != nil {
			return err
		}
		if ok {
			c.add(b.Name, m, ref, tol)
			return nil
		}
	}
	if cap(ss.scratch) < b.Bytes() {
		ss.scratch = make([]byte, b.Bytes())
	}
	buf := ss.scratch[:b.Bytes()]
	if err := ss.be.Download(buf, ss.bufs[b.Name]); err != nil {
		return err
	}
	c.add(b.Name, compare(b.DType, buf, ref, tol), ref, tol)
	return nil
}

// add folds buffer name's comparison m into c.
func (c *SetCheck) add(name string, m mismatch, ref []float64, tol kernels.Tolerance) {
	c.MaxAbs = math.Max(c.MaxAbs, m.maxAbs)
	c.MaxRel = math.Max(c.MaxRel, m.maxRel)
	if m.bad >= 0 && c.OK {
		c.OK = false
		c.Message = fmt.Sprintf("%s[%d] = %g, want %g (atol %g, rtol %g)", name, m.bad, m.got, ref[m.bad], tol.Atol, tol.Rtol)
	}
}

// stateZero checks that the run left every State buffer of the program
// zero, as the next run expects it.
func (ss *Session) stateZero(l *Loaded) (bool, string) {
	for _, b := range l.own {
		if b.Role != kernels.State {
			continue
		}
		buf := make([]byte, b.Bytes())
		if err := ss.be.Download(buf, l.ownPtrs[b.Name]); err != nil {
			return false, fmt.Sprintf("reading state buffer %s: %v", b.Name, err)
		}
		for i, v := range buf {
			if v != 0 {
				return false, fmt.Sprintf("state buffer %s not left zero by the run (byte %d is %#x)", b.Name, i, v)
			}
		}
	}
	return true, ""
}

// Output downloads and decodes buffer name after a run (for comparisons
// between backends).
func (ss *Session) Output(name string) ([]float64, error) {
	for _, b := range ss.specs {
		if b.Name == name {
			buf := make([]byte, b.Bytes())
			if err := ss.be.Download(buf, ss.bufs[name]); err != nil {
				return nil, err
			}
			return b.DType.Decode(buf), nil
		}
	}
	return nil, fmt.Errorf("no buffer %q", name)
}
