package tuning

import (
	"slices"
	"testing"

	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// TestLoadReplayRecordedSpace: a database of a run that fixed some axes
// (research/h200-atomic1-late.db holds 24 and 39 points of spaces of 904
// and 1418) replays the points it recorded, and the optimum is the
// lowest recorded median among them; one whose abandoned evaluations
// kept their samples (gemm/h200-gemm-wgmma-persistent.db) replays every
// point, the abandoned answered from their samples (its dW q·o shape: on
// dW k·v its 64-row tiles ran rings of 6 stages, where today's space
// takes 8 and 12, so those points are not replayed).
func TestLoadReplayRecordedSpace(t *testing.T) {
	for _, c := range []struct {
		path   string
		points map[string]int // by "kernel shape"
	}{
		{"../testdata/research/h200-atomic1-late.db", map[string]int{
			"layernorm_bwd m=2048,n=1536,dtype=bf16": 24, "rmsnorm_bwd m=2048,n=1536,dtype=f32": 39}},
		{"../testdata/gemm/h200-gemm-wgmma-persistent.db", map[string]int{
			"gemm_bwd m=2048,n=1536,k=1536,grad=dw,dtype=bf16": 50}},
	} {
		db, err := store.OpenReadOnly(c.path)
		if err != nil {
			t.Fatal(err)
		}
		d, err := LoadReplay(db, c.path)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, s := range d.Shapes {
			want, ok := c.points[s.Family.Name()+" "+s.Shape.Key()]
			if !ok {
				continue
			}
			found++
			m := s.Family.(memoFamily)
			if s.Points != want || len(s.Truth) != want || len(m.points) != want {
				t.Errorf("%s %s: %d points, %d truths, want %d of each", c.path, s.Shape.Key(), s.Points, len(s.Truth), want)
			}
			checkReplayedSpace(t, m, s.Shape)
			lowest := 0.0
			for _, m := range s.Truth {
				if lowest == 0 || m < lowest {
					lowest = m
				}
			}
			if s.Optimum != lowest {
				t.Errorf("%s %s: optimum %v, the lowest recorded median is %v", c.path, s.Shape.Key(), s.Optimum, lowest)
			}
		}
		if found != len(c.points) {
			t.Errorf("%s: %d of the shapes %v", c.path, found, c.points)
		}
	}
}

// checkReplayedSpace: the replayed space accepts exactly its points among
// today's (the family's) points, and lists them in today's enumeration
// order.
func checkReplayedSpace(t *testing.T, m memoFamily, s variants.Shape) {
	t.Helper()
	points := map[string]bool{}
	var got, want []string
	for _, p := range m.points {
		points[p.String()] = true
		got = append(got, p.String())
	}
	replayed := m.Space(s)
	for _, p := range m.Family.Space(s).Enumerate() {
		if err := replayed.Check(p); (err == nil) != points[p.String()] {
			t.Errorf("%s %s: replayed space's Check = %v, a replayed point: %v", s.Key(), p, err, points[p.String()])
		}
		if points[p.String()] {
			want = append(want, p.String())
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: the replayed points are not in today's enumeration order:\n%v\nwant\n%v", s.Key(), got, want)
	}
}
