package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gradtune/gradtune/runner"
)

// Device limits the interpreter enforces, those of an H200 (sm_90).
const (
	numSMs          = 132
	maxThreads      = 1024
	maxSharedPerCTA = 227 << 10 // opt-in maximum per block
	sharedPerSM     = 228 << 10
	regsPerSM       = 64 << 10
	threadsPerSM    = 2048
	ctasPerSM       = 32
	reservedSmem    = 1 << 10 // per CTA, by the driver
)

// Options configure a Backend.
type Options struct {
	// Workers is the number of goroutines that run the CTAs of a launch
	// (0: GOMAXPROCS). Results do not depend on it, except the order of
	// atomic operations of different CTAs on the same address.
	Workers int
	// NoRaceCheck turns off shared-memory race detection (on by default).
	NoRaceCheck bool
	// MaxSteps bounds the warp instructions one CTA may execute (0: 2^30),
	// so that an endless loop ends in ErrTimeout.
	MaxSteps int64
}

// Backend is the CPU interpreter behind runner.Backend. Launches run at
// once, on the calling goroutine and Workers helpers; an error while a
// kernel runs is kept and returned by the next Sync (as a GPU reports
// faults at synchronization), and later launches are skipped until then.
// Configuration errors are returned by Launch itself.
type Backend struct {
	opt     Options
	mem     *memory
	mu      sync.Mutex
	pending error
	insts   atomic.Uint64
}

var _ runner.Backend = (*Backend)(nil)

// New returns an interpreter backend with empty memory.
func New(opt Options) *Backend {
	return &Backend{opt: opt, mem: newMemory()}
}

// Name is "sim".
func (b *Backend) Name() string { return "sim" }

// Device describes the simulated device: an H200-sized part (132 SMs),
// so GridPerSM launches get the grid they get on the H200.
func (b *Backend) Device() runner.DeviceInfo {
	return runner.DeviceInfo{Name: "gradtune sim", UUID: "sim", CC: "9.0", Driver: "sim", SMs: numSMs,
		L2Bytes: 50 << 20, MemBytes: 141 << 30}
}

// ThreadInstructions returns the thread-instructions executed so far: the
// sum over executed warp instructions of the lanes that executed them.
func (b *Backend) ThreadInstructions() uint64 { return b.insts.Load() }

// Alloc allocates global memory: 256-aligned, never at address 0, with an
// unmapped gap after it. Fresh memory is zeroed.
func (b *Backend) Alloc(n int) (runner.Ptr, error) {
	p, err := b.mem.alloc(n)
	return runner.Ptr(p), err
}

// Free releases an allocation.
func (b *Backend) Free(p runner.Ptr) error { return b.mem.free(uint64(p)) }

// Upload copies src to device address dst.
func (b *Backend) Upload(dst runner.Ptr, src []byte) error {
	d, err := b.mem.rangeOf(uint64(dst), len(src))
	if err != nil {
		return err
	}
	copy(d, src)
	return nil
}

// Copy copies bytes of device memory from src to dst (after the launches
// before it: they have run).
func (b *Backend) Copy(dst, src runner.Ptr, bytes int) error {
	s, err := b.mem.rangeOf(uint64(src), bytes)
	if err != nil {
		return err
	}
	d, err := b.mem.rangeOf(uint64(dst), bytes)
	if err != nil {
		return err
	}
	copy(d, s)
	return nil
}

// Download copies device memory at src into dst.
func (b *Backend) Download(dst []byte, src runner.Ptr) error {
	s, err := b.mem.rangeOf(uint64(src), len(dst))
	if err != nil {
		return err
	}
	copy(dst, s)
	return nil
}

// Memset sets n bytes at p to v.
func (b *Backend) Memset(p runner.Ptr, v byte, n int) error {
	d, err := b.mem.rangeOf(uint64(p), n)
	if err != nil {
		return err
	}
	for i := range d {
		d[i] = v
	}
	return nil
}

// Sync returns (and clears) the first error of the launches since the last
// Sync.
func (b *Backend) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.pending
	b.pending = nil
	return err
}

