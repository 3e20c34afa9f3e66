package gen

import (
	"fmt"
	"math/bits"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// MaxElems bounds shapes so that element indices fit in u32 arithmetic.
const MaxElems = 1<<31 - 1

// CeilDiv is ⌈a/b⌉ for positive b.
func CeilDiv(a, b int) int { return (a + b - 1) / b }

// Align16 rounds n up to a multiple of 16.
func Align16(n int) int { return (n + 15) &^ 15 }

// Pow2Ceil is the smallest power of two ≥ n (1 for n ≤ 1).
func Pow2Ceil(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// F32Imm is x rounded to f32, as an immediate.
func F32Imm(x float64) ptx.F32Imm { return ptx.F32Imm(float32(x)) }

// Param declares a pointer parameter and returns it as a global address.
func Param(k *ptx.Func, name string) ptx.Reg {
	return k.Cvta(ptx.Global, k.LdParam(k.Param(name, ptx.U64)))
}

// Both returns a ∧ b for predicates that may be invalid (always true).
func Both(k *ptx.Func, a, b ptx.Reg) ptx.Reg {
	switch {
	case !a.Valid():
		return b
	case !b.Valid():
		return a
	}
	return k.And(ptx.Pred, a, b)
}

// StF32 stores f32 values (1, 2, 4 or 8) at at in vectors of at most
// four, guarded by ok when valid. sp is Global or Shared.
func StF32(k *ptx.Func, sp ptx.Space, at ptx.Addr, vals []ptx.Reg, ok ptx.Reg) {
	for i := 0; i < len(vals); i += 4 {
		part := vals[i:min(i+4, len(vals))]
		k.St(sp, ptx.F32, ptx.At(at.Base, at.Off+int64(4*i)), part)
		if ok.Valid() {
			k.Guard(ok, false)
		}
	}
}

// LdF32 loads count f32 values (1, 2, 4 or 8) from at in vectors of at
// most four, guarded by ok when valid.
func LdF32(k *ptx.Func, sp ptx.Space, at ptx.Addr, count int, ok ptx.Reg, o ...ptx.LdOpts) []ptx.Reg {
	var out []ptx.Reg
	for i := 0; i < count; i += 4 {
		out = append(out, LdRaw(k, sp, dtype.F32, min(4, count-i), ptx.At(at.Base, at.Off+int64(4*i)), ok, o...)...)
	}
	return out
}

// SumTree adds values pairwise.
func SumTree(k *ptx.Func, v []ptx.Reg) ptx.Reg {
	return Tree(v, func(a, b ptx.Reg) ptx.Reg { return k.Add(ptx.F32, a, b) })
}

// Tree combines values pairwise with op, level by level (an odd value
// out passes to the next level as it is).
func Tree(v []ptx.Reg, op func(a, b ptx.Reg) ptx.Reg) ptx.Reg {
	for len(v) > 1 {
		var next []ptx.Reg
		for i := 0; i+1 < len(v); i += 2 {
			next = append(next, op(v[i], v[i+1]))
		}
		if len(v)%2 == 1 {
			next = append(next, v[len(v)-1])
		}
		v = next
	}
	return v[0]
}

// CheckIndexable keeps the element indices of a tensor within u32
// arithmetic: each extent (names[i] = extents[i]; 0 means absent) and
// their product are at most MaxElems.
func CheckIndexable(names []string, extents ...int) error {
	prod := 1
	for i, v := range extents {
		if v > MaxElems {
			return fmt.Errorf("%s=%d must be in 1..%d", names[i], v, MaxElems)
		}
		prod *= max(v, 1)
		if prod > MaxElems {
			return fmt.Errorf("%d elements is more than %d", prod, MaxElems)
		}
	}
	return nil
}
