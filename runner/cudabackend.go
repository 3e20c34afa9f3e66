package runner

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/launch"
	"github.com/gradtune/gradtune/runner/cuda"
)

// cudaBackend is the Backend of a real GPU: one context, one stream.
type cudaBackend struct {
	ctx    *cuda.Context
	stream *cuda.Stream
	info   DeviceInfo
	// maxShared is the most shared memory (static and dynamic) a block
	// may opt in to: 227 KiB on sm_90.
	maxShared int
	// blas is the cuBLAS handle of baselines, opened at the first GEMM;
	// blasErr why it could not be.
	blas    *cuda.BLAS
	blasErr error
	// lt is the cuBLASLt handle of best-of baselines, opened at the first
	// heuristic query; ltErr why it could not be.
	lt    *cuda.BLASLt
	ltErr error
}

func openCUDA(ordinal int) (*cudaBackend, error) {
	d, err := cuda.Open()
	if err != nil {
		return nil, err
	}
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("device %d does not exist (%d devices)", ordinal, n)
	}
	dev, err := d.Device(ordinal)
	if err != nil {
		return nil, err
	}
	ctx, err := d.Context(ordinal)
	if err != nil {
		return nil, err
	}
	st, err := ctx.NewStream()
	if err != nil {
		ctx.Close()
		return nil, err
	}
	return &cudaBackend{ctx: ctx, stream: st, info: DeviceInfo{Name: dev.Name, UUID: dev.UUID,
		CC: fmt.Sprintf("%d.%d", dev.Major, dev.Minor), Driver: strconv.Itoa(d.Version()),
		SMs: dev.SMs, L2Bytes: dev.L2Bytes, MemBytes: dev.TotalMem}, maxShared: dev.MaxSharedPerBlockOptin}, nil
}

func (b *cudaBackend) close() {
	b.blas.Close()
	b.lt.Close()
	b.stream.Destroy()
	b.ctx.Close()
}

func (b *cudaBackend) Name() string             { return "cuda" }
func (b *cudaBackend) Device() DeviceInfo       { return b.info }
func (b *cudaBackend) Alloc(n int) (Ptr, error) { p, err := b.ctx.Alloc(n); return Ptr(p), err }
func (b *cudaBackend) Free(p Ptr) error         { return b.ctx.Free(cuda.DevicePtr(p)) }
func (b *cudaBackend) Upload(dst Ptr, src []byte) error {
	return b.ctx.CopyHtoD(cuda.DevicePtr(dst), src)
}
func (b *cudaBackend) Download(dst []byte, src Ptr) error {
	if err := b.stream.Synchronize(); err != nil {
		return err
	}
	return b.ctx.CopyDtoH(dst, cuda.DevicePtr(src))
}
func (b *cudaBackend) Memset(p Ptr, v byte, n int) error {
	return b.ctx.MemsetD8Async(cuda.DevicePtr(p), v, n, b.stream)
}
func (b *cudaBackend) Sync() error { return b.stream.Synchronize() }

// Copy enqueues a device-to-device copy on the backend's stream.
func (b *cudaBackend) Copy(dst, src Ptr, n int) error {
	return b.ctx.CopyDtoDAsync(cuda.DevicePtr(dst), cuda.DevicePtr(src), n, b.stream)
}

func (b *cudaBackend) Load(ptx string) (Module, error) {
	m, _, err := b.ctx.LoadPTX(ptx, cuda.JITOptions{OptLevel: -1})
	if err != nil {
		return nil, err
	}
	return cudaModule{m, b.maxShared}, nil
}

// LoadCubin implements CubinLoader with cuModuleLoadData.
func (b *cudaBackend) LoadCubin(cubin []byte) (Module, error) {
	m, err := b.ctx.LoadImage(cubin)
	if err != nil {
		return nil, fmt.Errorf("loading a compiled cubin: %w", err)
	}
	return cudaModule{m, b.maxShared}, nil
}

func (b *cudaBackend) Launch(fn Function, grid, block [3]int, smem int, args []any) error {
	f, conv, err := cudaLaunchArgs(fn, args)
	if err != nil {
		return err
	}
	return b.ctx.Launch(f, grid, block, smem, b.stream, conv...)
}

