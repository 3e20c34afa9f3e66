package variants

import "testing"

// TestSpreadAndFilter: Spread takes points evenly in their order (all of
// them for n ≤ 0 or past the end); Filter keeps those that agree with fix.
func TestSpreadAndFilter(t *testing.T) {
	var all []Params
	for _, v := range []string{"1", "2", "3", "4"} {
		all = append(all, Params{"v": v, "w": map[bool]string{true: "a", false: "b"}[v < "3"]})
	}
	str := func(ps []Params) (out []string) {
		for _, p := range ps {
			out = append(out, p.String())
		}
		return out
	}
	for _, c := range []struct {
		n    int
		want int
	}{{2, 2}, {0, 4}, {-1, 4}, {9, 4}, {3, 3}} {
		if got := Spread(all, c.n); len(got) != c.want {
			t.Errorf("Spread(%d) = %v, want %d points", c.n, str(got), c.want)
		}
	}
	if got := str(Spread(all, 2)); got[0] != "v=1,w=a" || got[1] != "v=3,w=b" {
		t.Errorf("Spread(2) = %v", got)
	}
	if got := str(Filter(all, Params{"w": "b"})); len(got) != 2 || got[0] != "v=3,w=b" || got[1] != "v=4,w=b" {
		t.Errorf("Filter(w=b) = %v", got)
	}
	if got := Filter(all, Params{"w": "b", "v": "1"}); len(got) != 0 {
		t.Errorf("Filter(v=1,w=b) = %v", str(got))
	}
	if got := Filter(all, nil); len(got) != 4 {
		t.Errorf("Filter(nil) = %v", str(got))
	}
}
