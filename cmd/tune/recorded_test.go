package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// TestRecordedWinnersStillEmit reads the winners of the H200 runs kept
// under testdata/ and checks that each is still a point of its family's
// current space at its shape and still emits: a change of axes or shapes
// that orphans the recorded results (and the tuned tables users built
// from them) fails here, and then the runs need recording again.
func TestRecordedWinnersStillEmit(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "h200-*.db"))
	if err != nil || len(files) < 3 {
		t.Fatalf("recorded databases: %v %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			db, err := store.OpenReadOnly(file)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			runs, err := db.Runs()
			if err != nil || len(runs) == 0 {
				t.Fatalf("runs: %v %v", runs, err)
			}
			winners, err := db.Winners(runs[0].ID)
			if err != nil || len(winners) == 0 {
				t.Fatalf("winners: %d %v", len(winners), err)
			}
			for _, w := range winners {
				f, err := catalog.Lookup(w.Kernel)
				if err != nil {
					t.Fatal(err)
				}
				i := strings.LastIndex(w.ShapeKey, ",dtype=")
				if i < 0 {
					t.Fatalf("shape key %q has no dtype", w.ShapeKey)
				}
				dt, err := dtype.Parse(w.ShapeKey[i+len(",dtype="):])
				if err != nil {
					t.Fatal(err)
				}
				specs, err := variants.ParseSpecs(w.ShapeKey[:i])
				if err != nil || len(specs) != 1 {
					t.Fatalf("%s: %v", w.ShapeKey, err)
				}
				s, err := f.Shape(specs[0], dt)
				if err != nil {
					t.Fatalf("%s %s: %v", w.Kernel, w.ShapeKey, err)
				}
				if s.Key() != w.ShapeKey {
					t.Errorf("%s: shape key %q reads back as %q", w.Kernel, w.ShapeKey, s.Key())
				}
				p, err := variants.ParseParams(w.Params)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Space(s).Check(p); err != nil {
					t.Errorf("%s %s: recorded winner %s is not in the current space: %v", w.Kernel, w.ShapeKey, w.Params, err)
					continue
				}
				if _, err := f.Emit(s, p); err != nil {
					t.Errorf("%s %s %s: %v", w.Kernel, w.ShapeKey, w.Params, err)
				}
			}
		})
	}
}
