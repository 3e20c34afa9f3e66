package search

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/gradtune/gradtune/variants"
)

// testSpace has 4·4·3 points less a constraint (a·b ≤ 8 with a, b from
// 1,2,4,8), and a cost with one optimum.
func testSpace() variants.Space {
	return variants.Space{
		Axes: []variants.Axis{variants.IntAxis("a", "", 1, 2, 4, 8), variants.IntAxis("b", "", 1, 2, 4, 8),
			variants.IntAxis("c", "", 0, 1, 2)},
		Constraints: []variants.Constraint{{Name: "ab", OK: func(p variants.Params) error {
			a, _ := strconv.Atoi(p["a"])
			b, _ := strconv.Atoi(p["b"])
			if a*b > 8 {
				return errors.New("a·b > 8")
			}
			return nil
		}}},
	}
}

func cost(p variants.Params) float64 {
	a, _ := strconv.Atoi(p["a"])
	b, _ := strconv.Atoi(p["b"])
	c, _ := strconv.Atoi(p["c"])
	return 10 + float64((a-4)*(a-4)+(b-2)*(b-2)+c)
}

// drive runs a strategy to its end against cost and returns every
// proposal, checking each against the space.
func drive(t *testing.T, c Config, sp variants.Space, fix variants.Params) []Proposal {
	t.Helper()
	s, err := New(c, sp, fix)
	if err != nil {
		t.Fatal(err)
	}
	var all []Proposal
	for props := s.Next(); len(props) > 0; props = s.Next() {
		for _, p := range props {
			if err := sp.Check(p.Params); err != nil {
				t.Fatalf("%s proposed a point outside the space: %v", c.Name, err)
			}
			for k, v := range fix {
				if p.Params[k] != v {
					t.Fatalf("%s proposed %s, which does not keep %s=%s", c.Name, p.Params, k, v)
				}
			}
			all = append(all, p)
			s.Tell(p, Observation{OK: true, Median: cost(p.Params)})
		}
		if len(all) > 10000 {
			t.Fatal("no end")
		}
	}
	return all
}

func TestStrategiesKeepConstraintsAndSeeds(t *testing.T) {
	sp := testSpace()
	n := len(sp.Enumerate())
	for _, name := range Names() {
		for _, fix := range []variants.Params{nil, {"c": "1"}} {
			a := drive(t, Config{Name: name, Seed: 7}, sp, fix)
			b := drive(t, Config{Name: name, Seed: 7}, sp, fix)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: the same seed gave different proposals", name)
			}
			full := 0
			for _, p := range a {
				if p.Samples == 0 {
					full++
				}
			}
			points := n
			if fix != nil {
				points = len(variants.Filter(sp.Enumerate(), fix))
			}
			want := map[string]int{"exhaustive": points, "random": DefaultBudget(points), "model": DefaultBudget(points),
				"halving": max(1, (points+26)/27)}[name]
			if name == "halving" {
				want = len(halvingFinal(points))
			}
			if full != want {
				t.Errorf("%s fix %v: %d full evaluations, want %d", name, fix, full, want)
			}
		}
	}
}

// halvingFinal is the size of each rung down to the final one.
func halvingFinal(n int) []int {
	for range DefaultRungs {
		n = max(1, (n+keepFraction-1)/keepFraction)
	}
	return make([]int, n)
}

func TestBudgetsAndDistinctProposals(t *testing.T) {
	sp := testSpace()
	for _, name := range []string{"random", "model"} {
		ps := drive(t, Config{Name: name, Budget: 12, Seed: 3}, sp, nil)
		seen := map[string]bool{}
		for _, p := range ps {
			if seen[p.Params.String()] {
				t.Errorf("%s proposed %s twice", name, p.Params)
			}
			seen[p.Params.String()] = true
		}
		if len(ps) != 12 {
			t.Errorf("%s with budget 12: %d proposals", name, len(ps))
		}
	}
	if ps := drive(t, Config{Name: "random", Fraction: 0.5}, sp, nil); len(ps) != (len(sp.Enumerate())+1)/2 {
		t.Errorf("random with half the space: %d of %d points", len(ps), len(sp.Enumerate()))
	}
}

func TestModelFindsTheOptimum(t *testing.T) {
	sp := testSpace()
	found := 0
	for seed := range uint64(20) {
		best := 1e9
		for _, p := range drive(t, Config{Name: "model", Budget: 12, Seed: seed}, sp, nil) {
			best = min(best, cost(p.Params))
		}
		if best == 10 {
			found++
		}
	}
	// 12 of 36 points; random sampling finds the one optimum a third of
	// the time, the model's coordinate descent nearly always.
	if found < 18 {
		t.Errorf("model found the optimum in %d of 20 seeds, want ≥ 18", found)
	}
}

func TestHalvingKeepsTheBest(t *testing.T) {
	sp := testSpace()
	ps := drive(t, Config{Name: "halving"}, sp, nil)
	var rungs []string
	last := -1
	for _, p := range ps {
		if p.Samples != last {
			rungs = append(rungs, fmt.Sprint(p.Samples))
			last = p.Samples
		}
	}
	if fmt.Sprint(rungs) != "[6 18 54 0]" {
		t.Errorf("rungs %v, want 6, 18, 54 samples then the full protocol", rungs)
	}
	final := ps[len(ps)-1].Params
	if cost(final) != 10 {
		t.Errorf("halving's final evaluation is %s (cost %v), want the optimum", final, cost(final))
	}
}

