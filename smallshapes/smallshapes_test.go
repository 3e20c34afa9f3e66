package smallshapes

import (
	"github.com/gradtune/gradtune/kernels"
	"testing"

	"github.com/gradtune/gradtune/kernels/catalog"
)

// TestOf: every family gets small shapes in every dtype, each accepted by
// the family, within MaxElems, without duplicates, the same on every call.
func TestOf(t *testing.T) {
	for _, f := range catalog.All() {
		for _, dt := range f.DTypes() {
			shapes := Of(f, dt)
			if len(shapes) < 2 {
				t.Errorf("%s %v: %d small shapes", f.Name(), dt, len(shapes))
			}
			seen := map[string]bool{}
			for _, s := range shapes {
				if seen[s.Key()] {
					t.Errorf("%s: %s twice", f.Name(), s.Key())
				}
				seen[s.Key()] = true
				if s.DType != dt {
					t.Errorf("%s: %s is not %v", f.Name(), s.Key(), dt)
				}
				elems := 0
				for _, b := range f.Buffers(s) {
					elems += kernels.Elems(b, s)
				}
				if elems > MaxElems {
					t.Errorf("%s %s: %d buffer elements, more than %d", f.Name(), s.Key(), elems, MaxElems)
				}
			}
			again := Of(f, dt)
			for i := range again {
				if again[i].Key() != shapes[i].Key() {
					t.Fatalf("%s %v: not deterministic", f.Name(), dt)
				}
			}
		}
	}
}