// LaunchDependent implements DependentLauncher with cuLaunchKernelEx and
// programmatic stream serialization. On a driver without cuLaunchKernelEx
// the error wraps ErrNoDependentLaunch (and cuda.ErrNoLaunchKernelEx).
func (b *cudaBackend) LaunchDependent(fn Function, grid, block [3]int, smem int, args []any) error {
	f, conv, err := cudaLaunchArgs(fn, args)
	if err != nil {
		return err
	}
	err = b.ctx.LaunchDependent(f, grid, block, smem, b.stream, conv...)
	if errors.Is(err, cuda.ErrNoLaunchKernelEx) {
		return fmt.Errorf("%w: %w", ErrNoDependentLaunch, err)
	}
	return err
}

// LaunchCluster implements ClusterLauncher with cuLaunchKernelEx and the
// cluster dimension attribute.
func (b *cudaBackend) LaunchCluster(fn Function, grid, block, cluster [3]int, smem int, args []any) error {
	f, conv, err := cudaLaunchArgs(fn, args)
	if err != nil {
		return err
	}
	return b.ctx.LaunchEx(f, cuda.LaunchConfig{Grid: grid, Block: block, SharedBytes: smem, Cluster: cluster}, b.stream, conv...)
}

// EncodeTensorMap implements TensorMapEncoder with cuTensorMapEncodeTiled
// over global (the buffer's address plus m.Offset).
func (b *cudaBackend) EncodeTensorMap(m configs.TensorMapSpec, global Ptr) (TensorMapArg, error) {
	tm, err := b.ctx.Driver().EncodeTensorMapTiled(launch.CUDATensorMap(m, uint64(global)))
	if err != nil {
		return TensorMapArg{}, fmt.Errorf("tensor map of %s: %w", m.Buffer, err)
	}
	return TensorMapArg(tm), nil
}

// cudaLaunchArgs unwraps fn and converts the launch arguments for the cuda
// package: Ptr becomes cuda.DevicePtr, TensorMapArg cuda.TensorMap,
// everything else passes unchanged.
func cudaLaunchArgs(fn Function, args []any) (*cuda.Function, []any, error) {
	f, ok := fn.(cudaFunction)
	if !ok {
		return nil, nil, fmt.Errorf("cuda backend: foreign function %T", fn)
	}
	conv := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case Ptr:
			conv[i] = cuda.DevicePtr(v)
		case TensorMapArg:
			conv[i] = cuda.TensorMap(v)
		default:
			conv[i] = a
		}
	}
	return f.f, conv, nil
}

var (
	_ DependentLauncher = (*cudaBackend)(nil)
	_ ClusterLauncher   = (*cudaBackend)(nil)
	_ TensorMapEncoder  = (*cudaBackend)(nil)
)

type cudaModule struct {
	m         *cuda.Module
	maxShared int
}

func (m cudaModule) Unload() error { return m.m.Unload() }
func (m cudaModule) Function(name string) (Function, error) {
	f, err := m.m.Function(name)
	if err != nil {
		return nil, err
	}
	return cudaFunction{f, m.maxShared}, nil
}

type cudaFunction struct {
	f         *cuda.Function
	maxShared int
}

// PreferMaxShared asks for the largest shared-memory carveout
// (CarveoutSetter).
func (f cudaFunction) PreferMaxShared() error { return f.f.PreferMaxShared() }

// Resources reads the kernel's resources and opts it in to dynSmem bytes
// of dynamic shared memory when static and dynamic together are over the
// 48 KiB a launch gets without it (48 KiB of dynamic beside a static
// table fails with CUDA_ERROR_INVALID_VALUE otherwise); beyond the
// device's opt-in limit they are an error.
func (f cudaFunction) Resources(threads, dynSmem int) (Resources, error) {
	a, err := f.f.Attributes()
	if err != nil {
		return Resources{}, err
	}
	if f.maxShared > 0 && a.SharedBytes+dynSmem > f.maxShared {
		return Resources{}, fmt.Errorf("kernel %s: %d bytes of static and %d of dynamic shared memory exceed the %d bytes a block may use on this device",
			f.f.Name(), a.SharedBytes, dynSmem, f.maxShared)
	}
	if a.SharedBytes+dynSmem > 48<<10 {
		if err := f.f.SetMaxDynamicShared(dynSmem); err != nil {
			return Resources{}, err
		}
	}
	r := Resources{Registers: a.Registers, LocalBytes: a.LocalBytes, SharedBytes: a.SharedBytes}
	if blocks, err := f.f.MaxActiveBlocksPerSM(threads, dynSmem); err == nil {
		r.Occupancy = float64(blocks*threads) / 2048
	}
	return r, nil
}
