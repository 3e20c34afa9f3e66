package configs

import (
	"errors"
	"fmt"
	"math"
)

// Plan is a program's buffers and launches resolved at one shape: every
// expression evaluated, every check made that needs no device.
type Plan struct {
	Buffers  []BufferSpec
	Launches []LaunchSpec
}

// Buffer is the plan's buffer name.
func (p Plan) Buffer(name string) (BufferSpec, bool) {
	for _, b := range p.Buffers {
		if b.Name == name {
			return b, true
		}
	}
	return BufferSpec{}, false
}

// BufferSpec is a Buffer resolved at one shape.
type BufferSpec struct {
	Name  string
	DType DType
	Elems int
	Role  Role
}

// Bytes is the buffer's size.
func (b BufferSpec) Bytes() int { return b.Elems * b.DType.Size() }

// LaunchSpec is a Launch resolved at one shape. Grid is what to launch:
// the GridPerSM cap and the rounding to clusters already applied, every
// dimension at least 1; Cluster is {1, 1, 1} without clusters.
type LaunchSpec struct {
	Entry       string
	Grid        [3]int
	Block       [3]int
	Cluster     [3]int
	SharedBytes int
	OptIn       bool
	MaxCarveout bool // set the largest shared-memory carveout first (Launch.MaxCarveout)
	Dependent   bool
	Args        []ArgSpec
}

// Clustered reports whether the launch needs cluster dimensions.
func (l LaunchSpec) Clustered() bool { return l.Cluster != [3]int{1, 1, 1} }

// Threads is the CTA's thread count.
func (l LaunchSpec) Threads() int { return l.Block[0] * l.Block[1] * l.Block[2] }

// ArgSpec is an Arg resolved at one shape.
type ArgSpec struct {
	Kind      ArgKind
	Buffer    string // pointer arguments
	Offset    int64  // bytes, pointer arguments
	TensorMap *TensorMapSpec
	Type      ScalarType // scalar arguments
	Scalar    uint64
}

// Value is the scalar as the Go type of its PTX type (uint32 or uint64).
func (a ArgSpec) Value() any {
	if a.Type == U32 {
		return uint32(a.Scalar)
	}
	return a.Scalar
}

// ErrBadProgram is returned (wrapped) by Resolve for launches and buffers
// that cannot be launched as described.
var ErrBadProgram = errors.New("program cannot be launched as described")

// Resolve evaluates launches and buffers in env (the shape's dims, and
// "sms" when a launch uses GridPerSM) and checks them: buffer names
// unique with known roles; blocks of 1 to 1024 threads; grids a multiple
// of their clusters of at most 16 CTAs; the first launch not dependent;
// a launch whose When is 0 or less left out (the plan's first launch is
// then not dependent either);
// every argument naming a known buffer, offsets and tensors inside their
// buffers (a tensor map's from its offset to its last byte), tensor maps
// that cuTensorMapEncodeTiled accepts, scalars that fit their type.
func Resolve(launches []Launch, buffers []Buffer, env Env) (Plan, error) {
	var p Plan
	bufs := map[string]BufferSpec{}
	for _, b := range buffers {
		bs, err := resolveBuffer(b, env)
		if err != nil {
			return Plan{}, fmt.Errorf("%w: %w", ErrBadProgram, err)
		}
		if _, dup := bufs[b.Name]; dup {
			return Plan{}, fmt.Errorf("%w: buffer %s is declared twice", ErrBadProgram, b.Name)
		}
		bufs[b.Name] = bs
		p.Buffers = append(p.Buffers, bs)
	}
	for i, l := range launches {
		if i == 0 && l.Dependent {
			return Plan{}, fmt.Errorf("%w: launch 0 (%s) is dependent, but the first launch of a program must not be", ErrBadProgram, l.Entry)
		}
		if l.When != nil {
			v, err := l.When.Eval(env)
			if err != nil {
				return Plan{}, fmt.Errorf("%w: launch %d (%s): when: %w", ErrBadProgram, i, l.Entry, err)
			}
			if v <= 0 {
				continue
			}
		}
		ls, err := resolveLaunch(l, bufs, env)
		if err != nil {
			return Plan{}, fmt.Errorf("%w: launch %d (%s): %w", ErrBadProgram, i, l.Entry, err)
		}
		p.Launches = append(p.Launches, ls)
	}
	if len(p.Launches) > 0 { // what comes first in the plan waits for nothing of it
		p.Launches[0].Dependent = false
	}
	return p, nil
}

func resolveBuffer(b Buffer, env Env) (BufferSpec, error) {
	if b.Name == "" {
		return BufferSpec{}, errors.New("a buffer has no name")
	}
	if err := b.Role.check(); err != nil {
		return BufferSpec{}, fmt.Errorf("buffer %s: %w", b.Name, err)
	}
	if b.DType.Size() == 0 {
		return BufferSpec{}, fmt.Errorf("buffer %s: dtype %v", b.Name, b.DType)
	}
	n, err := b.Elems.EvalInt(env)
	if err != nil {
		return BufferSpec{}, fmt.Errorf("buffer %s: elements: %w", b.Name, err)
	}
	return BufferSpec{Name: b.Name, DType: b.DType, Elems: n, Role: b.Role}, nil
}