// Load parses and decodes a PTX module.
func (b *Backend) Load(ptx string) (runner.Module, error) {
	m, err := Parse(ptx)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Function returns the kernel called entry.
func (m *Module) Function(entry string) (runner.Function, error) {
	k, ok := m.kernels[entry]
	if !ok {
		return nil, fmt.Errorf("%w: module has no kernel %q (kernels: %v)", ErrLaunch, entry, m.names)
	}
	return &Function{k: k}, nil
}

// Unload does nothing: a module holds no device resources.
func (m *Module) Unload() error { return nil }

// Function is a kernel of a loaded module.
type Function struct{ k *kernel }

// Name returns the kernel name.
func (f *Function) Name() string { return f.k.name }

// Resources reports the kernel's use under a simple model of an sm_90 SM:
//
//   - Registers: the declared virtual registers in 32-bit units (a 64-bit
//     register counts twice, predicates not at all), capped by .maxnreg
//     and 255. ptxas usually allocates far fewer: this is an upper bound.
//   - LocalBytes: the bytes of .local arrays per thread (there are no
//     spills without a register allocator).
//   - SharedBytes: static shared memory.
//   - Occupancy: resident threads over 2048, with CTAs per SM limited by
//     2048 threads, 64 warps, 32 CTAs, 64K registers allocated per warp in
//     units of 256, and 228 KiB of shared memory with 1 KiB reserved per CTA.
func (f *Function) Resources(threads, dynSmem int) (runner.Resources, error) {
	k := f.k
	if threads <= 0 || threads > maxThreads {
		return runner.Resources{}, fmt.Errorf("%w: %d threads per block (1..%d)", ErrLaunch, threads, maxThreads)
	}
	regs := max((k.regBits+31)/32, 1)
	if k.maxnreg > 0 {
		regs = min(regs, k.maxnreg)
	}
	regs = min(regs, 255)
	smem := k.staticSmem + dynSmem
	if smem > maxSharedPerCTA {
		return runner.Resources{}, fmt.Errorf("%w: %d bytes of shared memory per block (at most %d)", ErrLaunch, smem, maxSharedPerCTA)
	}
	warps := (threads + 31) / 32
	blocks := min(ctasPerSM, threadsPerSM/(warps*32))
	perWarp := (regs*32 + 255) / 256 * 256
	blocks = min(blocks, regsPerSM/perWarp/warps)
	blocks = min(blocks, sharedPerSM/(smem+reservedSmem))
	return runner.Resources{Registers: regs, LocalBytes: k.localBytes, SharedBytes: k.staticSmem,
		Occupancy: float64(blocks*threads) / threadsPerSM}, nil
}

// Launch runs fn over the grid. Arguments are runner.Ptr or uint64 values
// (also int, uint32, int32, float32 and float64, for tests), one per
// kernel parameter, truncated to the parameter's size.
func (b *Backend) Launch(fn runner.Function, grid, block [3]int, smem int, args []any) error {
	f, ok := fn.(*Function)
	if !ok {
		return fmt.Errorf("%w: sim backend given a foreign function %T", ErrLaunch, fn)
	}
	return b.launch(f, grid, block, [3]int{}, smem, args)
}

// LaunchCluster runs fn over the grid in thread-block clusters of shape
// cluster (sm_90): the CTAs of a cluster run together, share their
// shared memory through shared::cluster addresses, and meet at
// barrier.cluster. The cluster shape divides the grid; at most 16 CTAs.
func (b *Backend) LaunchCluster(fn runner.Function, grid, block, cluster [3]int, smem int, args []any) error {
	f, ok := fn.(*Function)
	if !ok {
		return fmt.Errorf("%w: sim backend given a foreign function %T", ErrLaunch, fn)
	}
	return b.launch(f, grid, block, cluster, smem, args)
}

var (
	_ runner.ClusterLauncher  = (*Backend)(nil)
	_ runner.TensorMapEncoder = (*Backend)(nil)
)

func (b *Backend) launch(f *Function, grid, block, cluster [3]int, smem int, args []any) error {
	l, err := b.prepare(f.k, grid, block, smem, args)
	if err != nil {
		return err
	}
	if err := l.setCluster(cluster); err != nil {
		return err
	}
	b.mu.Lock()
	skip := b.pending != nil
	b.mu.Unlock()
	if skip {
		return nil
	}
	if err := b.run(l); err != nil {
		b.mu.Lock()
		if b.pending == nil {
			b.pending = err
		}
		b.mu.Unlock()
	}
	return nil
}

func (b *Backend) prepare(k *kernel, grid, block [3]int, smem int, args []any) (*launchCtx, error) {
	for i := range grid {
		if grid[i] <= 0 || block[i] <= 0 {
			return nil, fmt.Errorf("%w: kernel %s: grid %v and block %v must be positive in every dimension", ErrLaunch, k.name, grid, block)
		}
	}
	if grid[0] >= 1<<31 || grid[1] > 65535 || grid[2] > 65535 {
		return nil, fmt.Errorf("%w: kernel %s: grid %v too large", ErrLaunch, k.name, grid)
	}
	threads := block[0] * block[1] * block[2]
	if threads > maxThreads || block[2] > 64 {
		return nil, fmt.Errorf("%w: kernel %s: block %v has %d threads (at most %d, z at most 64)", ErrLaunch, k.name, block, threads, maxThreads)
	}
	if k.reqntid != nil {
		want := [3]int{1, 1, 1}
		copy(want[:], k.reqntid)
		if want != block {
			return nil, fmt.Errorf("%w: kernel %s: .reqntid %v but launched with block %v", ErrLaunch, k.name, k.reqntid, block)
		}
	}
	if k.maxntid != nil {
		n := 1
		for _, d := range k.maxntid {
			n *= d
		}
		if threads > n {
			return nil, fmt.Errorf("%w: kernel %s: .maxntid %v but launched with %d threads", ErrLaunch, k.name, k.maxntid, threads)
		}
	}
	if smem < 0 || k.dynOff+smem > maxSharedPerCTA {
		return nil, fmt.Errorf("%w: kernel %s: %d bytes of static and %d of dynamic shared memory (at most %d in all)", ErrLaunch, k.name, k.staticSmem, smem, maxSharedPerCTA)
	}
	if len(args) != len(k.params) {
		return nil, fmt.Errorf("%w: kernel %s takes %d arguments, got %d", ErrLaunch, k.name, len(k.params), len(args))
	}
	params := make([]byte, k.paramBytes+8)
	for i, p := range k.params {
		var v uint64
		if tm, ok := args[i].(runner.TensorMapArg); ok {
			if p.size != len(tm) || p.off%64 != 0 {
				return nil, fmt.Errorf("%w: kernel %s: tensor map argument %d (%s) needs a 128-byte parameter aligned to 64 (.param .align 64 .b8 %s[128]), not %d bytes at offset %d",
					ErrLaunch, k.name, i, p.name, p.name, p.size, p.off)
			}
			copy(params[p.off:], tm[:])
			continue
		}
		switch a := args[i].(type) {
		case runner.Ptr:
			v = uint64(a)
		case uint64:
			v = a
		case int:
			v = uint64(a)
		case int64:
			v = uint64(a)
		case uint32:
			v = uint64(a)
		case int32:
			v = uint64(uint32(a))
		case float32:
			v = uint64(math.Float32bits(a))
		case float64:
			v = math.Float64bits(a)
		default:
			return nil, fmt.Errorf("%w: kernel %s: argument %d (%s) has type %T", ErrLaunch, k.name, i, p.name, a)
		}
		if p.size > 8 {
			return nil, fmt.Errorf("%w: kernel %s: parameter %s of %d bytes is not supported", ErrLaunch, k.name, p.name, p.size)
		}
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], v)
		copy(params[p.off:p.off+p.size], buf[:p.size])
	}
	ms := b.opt.MaxSteps
	if ms <= 0 {
		ms = 1 << 30
	}
	total := k.staticSmem
	if smem > 0 {
		total = k.dynOff + smem
	}
	return &launchCtx{k: k, grid: grid, block: block, nthreads: threads, nwarps: (threads + 31) / 32,
		smem: total, params: params, allocs: b.mem.snapshot(), mem: b.mem, race: !b.opt.NoRaceCheck, maxSteps: ms}, nil
}

