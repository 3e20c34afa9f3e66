// Package parallel runs independent jobs on every processor Go may use.
package parallel

import (
	"fmt"
	"runtime"
	"sync"
)

// Each calls f on every job from GOMAXPROCS goroutines and returns when
// all are done. f must be safe to call concurrently.
func Each[J any](jobs []J, f func(J)) {
	work := make(chan J)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for j := range work {
				f(j)
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
}

// Chunks calls f on [0, n) cut into pieces [from, to) of size elements
// (the last one shorter), the pieces spread over GOMAXPROCS goroutines in
// any order; one piece, or one processor, runs on the caller's goroutine.
func Chunks(n, size int, f func(from, to int)) {
	if size < 1 {
		panic(fmt.Sprintf("parallel.Chunks: pieces of %d elements", size))
	}
	pieces := (n + size - 1) / size
	if pieces <= 1 || runtime.GOMAXPROCS(0) == 1 {
		f(0, n)
		return
	}
	starts := make([]int, pieces)
	for i := range starts {
		starts[i] = i * size
	}
	Each(starts, func(from int) { f(from, min(from+size, n)) })
}