func resolveLaunch(l Launch, bufs map[string]BufferSpec, env Env) (LaunchSpec, error) {
	if l.Entry == "" {
		return LaunchSpec{}, errors.New("no entry name")
	}
	s := LaunchSpec{Entry: l.Entry, Block: l.Block, SharedBytes: l.SharedBytes, OptIn: l.OptIn(), MaxCarveout: l.MaxCarveout(), Dependent: l.Dependent}
	for d := range 3 {
		s.Block[d] = max(s.Block[d], 1)
		s.Cluster[d] = max(l.Cluster[d], 1)
	}
	if t := s.Threads(); t > 1024 || l.Block[0] < 1 {
		return LaunchSpec{}, fmt.Errorf("block %v: want 1 to 1024 threads", l.Block)
	}
	if n := s.Cluster[0] * s.Cluster[1] * s.Cluster[2]; n > 16 {
		return LaunchSpec{}, fmt.Errorf("cluster %v: %d CTAs, at most 16", l.Cluster, n)
	}
	if l.SharedBytes < 0 {
		return LaunchSpec{}, fmt.Errorf("shared memory %d bytes", l.SharedBytes)
	}
	if l.CTAsPerSM < 0 {
		return LaunchSpec{}, fmt.Errorf("ctas_per_sm %d: want 0 (the driver's choice) or more", l.CTAsPerSM)
	}
	for d, e := range l.Grid {
		v, err := e.EvalInt(env)
		if err != nil {
			return LaunchSpec{}, fmt.Errorf("grid[%d]: %w", d, err)
		}
		s.Grid[d] = v
	}
	if l.GridPerSM > 0 {
		sms, ok := env["sms"]
		if !ok {
			return LaunchSpec{}, errors.New(`grid_per_sm needs the device's multiprocessor count ("sms")`)
		}
		s.Grid[0] = min(l.GridPerSM*int(sms), max(s.Grid[0], 1))
		s.Grid[0] = max(s.Grid[0]/s.Cluster[0], 1) * s.Cluster[0]
	}
	for d := range s.Grid {
		s.Grid[d] = max(s.Grid[d], 1)
		if s.Grid[d]%s.Cluster[d] != 0 {
			return LaunchSpec{}, fmt.Errorf("grid %v is not a multiple of its cluster %v", s.Grid, s.Cluster)
		}
	}
	for j, a := range l.Args {
		as, err := resolveArg(a, bufs, env)
		if err != nil {
			return LaunchSpec{}, fmt.Errorf("argument %d: %w", j, err)
		}
		s.Args = append(s.Args, as)
	}
	return s, nil
}

func resolveArg(a Arg, bufs map[string]BufferSpec, env Env) (ArgSpec, error) {
	s := ArgSpec{Kind: a.Kind()}
	switch s.Kind {
	case PointerArg:
		b, ok := bufs[a.Buffer]
		if !ok {
			return ArgSpec{}, fmt.Errorf("unknown buffer %q", a.Buffer)
		}
		off, err := a.Offset.EvalInt(env)
		if err != nil {
			return ArgSpec{}, fmt.Errorf("offset into %s: %w", a.Buffer, err)
		}
		if off > b.Bytes() {
			return ArgSpec{}, fmt.Errorf("offset %d is past the end of %s (%d bytes)", off, a.Buffer, b.Bytes())
		}
		s.Buffer, s.Offset = a.Buffer, int64(off)
	case TensorMapArg:
		b, ok := bufs[a.TensorMap.Buffer]
		if !ok {
			return ArgSpec{}, fmt.Errorf("tensor map of unknown buffer %q", a.TensorMap.Buffer)
		}
		m, err := a.TensorMap.Resolve(env)
		if err != nil {
			return ArgSpec{}, fmt.Errorf("tensor map of %s: %w", b.Name, err)
		}
		// A buffer is allocated at least 16 bytes.
		if err := m.Inside(max(b.Bytes(), 16)); err != nil {
			return ArgSpec{}, err
		}
		s.TensorMap = &m
	default:
		v, err := a.Scalar.Eval(env)
		if err != nil {
			return ArgSpec{}, fmt.Errorf("scalar: %w", err)
		}
		s.Type = a.ScalarType()
		if s.Type != U32 && s.Type != U64 {
			return ArgSpec{}, fmt.Errorf("scalar type %q: want u32 or u64", s.Type)
		}
		if v < 0 || (s.Type == U32 && v > math.MaxUint32) {
			return ArgSpec{}, fmt.Errorf("scalar %s = %d does not fit %s", a.Scalar, v, s.Type)
		}
		s.Scalar = uint64(v)
	}
	return s, nil
}