// run executes every CTA. With several workers the CTAs run concurrently;
// the error reported is that of the lowest-numbered failing CTA, so it
// does not depend on scheduling.
func (b *Backend) run(l *launchCtx) error {
	n := l.grid[0] * l.grid[1] * l.grid[2] / l.csize
	workers := b.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	var next atomic.Int64
	var errIdx atomic.Int64
	errIdx.Store(math.MaxInt64)
	var mu sync.Mutex
	errs := map[int64]error{}
	work := func() {
		cl := newClusterRun(l)
		defer func() {
			for _, c := range cl.ctas {
				b.insts.Add(c.insts)
			}
		}()
		for {
			i := next.Add(1) - 1
			if i >= int64(n) || i > errIdx.Load() {
				return
			}
			cl.reset(int(i))
			if err := cl.run(); err != nil {
				mu.Lock()
				errs[i] = err
				mu.Unlock()
				for {
					old := errIdx.Load()
					if i >= old || errIdx.CompareAndSwap(old, i) {
						break
					}
				}
			}
		}
	}
	if workers <= 1 {
		work()
	} else {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work()
			}()
		}
		wg.Wait()
	}
	if i := errIdx.Load(); i != math.MaxInt64 {
		return errs[i]
	}
	return nil
}

// IsExecError reports whether err is a failure of a running kernel (as
// opposed to a launch that could not start).
func IsExecError(err error) bool {
	var e *ExecError
	return errors.As(err, &e)
}

// setCluster sets the launch's cluster shape: cluster, or the kernel's
// .reqnctapercluster, or one CTA.
func (l *launchCtx) setCluster(cluster [3]int) error {
	k := l.k
	if cluster == ([3]int{}) && len(k.reqncta) > 0 {
		cluster = [3]int{1, 1, 1}
		copy(cluster[:], k.reqncta)
	}
	if cluster == ([3]int{}) {
		cluster = [3]int{1, 1, 1}
	}
	if len(k.reqncta) > 0 {
		want := [3]int{1, 1, 1}
		copy(want[:], k.reqncta)
		if want != cluster {
			return fmt.Errorf("%w: kernel %s: .reqnctapercluster %v but launched with clusters of %v", ErrLaunch, k.name, k.reqncta, cluster)
		}
	}
	n := 1
	for i, c := range cluster {
		if c <= 0 || l.grid[i]%c != 0 {
			return fmt.Errorf("%w: kernel %s: cluster %v does not divide grid %v", ErrLaunch, k.name, cluster, l.grid)
		}
		n *= c
	}
	if n > 16 {
		return fmt.Errorf("%w: kernel %s: cluster %v has %d CTAs (at most 16)", ErrLaunch, k.name, cluster, n)
	}
	l.cluster, l.csize = cluster, n
	l.hopper = k.hopper || n > 1
	return nil
}
