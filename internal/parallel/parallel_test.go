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
