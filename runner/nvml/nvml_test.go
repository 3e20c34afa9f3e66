package nvml

import (
	"os"
	"strings"
	"testing"
)

// TestOpenWithoutLibrary: where libnvidia-ml is not installed (CI, this
// repository's development machines), Open fails with an error that says
// so instead of crashing; where it is, a reading of a missing GPU fails.
func TestOpenWithoutLibrary(t *testing.T) {
	_, err := Open("GPU-00000000-0000-0000-0000-000000000000")
	if err == nil {
		t.Fatal("Open of a GPU that does not exist succeeded")
	}
	if _, statErr := os.Stat("/dev/nvidiactl"); statErr != nil && !strings.Contains(err.Error(), "NVML unavailable") {
		t.Errorf("without a GPU: %v, want it to say NVML is unavailable", err)
	}
	t.Log(err)
	if refs != 0 {
		t.Errorf("%d references left after failed opens", refs)
	}
}
