package launch

import (
	"errors"
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/runner/cuda"
)

// CUDA is a Device on the CUDA driver: launches go to Stream (nil: the
// default stream) of Ctx.
type CUDA struct {
	Ctx    *cuda.Context
	Stream *cuda.Stream
}

// Pointer implements Device.
func (c CUDA) Pointer(addr uint64) any { return cuda.DevicePtr(addr) }

// tensorTypes maps element types to tensor map data types.
var tensorTypes = map[string]cuda.TensorDataType{
	"f16": cuda.TensorFloat16, "bf16": cuda.TensorBFloat16, "f32": cuda.TensorFloat32, "u8": cuda.TensorUInt8,
}

// TensorMap implements Device with cuTensorMapEncodeTiled.
func (c CUDA) TensorMap(m configs.TensorMapSpec, global uint64) (any, error) {
	tm, err := c.Ctx.Driver().EncodeTensorMapTiled(CUDATensorMap(m, global))
	if err != nil {
		return nil, fmt.Errorf("tensor map of %s: %w", m.Buffer, err)
	}
	return tm, nil
}

// CUDATensorMap is m as the driver binding takes it, over global: the
// address of the tensor's element (0, …, 0), its buffer's address plus
// m.Offset (m.Global), already added.
func CUDATensorMap(m configs.TensorMapSpec, global uint64) cuda.TensorMapSpec {
	s := cuda.TensorMapSpec{DataType: tensorTypes[m.DType.String()], Global: cuda.DevicePtr(global), Swizzle: m.Swizzle,
		Interleave: m.Interleave, L2Promotion: m.L2Promotion, OOBNaN: m.OOBFill == "nan"}
	for _, d := range m.Dims {
		s.Dims = append(s.Dims, uint64(d))
	}
	for _, st := range m.Strides {
		s.Strides = append(s.Strides, uint64(st))
	}
	for _, x := range m.Box {
		s.Box = append(s.Box, uint32(x))
	}
	for _, x := range m.ElemStrides {
		s.ElemStrides = append(s.ElemStrides, uint32(x))
	}
	return s
}

// Launch implements Device with cuLaunchKernel, or cuLaunchKernelEx for
// clusters and dependent launches.
func (c CUDA) Launch(fn any, l configs.LaunchSpec, args []any) error {
	f, ok := fn.(*cuda.Function)
	if !ok {
		return fmt.Errorf("launch: %T is not a CUDA function", fn)
	}
	cfg := cuda.LaunchConfig{Grid: l.Grid, Block: l.Block, SharedBytes: l.SharedBytes, Dependent: l.Dependent}
	if l.Clustered() {
		cfg.Cluster = l.Cluster
	}
	err := c.Ctx.LaunchEx(f, cfg, c.Stream, args...)
	if l.Dependent && !l.Clustered() && errors.Is(err, cuda.ErrNoLaunchKernelEx) {
		return fmt.Errorf("%w: %w", ErrNoDependentLaunch, err)
	}
	return err
}

// Functions looks up the entry of every launch of plan in mod, opts each
// in to its launch's dynamic shared memory and, for a launch built for
// several CTAs an SM, sets the largest shared-memory carveout.
func Functions(mod *cuda.Module, plan configs.Plan) ([]any, error) {
	var out []any
	for _, l := range plan.Launches {
		f, err := mod.Function(l.Entry)
		if err != nil {
			return nil, err
		}
		if l.OptIn {
			if err := f.SetMaxDynamicShared(l.SharedBytes); err != nil {
				return nil, fmt.Errorf("launch %s: %w", l.Entry, err)
			}
		}
		if l.MaxCarveout {
			if err := f.PreferMaxShared(); err != nil {
				return nil, fmt.Errorf("launch %s: %w", l.Entry, err)
			}
		}
		out = append(out, f)
	}
	return out, nil
}
