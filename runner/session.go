package runner

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// Session holds one shape's buffers, inputs and reference on a backend,
// and validates programs against it. Inputs are uploaded and the reference
// computed once per (family, shape, seed).
type Session struct {
	be      Backend
	key     string
	fam     kernels.Family
	shape   variants.Shape
	bufs    map[string]Ptr
	specs   []kernels.Buffer
	ref     map[string][]float64
	scratch []byte
	// dev, when set, compares outputs on the device (CheckOnDevice).
	dev *devChecker
	// plainOnly is set once the backend answered a dependent launch with
	// ErrNoDependentLaunch: later dependent launches go straight to Launch.
	plainOnly bool
}

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
	in := f.Inputs(s, seed)
	ss.fam, ss.shape = f, s
	ss.ref = f.Reference(s, in)
	ss.specs = f.Buffers(s)
	ss.bufs = map[string]Ptr{}
	for _, b := range ss.specs {
		p, err := ss.be.Alloc(max(b.Bytes(), 16))
		if err != nil {
			return fmt.Errorf("allocating buffer %s (%d bytes): %w", b.Name, b.Bytes(), err)
		}
		ss.bufs[b.Name] = p
		if b.Role == kernels.Input {
			data, ok := in[b.Name]
			if !ok || len(data) != b.Elems {
				return fmt.Errorf("family %s gave no input data for buffer %s", f.Name(), b.Name)
			}
			if err := ss.be.Upload(p, b.DType.Encode(data)); err != nil {
				return fmt.Errorf("uploading %s: %w", b.Name, err)
			}
		}
	}
	ss.key = key
	return nil
}

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
	if ss.dev != nil {
		ss.dev.release()
	}
	ss.bufs, ss.ref, ss.specs, ss.key = nil, nil, nil, ""
}

