package cuda

import (
	"fmt"
	"math"
	"unsafe"
)

// BLASType is a cudaDataType of a GEMM operand.
type BLASType int32

// GEMM operand types.
const (
	BLASFloat32  BLASType = 0  // CUDA_R_32F
	BLASFloat16  BLASType = 2  // CUDA_R_16F
	BLASBFloat16 BLASType = 14 // CUDA_R_16BF
)

// cuBLAS enum values GemmEx uses.
const (
	blasOpN         = 0  // CUBLAS_OP_N
	blasOpT         = 1  // CUBLAS_OP_T
	blasCompute32F  = 68 // CUBLAS_COMPUTE_32F
	blasGemmDefault = -1 // CUBLAS_GEMM_DEFAULT
)

// Gemm is one cublasGemmEx call in cuBLAS's column-major terms:
// C = op(A)·op(B) with op(A) M×K, op(B) K×N and C M×N, every matrix
// column-major with leading dimension LDx; TransA means op(A) = Aᵀ (A is
// stored K×M). Alpha is 1 and beta 0; accumulation is f32.
type Gemm struct {
	TransA, TransB      bool
	M, N, K             int
	A, B, C             DevicePtr
	LDA, LDB, LDC       int
	AType, BType, CType BLASType
}

// Check validates the sizes against cuBLAS's int arguments and its
// leading-dimension rules.
func (g Gemm) Check() error {
	for _, v := range []int{g.M, g.N, g.K, g.LDA, g.LDB, g.LDC} {
		if v < 1 || v > math.MaxInt32 {
			return fmt.Errorf("cuda: GemmEx: sizes %d×%d×%d and leading dimensions %d, %d, %d must be from 1 to 2^31-1", g.M, g.N, g.K, g.LDA, g.LDB, g.LDC)
		}
	}
	rowsA, rowsB := g.M, g.K
	if g.TransA {
		rowsA = g.K
	}
	if g.TransB {
		rowsB = g.N
	}
	if g.LDA < rowsA || g.LDB < rowsB || g.LDC < g.M {
		return fmt.Errorf("cuda: GemmEx: leading dimensions %d, %d, %d below the stored rows %d, %d, %d", g.LDA, g.LDB, g.LDC, rowsA, rowsB, g.M)
	}
	return nil
}

func blasOp(trans bool) int32 {
	if trans {
		return blasOpT
	}
	return blasOpN
}

// GemmEx enqueues g on the handle's stream (cublasGemmEx with
// CUBLAS_COMPUTE_32F and CUBLAS_GEMM_DEFAULT, alpha 1 and beta 0 on the
// host).
func (b *BLAS) GemmEx(g Gemm) error {
	if err := g.Check(); err != nil {
		return err
	}
	alpha, beta := float32(1), float32(0)
	code := b.api.cublasGemmEx(b.h, blasOp(g.TransA), blasOp(g.TransB), int32(g.M), int32(g.N), int32(g.K),
		unsafe.Pointer(&alpha), uint64(g.A), int32(g.AType), int32(g.LDA), uint64(g.B), int32(g.BType), int32(g.LDB),
		unsafe.Pointer(&beta), uint64(g.C), int32(g.CType), int32(g.LDC), blasCompute32F, blasGemmDefault)
	if err := blasCheck("cublasGemmEx", code); err != nil {
		return fmt.Errorf("%w (%+v)", err, g)
	}
	return nil
}

// blasStatusNames names the cublasStatus_t values.
var blasStatusNames = map[int32]string{
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// BLASError is a failed cuBLAS call.
type BLASError struct {
	Op     string
	Status int
}

func (e *BLASError) Error() string {
	name := blasStatusNames[int32(e.Status)]
	if name == "" {
		name = "CUBLAS_STATUS"
	}
	return fmt.Sprintf("cublas: %s: %s (%d)", e.Op, name, e.Status)
}

// blasCheck turns a cublasStatus_t into an error (nil for success).
func blasCheck(op string, status int32) error {
	if status == 0 {
		return nil
	}
	return &BLASError{Op: op, Status: int(status)}
}
