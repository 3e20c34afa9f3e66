package runner

import (
	"runtime"
	"sync"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
)

// mismatch is the outcome of comparing a device buffer with its reference.
type mismatch struct {
	maxAbs, maxRel float64
	bad            int // first element outside tolerance, -1 if none
	got            float64
}

// compare decodes raw device bytes of type dt and checks them against ref
// under tol, in parallel chunks, without materialising the whole decoded
// buffer.
func compare(dt dtype.DType, raw []byte, ref []float64, tol kernels.Tolerance) mismatch {
	const chunk = 1 << 16
	n := len(ref)
	nchunks := (n + chunk - 1) / chunk
	results := make([]mismatch, nchunks)
	var wg sync.WaitGroup
	next := make(chan int, nchunks)
	for c := 0; c < nchunks; c++ {
		next <- c
	}
	close(next)
	for w := 0; w < min(runtime.GOMAXPROCS(0), nchunks); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]float64, chunk)
			for c := range next {
				lo, hi := c*chunk, min((c+1)*chunk, n)
				got := buf[:hi-lo]
				dt.DecodeInto(got, raw[lo*dt.Size():])
				a, r, bad := tol.Check(got, ref[lo:hi])
				m := mismatch{maxAbs: a, maxRel: r, bad: -1}
				if bad >= 0 {
					m.bad, m.got = lo+bad, got[bad]
				}
				results[c] = m
			}
		}()
	}
	wg.Wait()
	out := mismatch{bad: -1}
	for _, m := range results {
		out.maxAbs = max(out.maxAbs, m.maxAbs)
		out.maxRel = max(out.maxRel, m.maxRel)
		if out.bad < 0 && m.bad >= 0 {
			out.bad, out.got = m.bad, m.got
		}
	}
	return out
}
