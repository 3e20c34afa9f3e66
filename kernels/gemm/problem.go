package gemm

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
)

// problem is a shape seen as the GEMM it is: C[r×c] = A[r×l]·B[l×c],
// a reduction over l, with each operand as the buffers store it.
//
//	grad  r  c  l   A              B
//	dx    M  K  N   dy, K-major    w, MN-major
//	dw    N  K  M   dy, MN-major   x, MN-major
//
// M, the token count, is a runtime dim: r for dx, l for dw. r, c and l
// are the extents at the shape emitted, for the space's rules; the
// programs take M as their parameter m (mRows says which extent it is),
// and their launches and buffers as expressions of it (rExpr, lExpr).
type problem struct {
	r, c, l int
	mRows   bool // M is r (dx), else l (dw)
	a, b    operand
	out     string // the output buffer
	in, od  dtype.DType
	// dim names M in launch expressions: tokenDim when empty (a Custom's
	// caller names its own).
	dim string
	// scale, when set, is an f32 buffer of one factor per row of C, and
	// the epilogue adds to what C holds: C = scale[row]·C + A·B (f32 C,
	// direct epilogue; Custom only).
	scale string
	// accumulate: the epilogue adds to what C holds, C += A·B (Custom
	// only, direct epilogue).
	accumulate bool
	// reduce: the epilogue adds A·B to C (f32) with atomic adds, loading
	// nothing (Custom only, direct epilogue).
	reduce bool
	// epi, when set, is a Custom caller's epilogue (Custom only, direct
	// epilogue).
	epi TileEpilogue
	// lora is the rank of a LoRA adapter whose dX, dh·A, the GEMM adds
	// (grad=dx): the reduction goes on past its l elements through
	// loraTiles more k-tiles of dh [M×lora] (A, K-major) and a [lora×K]
	// (B, MN-major), zero-filled past lora.
	lora int
}

// loraTiles is the k-tiles of the adapter's reduction (0 without one).
func (g problem) loraTiles(bk int) int { return (g.lora + bk - 1) / bk }

// operand is one GEMM operand in its buffer: row-major with rows ld
// elements apart. A K-major operand has the reduction index contiguous
// (A[i][k] at i·ld+k); an MN-major one has its other index contiguous
// (A[i][k] at k·ld+i; B[k][j] at k·ld+j).
//
// off is the operand's first element's byte offset in its buffer; rows,
// when not 0, is the rows of the buffer past it that hold the operand
// (B of a Custom: fewer than the problem's extent, the rest reads as
// zeros).
type operand struct {
	buf    string
	kMajor bool
	ld     int
	off    int
	rows   int
}

func problemOf(s Shape) problem {
	p := problem{c: s.K, out: string(s.Grad), in: s.DType, od: s.outDType()}
	switch s.Grad {
	case DX:
		p.r, p.l, p.mRows = s.M, s.N, true
		p.a = operand{buf: "dy", kMajor: true, ld: s.N}
		p.b = operand{buf: "w", ld: s.K}
		p.lora = s.LoRA
	default:
		p.r, p.l = s.N, s.M
		p.a = operand{buf: "dy", ld: s.N}
		p.b = operand{buf: "x", ld: s.K}
	}
	return p
}

// rExpr and lExpr are r and l as launch expressions: the variable m for
// the one that is M.
func (g problem) rExpr() configs.Expr { return g.extExpr(g.r, g.mRows) }
func (g problem) lExpr() configs.Expr { return g.extExpr(g.l, !g.mRows) }

func (g problem) extExpr(v int, isM bool) configs.Expr {
	if isM {
		return configs.Var(g.dimName())
	}
	return configs.Int(v)
}

// dimName is the name of M in g's launch expressions.
func (g problem) dimName() string {
	if g.dim == "" {
		return tokenDim
	}
	return g.dim
}

// mArg is the launch argument of a kernel's m parameter.
func (g problem) mArg() kernels.Arg {
	return kernels.Arg{Scalar: configs.Var(g.dimName()), Type: configs.U32}
}

// index is the position in the buffer of A[row][k] (B: of B[k][row]).
func (o operand) index(row, k int) int {
	if o.kMajor {
		return row*o.ld + k
	}
	return k*o.ld + row
}