// Loaded is a compiled program ready to launch on the session's buffers
// and its own.
type Loaded struct {
	be       Backend
	own      []kernels.Buffer // the program's State and Scratch buffers
	ownPtrs  map[string]Ptr
	mod      Module
	funcs    []Function
	args     [][]any
	grids    [][3]int
	clusters [][3]int // 1, 1, 1 for launches without a cluster
	launches []kernels.Launch
	// call, when set, is the whole run instead of launches: a baseline's
	// library call (LoadBaseline). checks, when set, are the only buffers
	// Validate compares.
	call   func() error
	checks []string
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

// allocOwn allocates the program's own buffers, State ones zeroed.
func (ss *Session) allocOwn(l *Loaded) error {
	l.ownPtrs = map[string]Ptr{}
	for _, b := range l.own {
		if _, dup := ss.bufs[b.Name]; dup || l.ownPtrs[b.Name] != 0 {
			return fmt.Errorf("program buffer %s is declared twice", b.Name)
		}
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

// buffer is the address and size in bytes of buffer name: the program's
// own or the session's.
func (ss *Session) buffer(l *Loaded, name string) (Ptr, int, bool) {
	if p, ok := l.ownPtrs[name]; ok {
		return p, bufferBytes(l.own, name), true
	}
	p, ok := ss.bufs[name]
	return p, bufferBytes(ss.specs, name), ok
}

// bufferBytes is the size of buffer name of specs, as allocated.
func bufferBytes(specs []kernels.Buffer, name string) int {
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
	if err := ss.checkProgram(p); err != nil {
		return nil, err
	}
	var mod Module
	var err error
	if cl, ok := ss.be.(CubinLoader); ok && len(cubin) > 0 {
		mod, err = cl.LoadCubin(cubin)
	} else {
		mod, err = ss.be.Load(p.PTX)
	}
	if err != nil {
		return nil, err
	}
	l := &Loaded{be: ss.be, own: p.Buffers, mod: mod, launches: p.Launches}
	if err := ss.allocOwn(l); err != nil {
		l.Unload()
		return nil, err
	}
	for i, ln := range p.Launches {
		if err := ss.bindLaunch(l, i, ln); err != nil {
			l.Unload()
			return nil, err
		}
	}
	return l, nil
}

// bindLaunch adds launch i of l: its function, resources, arguments and
// grid.
func (ss *Session) bindLaunch(l *Loaded, i int, ln kernels.Launch) error {
	fn, err := l.mod.Function(ln.Entry)
	if err != nil {
		return err
	}
	threads := ln.Block[0] * max(ln.Block[1], 1) * max(ln.Block[2], 1)
	// Resources also opts the function in to ln's dynamic shared memory,
	// before any launch, clustered or not.
	res, err := fn.Resources(threads, ln.SharedBytes)
	if err != nil {
		return err
	}
	if i == 0 || res.Registers > l.Res.Registers {
		l.Res = res
		l.Res.SharedBytes += ln.SharedBytes
	}
	args, err := ss.bindArgs(l, ln)
	if err != nil {
		return err
	}
	grid, cluster := ss.launchGrid(ln)
	for d := range grid {
		if grid[d]%cluster[d] != 0 {
			return fmt.Errorf("launch %s: grid %v is not a multiple of its cluster %v", ln.Entry, grid, cluster)
		}
	}
	l.funcs = append(l.funcs, fn)
	l.args = append(l.args, args)
	l.grids = append(l.grids, grid)
	l.clusters = append(l.clusters, cluster)
	return nil
}

// launchGrid returns the grid and the cluster shape (1, 1, 1 without one)
// of ln, every dimension at least 1. GridPerSM makes a full-occupancy
// wave, but never more CTAs than Grid asks for (the extra ones would have
// no work), rounded down to whole clusters.
func (ss *Session) launchGrid(ln kernels.Launch) (grid, cluster [3]int) {
	grid = ln.Grid
	for d := range cluster {
		cluster[d] = max(ln.Cluster[d], 1)
	}
	if ln.GridPerSM > 0 {
		grid[0] = min(ln.GridPerSM*ss.be.Device().SMs, max(grid[0], 1))
		grid[0] = max(grid[0]/cluster[0], 1) * cluster[0]
	}
	for d := range grid {
		grid[d] = max(grid[d], 1)
	}
	return grid, cluster
}

// bindArgs resolves ln's arguments: buffer addresses, encoded tensor maps
// and scalars.
func (ss *Session) bindArgs(l *Loaded, ln kernels.Launch) ([]any, error) {
	args := make([]any, len(ln.Args))
	for j, a := range ln.Args {
		switch {
		case a.TensorMap != nil:
			m, err := ss.tensorMap(l, *a.TensorMap)
			if err != nil {
				return nil, fmt.Errorf("launch %s argument %d: %w", ln.Entry, j, err)
			}
			args[j] = m
		case a.Buffer != "":
			ptr, _, ok := ss.buffer(l, a.Buffer)
			if !ok {
				return nil, fmt.Errorf("launch %s names unknown buffer %q", ln.Entry, a.Buffer)
			}
			args[j] = ptr
		default:
			args[j] = a.Scalar
		}
	}
	return args, nil
}

// tensorMap checks m against its buffer and has the backend encode it.
func (ss *Session) tensorMap(l *Loaded, m kernels.TensorMap) (TensorMapArg, error) {
	enc, ok := ss.be.(TensorMapEncoder)
	if !ok {
		return TensorMapArg{}, errNoTensorMaps(ss.be)
	}
	ptr, bytes, ok := ss.buffer(l, m.Buffer)
	if !ok {
		return TensorMapArg{}, fmt.Errorf("tensor map of unknown buffer %q", m.Buffer)
	}
	if err := CheckTensorMap(m, ptr, bytes); err != nil {
		return TensorMapArg{}, err
	}
	return enc.EncodeTensorMap(m, ptr)
}

func errNoTensorMaps(be Backend) error {
	return fmt.Errorf("the %s backend cannot pass tensor maps (it does not implement runner.TensorMapEncoder)", be.Name())
}

// checkProgram rejects, before anything is compiled, a program that the
// backend cannot run or that breaks a launch rule: a first launch that is
// Dependent (it follows the zeroing of accumulate buffers and the L2
// flush, which it must not overlap); tensor-map arguments on a backend
// without TensorMapEncoder, or malformed ones; clusters on a backend
// without ClusterLauncher, or of more than 16 blocks.
func (ss *Session) checkProgram(p kernels.Program) error {
	if len(p.Launches) > 0 && p.Launches[0].Dependent {
		return fmt.Errorf("launch 0 (%s) is dependent, but the first launch of a program must not be: it follows the zeroing of accumulate buffers and the L2 flush", p.Launches[0].Entry)
	}
	_, encodes := ss.be.(TensorMapEncoder)
	_, clusters := ss.be.(ClusterLauncher)
	for _, ln := range p.Launches {
		for j, a := range ln.Args {
			if a.TensorMap == nil {
				continue
			}
			if !encodes {
				return fmt.Errorf("launch %s argument %d: %w", ln.Entry, j, errNoTensorMaps(ss.be))
			}
			if err := checkTensorMapShape(*a.TensorMap); err != nil {
				return fmt.Errorf("launch %s argument %d: tensor map of %s: %w", ln.Entry, j, a.TensorMap.Buffer, err)
			}
		}
		if ln.Cluster == [3]int{} {
			continue
		}
		if !clusters {
			return fmt.Errorf("launch %s asks for clusters %v, but the %s backend cannot launch clusters (it does not implement runner.ClusterLauncher)", ln.Entry, ln.Cluster, ss.be.Name())
		}
		if n := max(ln.Cluster[0], 1) * max(ln.Cluster[1], 1) * max(ln.Cluster[2], 1); n > maxClusterSize || slices.Min(ln.Cluster[:]) < 0 {
			return fmt.Errorf("launch %s: cluster %v has %d blocks; at most %d are possible (8 portably)", ln.Entry, ln.Cluster, n, maxClusterSize)
		}
	}
	return nil
}

// maxClusterSize is the most blocks a cluster may have (sm_90, with
// non-portable sizes allowed).
const maxClusterSize = 16

// Run enqueues one run of the program: zeroing of accumulate buffers, then
// every launch in order. Dependent launches use the backend's
// LaunchDependent when it implements DependentLauncher and can launch
// dependently, and plain Launch otherwise; launches with a cluster use
// the backend's LaunchCluster (and are not dependent).
func (ss *Session) Run(l *Loaded) error {
	if err := ss.zeroAccumulators(); err != nil {
		return err
	}
	if l.call != nil {
		return l.call()
	}
	for i, fn := range l.funcs {
		ln := l.launches[i]
		if err := ss.launch(fn, l.grids[i], l.clusters[i], ln, l.args[i]); err != nil {
			return fmt.Errorf("launching %s: %w", ln.Entry, err)
		}
	}
	return nil
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

// launch enqueues one launch of ln on grid: in clusters when ln has one,
// dependently when ln asks for it and the backend can.
func (ss *Session) launch(fn Function, grid, cluster [3]int, ln kernels.Launch, args []any) error {
	if ln.Cluster != [3]int{} {
		cl, ok := ss.be.(ClusterLauncher)
		if !ok {
			return fmt.Errorf("the %s backend cannot launch clusters", ss.be.Name())
		}
		return cl.LaunchCluster(fn, grid, ln.Block, cluster, ln.SharedBytes, args)
	}
	if dl, ok := ss.be.(DependentLauncher); ok && ln.Dependent && !ss.plainOnly {
		err := dl.LaunchDependent(fn, grid, ln.Block, ln.SharedBytes, args)
		if !errors.Is(err, ErrNoDependentLaunch) {
			return err
		}
		ss.plainOnly = true
	}
	return ss.be.Launch(fn, grid, ln.Block, ln.SharedBytes, args)
}

// Check is the outcome of validating a program.
type Check struct {
	OK             bool
	Message        string // the first element outside tolerance, when not OK
	MaxAbs, MaxRel float64
}

// Validate poisons every output with NaN (so an element the program never
// writes cannot pass), runs the program once, and compares each output and
// accumulate buffer (of a baseline: each buffer it writes) with the
// reference under the family's tolerance. An error means the run itself
// failed.
func (ss *Session) Validate(l *Loaded) (Check, error) {
	for _, b := range ss.specs {
		if b.Role == kernels.Output {
			if err := ss.be.Memset(ss.bufs[b.Name], 0xff, b.Bytes()); err != nil {
				return Check{}, err
			}
		}
	}
	if err := ss.Run(l); err != nil {
		return Check{}, err
	}
	if err := ss.be.Sync(); err != nil {
		return Check{}, err
	}
	c := Check{OK: true}
	for _, b := range ss.specs {
		if !l.checked(b) {
			continue
		}
		if err := ss.compareBuffer(b, &c); err != nil {
			return Check{}, err
		}
	}
	if c.OK {
		c.OK, c.Message = ss.stateZero(l)
	}
	return c, nil
}

// checked reports whether Validate compares buffer b after a run of l:
// every output and accumulate buffer, or those of l.checks.
func (l *Loaded) checked(b kernels.Buffer) bool {
	if b.Role != kernels.Output && b.Role != kernels.Accumulate {
		return false
	}
	return l.checks == nil || slices.Contains(l.checks, b.Name)
}

// compareBuffer downloads buffer b and compares it with the reference
// under the family's tolerance, adding the outcome to c.
func (ss *Session) compareBuffer(b kernels.Buffer, c *Check) error {
	tol := ss.fam.Tolerance(ss.shape, b.Name)
	ref := ss.ref[b.Name]
	if ss.dev != nil {
		m, ok, err := ss.dev.check(b.Name, b.DType, ss.bufs[b.Name], ref, tol)
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
func (c *Check) add(name string, m mismatch, ref []float64, tol kernels.Tolerance) {
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
