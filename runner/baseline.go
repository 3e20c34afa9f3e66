package runner

import (
	"errors"
	"fmt"
	"github.com/gradtune/gradtune/contract"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner/cuda"
)

// GEMMBaseliner is implemented by backends that run vendor GEMMs for
// baselines (kernels.GEMMCall): CUDA through cuBLAS.
type GEMMBaseliner interface {
	// GEMM enqueues call on the buffers at a, b and c. An error wrapping
	// ErrNoBaselineLibrary means that the library is absent and nothing
	// was enqueued.
	GEMM(call kernels.GEMMCall, a, b, c Ptr) error
}

// ErrNoBaselineLibrary is wrapped by a backend's error when the vendor
// library a baseline needs (cuBLAS) is not there: the baseline is not
// measured, and the tuning goes on without it.
var ErrNoBaselineLibrary = errors.New("baseline library not available")

// LoadBaseline binds baseline b to the session's buffers as a Loaded that
// Run, Validate and the worker's timing treat like a program. Validation
// compares only the buffers the baseline writes (a GEMM's C) with the
// reference. A backend without GEMMBaseliner fails with an error wrapping
// ErrNoBaselineLibrary.
func (ss *Session) LoadBaseline(b kernels.Baseline) (*Loaded, error) {
	if b.GEMM == nil {
		return nil, fmt.Errorf("baseline %s has no call", b.Name)
	}
	gb, ok := ss.be.(GEMMBaseliner)
	if !ok {
		return nil, fmt.Errorf("baseline %s: the %s backend runs no vendor GEMMs: %w", b.Name, ss.be.Name(), ErrNoBaselineLibrary)
	}
	c := *b.GEMM
	if err := checkGEMM(c, ss.specs); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", b.Name, err)
	}
	a, bp, cp := ss.bufs[c.A], ss.bufs[c.B], ss.bufs[c.C]
	return &Loaded{be: ss.be, call: func() error { return gb.GEMM(c, a, bp, cp) }, checks: []string{c.C}}, nil
}

// checkGEMM checks a GEMMCall against the session's buffers: A and B of
// type In (f16 or bf16), C of type Out (f32 or In), C an output or
// accumulate buffer, positive sizes, leading dimensions at least a row,
// and every matrix inside its buffer.
func checkGEMM(c kernels.GEMMCall, specs []contract.BufferSpec) error {
	if c.In != dtype.F16 && c.In != dtype.BF16 {
		return fmt.Errorf("GEMM inputs of type %v: want f16 or bf16", c.In)
	}
	if c.Out != dtype.F32 && c.Out != c.In {
		return fmt.Errorf("GEMM output of type %v: want f32 or the input type %v", c.Out, c.In)
	}
	if c.M < 1 || c.N < 1 || c.K < 1 {
		return fmt.Errorf("GEMM %d×%d×%d: sizes must be positive", c.M, c.N, c.K)
	}
	rowsA, colsA := c.M, c.K
	if c.TransA {
		rowsA, colsA = c.K, c.M
	}
	rowsB, colsB := c.K, c.N
	if c.TransB {
		rowsB, colsB = c.N, c.K
	}
	for _, m := range []struct {
		role           string
		name           string
		dt             dtype.DType
		rows, cols, ld int
		writes         bool
	}{
		{"A", c.A, c.In, rowsA, colsA, c.LDA, false},
		{"B", c.B, c.In, rowsB, colsB, c.LDB, false},
		{"C", c.C, c.Out, c.M, c.N, c.LDC, true},
	} {
		if err := checkMatrix(specs, m.role, m.name, m.dt, m.rows, m.cols, m.ld, m.writes); err != nil {
			return err
		}
	}
	return nil
}

// checkMatrix checks one row-major rows×cols operand with rows ld elements
// apart against its buffer in specs.
func checkMatrix(specs []contract.BufferSpec, role, name string, dt dtype.DType, rows, cols, ld int, writes bool) error {
	i := -1
	for j, b := range specs {
		if b.Name == name {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("GEMM %s names unknown buffer %q", role, name)
	}
	b := specs[i]
	if b.DType != dt {
		return fmt.Errorf("GEMM %s: buffer %s is %v, want %v", role, name, b.DType, dt)
	}
	if writes && b.Role != kernels.Output && b.Role != kernels.Accumulate {
		return fmt.Errorf("GEMM %s: buffer %s is an %v buffer, want an output or accumulate one", role, name, b.Role)
	}
	if ld < cols {
		return fmt.Errorf("GEMM %s (%s, %d×%d row-major): leading dimension %d is below a row of %d", role, name, rows, cols, ld, cols)
	}
	if need := (rows-1)*ld + cols; need > b.Elems {
		return fmt.Errorf("GEMM %s (%s, %d×%d, rows %d apart) needs %d elements, the buffer has %d", role, name, rows, cols, ld, need, b.Elems)
	}
	return nil
}

// columnMajor maps a row-major GEMMCall on the buffers at a, b and c to
// cuBLAS's column-major GemmEx. A row-major matrix with rows ld apart is
// the column-major transpose with the same leading dimension, so
// C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS's A is our B,
// its B our A, its M our N and its N our M; the transpose flags stay with
// their matrices.
func columnMajor(c kernels.GEMMCall, a, b, cp Ptr) cuda.Gemm {
	return cuda.Gemm{
		TransA: c.TransB, TransB: c.TransA,
		M: c.N, N: c.M, K: c.K,
		A: cuda.DevicePtr(b), LDA: c.LDB, AType: blasTypes[c.In],
		B: cuda.DevicePtr(a), LDB: c.LDA, BType: blasTypes[c.In],
		C: cuda.DevicePtr(cp), LDC: c.LDC, CType: blasTypes[c.Out],
	}
}

// blasTypes maps element types to cuBLAS's.
var blasTypes = map[dtype.DType]cuda.BLASType{
	dtype.F16: cuda.BLASFloat16, dtype.BF16: cuda.BLASBFloat16, dtype.F32: cuda.BLASFloat32,
}

// GEMM implements GEMMBaseliner with cublasGemmEx, opening cuBLAS on the
// backend's stream at the first call. An absent library is reported once,
// as an error wrapping ErrNoBaselineLibrary, and every later call returns
// the same error without looking again.
func (b *cudaBackend) GEMM(call kernels.GEMMCall, a, bp, c Ptr) error {
	if b.blas == nil && b.blasErr == nil {
		b.blas, b.blasErr = b.ctx.OpenBLAS(b.stream)
		if b.blasErr != nil {
			b.blasErr = fmt.Errorf("%w: %w", ErrNoBaselineLibrary, b.blasErr)
		}
	}
	if b.blasErr != nil {
		return b.blasErr
	}
	return b.blas.GemmEx(columnMajor(call, a, bp, c))
}

var _ GEMMBaseliner = (*cudaBackend)(nil)
