package main

import (
	"slices"
	"testing"
)

// TestWorkerArgv: the worker runs as this binary's hidden mode, under the
// wrapper command when GRADTUNE_WORKER_WRAP names one.
func TestWorkerArgv(t *testing.T) {
	for _, c := range []struct {
		faults bool
		wrap   string
		want   []string
	}{
		{false, "", []string{"/bin/tune", "__worker", "--device", "1"}},
		{true, "", []string{"/bin/tune", "__worker", "--device", "1", "--faults"}},
		{false, " ncu  --log-file /tmp/l -o /tmp/r ", []string{"ncu", "--log-file", "/tmp/l", "-o", "/tmp/r", "/bin/tune", "__worker", "--device", "1"}},
	} {
		if got := workerArgv("/bin/tune", 1, c.faults, c.wrap); !slices.Equal(got, c.want) {
			t.Errorf("workerArgv(faults=%v, wrap=%q) = %q, want %q", c.faults, c.wrap, got, c.want)
		}
	}
}
