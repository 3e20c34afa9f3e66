package main

import (
	"slices"
	"testing"
)

// TestWorkerArgv: the worker runs as this binary's hidden mode, with its
// flags, under the wrapper command when GRADTUNE_WORKER_WRAP names one.
func TestWorkerArgv(t *testing.T) {
	for _, c := range []struct {
		wf   workerFlags
		wrap string
		want []string
	}{
		{workerFlags{}, "", []string{"/bin/tune", "__worker", "--device", "1"}},
		{workerFlags{faults: true}, "", []string{"/bin/tune", "__worker", "--device", "1", "--faults"}},
		{workerFlags{refCache: "/tmp/refs"}, "", []string{"/bin/tune", "__worker", "--device", "1", "--ref-cache", "/tmp/refs"}},
		{workerFlags{}, " ncu  --log-file /tmp/l -o /tmp/r ", []string{"ncu", "--log-file", "/tmp/l", "-o", "/tmp/r", "/bin/tune", "__worker", "--device", "1"}},
	} {
		if got := workerArgv("/bin/tune", 1, c.wf, c.wrap); !slices.Equal(got, c.want) {
			t.Errorf("workerArgv(%+v, wrap=%q) = %q, want %q", c.wf, c.wrap, got, c.want)
		}
	}
}
