// Package parallel runs independent jobs on every processor Go may use.
package parallel

import (
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
