package ptxtest

import (
	"runtime"
	"sort"
	"sync"
	"testing"
)

// Parallel calls f on every job from GOMAXPROCS goroutines and returns
// when all are done.
func Parallel[J any](jobs []J, f func(J)) {
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

// ReportSorted sorts problems and reports the first most of them as
// errors, then how many more there are.
func ReportSorted(t *testing.T, problems []string, most int) {
	t.Helper()
	sort.Strings(problems)
	for i, p := range problems {
		if i == most {
			t.Errorf("... and %d more problems", len(problems)-most)
			break
		}
		t.Error(p)
	}
}
