package kernels

import (
	"math"
	"runtime"
	"sync"

	"github.com/gradtune/gradtune/dtype"
)

// Tolerance is the accepted error: |got − ref| ≤ Atol + Rtol·|ref|.
type Tolerance struct {
	Atol, Rtol float64
}

// Check compares got with ref and returns the largest absolute and
// relative errors and the index of the first element outside tolerance
// (-1 if none). Non-finite values must match exactly: NaN where ref is
// NaN and an infinity where ref has the same infinity pass; anything else
// against a NaN or an infinity (in either slice) fails with infinite
// absolute and relative errors. Elements where ref is 0 have no relative
// error. Slices of different lengths fail at the first index only one of
// them has, with an infinite absolute error.
func (t Tolerance) Check(got, ref []float64) (maxAbs, maxRel float64, bad int) {
	bad = -1
	if len(got) != len(ref) {
		n := min(len(got), len(ref))
		maxAbs, maxRel, bad = t.Check(got[:n], ref[:n])
		if bad < 0 {
			bad = n
		}
		return math.Inf(1), maxRel, bad
	}
	inf := math.Inf(1)
	for i := range ref {
		g, r := got[i], ref[i]
		var d, rel float64
		switch {
		case g == r || math.IsNaN(g) && math.IsNaN(r):
			// Equal, including equal infinities.
		case math.IsNaN(g) || math.IsNaN(r) || math.IsInf(g, 0) || math.IsInf(r, 0):
			d, rel = inf, inf
		default:
			d = math.Abs(g - r)
			if r != 0 {
				rel = d / math.Abs(r)
			}
		}
		maxAbs, maxRel = max(maxAbs, d), max(maxRel, rel)
		// With r finite the limit is finite, so an infinite d always fails.
		if bad < 0 && d > 0 && (math.IsInf(d, 1) || d > t.Atol+t.Rtol*math.Abs(r)) {
			bad = i
		}
	}
	return maxAbs, maxRel, bad
}

// Loosest combines tolerances into one that accepts what each accepts.
func Loosest(ts ...Tolerance) Tolerance {
	var out Tolerance
	for _, t := range ts {
		out.Atol, out.Rtol = math.Max(out.Atol, t.Atol), math.Max(out.Rtol, t.Rtol)
	}
	return out
}

// U32 is the unit roundoff of the f32 arithmetic every row kernel does.
const U32 = 0x1p-24

// StoreTol widens a tolerance of f32 results for storage in dt: rounding
// to nearest adds at most Epsilon·|value| (and, for f16, half the spacing
// of its subnormals).
func StoreTol(t Tolerance, dt dtype.DType) Tolerance {
	switch dt {
	case dtype.F16:
		return Tolerance{Atol: t.Atol*(1+dt.Epsilon()) + 0x1p-25, Rtol: t.Rtol + dt.Epsilon()*(1+t.Rtol)}
	case dtype.BF16:
		return Tolerance{Atol: t.Atol * (1 + dt.Epsilon()), Rtol: t.Rtol + dt.Epsilon()*(1+t.Rtol)}
	}
	return t
}

// ParallelRows calls row(i) for every i in [0, n) from GOMAXPROCS
// goroutines and returns when all are done: references whose rows are
// independent (a GEMM's) compute them in parallel.
func ParallelRows(n int, row func(i int)) {
	rows := make(chan int, n)
	for i := range n {
		rows <- i
	}
	close(rows)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rows {
				row(i)
			}
		}()
	}
	wg.Wait()
}
