package runner

import (
	"math"
	"path/filepath"
	"testing"
)

// TestRefFileRoundTrip: a reference file gives back every buffer bit for
// bit (NaN payloads, −0, infinities, an empty buffer), across a chunk
// boundary of the conversion.
func TestRefFileRoundTrip(t *testing.T) {
	long := make([]float64, floatChunk+3)
	for i := range long {
		long[i] = float64(i) / 7
	}
	long[floatChunk] = math.Float64frombits(0x7ff8_0000_dead_beef)
	ref := map[string][]float64{"dx": long, "dw": {math.Copysign(0, -1), math.Inf(-1), math.Inf(1)}, "empty": {}}
	path := filepath.Join(t.TempDir(), "r.ref")
	if err := writeRef(path, ref); err != nil {
		t.Fatal(err)
	}
	got, err := readRef(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ref) {
		t.Fatalf("%d buffers back, want %d", len(got), len(ref))
	}
	for name, want := range ref {
		if len(got[name]) != len(want) {
			t.Fatalf("%s: %d elements back, want %d", name, len(got[name]), len(want))
		}
		for i := range want {
			if math.Float64bits(got[name][i]) != math.Float64bits(want[i]) {
				t.Fatalf("%s[%d] = %x, want %x", name, i, math.Float64bits(got[name][i]), math.Float64bits(want[i]))
			}
		}
	}
}
