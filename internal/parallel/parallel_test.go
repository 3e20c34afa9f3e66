package parallel

import (
	"sync/atomic"
	"testing"
)

func TestEachRunsEveryJobOnce(t *testing.T) {
	var sum atomic.Int64
	jobs := make([]int, 1000)
	for i := range jobs {
		jobs[i] = i + 1
	}
	Each(jobs, func(j int) { sum.Add(int64(j)) })
	if got := sum.Load(); got != 1000*1001/2 {
		t.Errorf("sum of the jobs run = %d, want %d", got, 1000*1001/2)
	}
}

func TestChunksCoverEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 7, 64, 65, 1000} {
		hits := make([]atomic.Int32, n)
		var pieces atomic.Int32
		Chunks(n, 64, func(from, to int) {
			pieces.Add(1)
			if to-from > 64 || to <= from && n > 0 {
				t.Errorf("n=%d: piece [%d, %d)", n, from, to)
			}
			for i := from; i < to; i++ {
				hits[i].Add(1)
			}
		})
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Fatalf("n=%d: index %d covered %d times", n, i, h)
			}
		}
		if want := max((n+63)/64, 1); int(pieces.Load()) != want {
			t.Errorf("n=%d: %d pieces, want %d", n, pieces.Load(), want)
		}
	}
}