func TestUnknownStrategy(t *testing.T) {
	if _, err := New(Config{Name: "annealing"}, testSpace(), nil); err == nil {
		t.Error("an unknown strategy was accepted")
	}
}

// TestModelConfirms: in the last fifth of the budget the model measures
// the fastest point again until it has three evaluations, then the
// leader (here the second fastest, as if a tie had chosen it), and
// gives the slots left back to the search.
func TestModelConfirms(t *testing.T) {
	sp := testSpace()
	s, err := New(Config{Name: "model", Budget: 20, Seed: 5}, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	var order []string
	again := map[string]int{}
	n, firstAgain := 0, -1
	for props := s.Next(); len(props) > 0; props = s.Next() {
		for _, p := range props {
			k := p.Params.String()
			if p.Again {
				if _, ok := seen[k]; !ok {
					t.Fatalf("proposal %d measures %s again, which was never measured", n, k)
				}
				again[k]++
				if firstAgain < 0 {
					firstAgain = n
				}
			} else if _, ok := seen[k]; ok {
				t.Fatalf("proposal %d proposes %s anew", n, k)
			} else {
				order = append(order, k)
			}
			seen[k] = cost(p.Params)
			n++
			fast, second := "", ""
			for _, q := range order {
				switch {
				case fast == "" || seen[q] < seen[fast]:
					fast, second = q, fast
				case second == "" || seen[q] < seen[second]:
					second = q
				}
			}
			leader := fast
			if second != "" {
				leader = second
			}
			s.Tell(p, Observation{OK: true, Median: seen[k], Lo: seen[k], Hi: seen[k], Leader: leader, Fastest: fast})
		}
	}
	if n != 20 || firstAgain < 16 {
		t.Errorf("%d proposals, the first re-measurement at %d; want 20, and re-measurements in the last 4", n, firstAgain)
	}
	if len(again) != 2 {
		t.Fatalf("re-measured %v, want the fastest and the leader", again)
	}
	for k, c := range again {
		if c > 2 {
			t.Errorf("%s measured again %d times, want at most 2 (3 evaluations)", k, c)
		}
	}
}

// The initial design starts at a random point: a design that always
// starts at the first point (the farthest from none) makes every seed the
// same run, all right or all wrong.
func TestModelDesignVariesWithTheSeed(t *testing.T) {
	sp := testSpace()
	firsts := map[string]bool{}
	for seed := range uint64(20) {
		s, err := New(Config{Name: "model", Budget: 12, Seed: seed}, sp, nil)
		if err != nil {
			t.Fatal(err)
		}
		firsts[s.Next()[0].Params.String()] = true
	}
	if len(firsts) < 5 {
		t.Errorf("20 seeds started at %d distinct points, want ≥ 5", len(firsts))
	}
}

// A failure is observed as bad: where two thirds of the space fail and
// the rest is flat, the model's proposals after its initial design keep
// to the rest (ignoring failures, it proposed failing points more than
// half the time).
func TestModelLearnsFromFailures(t *testing.T) {
	sp := testSpace()
	fails := func(p variants.Params) bool { return p["c"] != "0" }
	inFailing, after := 0, 0
	for seed := range uint64(20) {
		s, err := New(Config{Name: "model", Budget: 12, Seed: seed}, sp, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for props := s.Next(); len(props) > 0; props = s.Next() {
			for _, p := range props {
				n++
				if n > 4 && !p.Again {
					after++
					if fails(p.Params) {
						inFailing++
					}
				}
				a, _ := strconv.Atoi(p.Params["a"])
				o := Observation{OK: true, Median: 10 + 0.01*float64(a)}
				if fails(p.Params) {
					o = Observation{}
				}
				s.Tell(p, o)
			}
		}
	}
	if 4*inFailing > after {
		t.Errorf("%d of %d proposals after the design were of failing points, want ≤ a quarter", inFailing, after)
	}
}

// TestAxisDistanceByValue: a numeric axis's distances follow its values'
// order, not its listing's (nf4_gemm_bwd lists bn 96 and 160 after 256);
// categorical values are all 1 apart.
func TestAxisDistanceByValue(t *testing.T) {
	listed := newAxisDist(variants.IntAxis("bn", "", 64, 128, 192, 256, 96, 160))
	sorted := newAxisDist(variants.IntAxis("bn", "", 64, 96, 128, 160, 192, 256))
	for _, a := range []string{"64", "96", "128", "160", "192", "256"} {
		for _, b := range []string{"64", "96", "128", "160", "192", "256"} {
			got, want := listed.d[listed.val[a]][listed.val[b]], sorted.d[sorted.val[a]][sorted.val[b]]
			if got != want {
				t.Errorf("d(%s, %s) = %g, want %g (as when listed in order)", a, b, got, want)
			}
		}
	}
	if d := listed.d[listed.val["256"]][listed.val["160"]]; d != 0.7 {
		t.Errorf("d(256, 160) = %g, want 0.7 (two ranks apart: 192 between)", d)
	}
	cat := newAxisDist(variants.Axis{Name: "order", Values: []string{"m", "grouped", "streamk"}})
	if cat.d[0][1] != 1 || cat.d[0][2] != 1 || cat.d[1][1] != 0 {
		t.Errorf("categorical distances %v, want 1 between values and 0 on the diagonal", cat.d)
	}
}
