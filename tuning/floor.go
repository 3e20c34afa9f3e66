package tuning

import (
	"fmt"
	"io"
	"math/big"

	"github.com/gradtune/gradtune/search"
)

// ReplayFloor is what an uninformed search faces on a replayed shape: how
// many of the replayed space's points are near the optimum (a full
// evaluation whose recorded median is within Within of it), and so how
// likely a uniformly random sample of distinct points is to hold one.
// Choosing a point that is not near costs a distance above Within, so
// PHit bounds from above the share of runs of any search that knows
// nothing of the space and evaluates at most Budget distinct points
// ending within Within of the optimum.
type ReplayFloor struct {
	Within float64
	Points int // points of the replayed space
	Full   int // points with a full evaluation
	Near   int // full evaluations within Within of the optimum
	// NearAbandoned counts the points the abandon rule stopped whose
	// recorded median (of the few samples taken) is within Within: they
	// are not counted in Near.
	NearAbandoned int
	Tenth         int     // ⌈10%⌉ of the points
	PTenth        float64 // P(a uniform sample of Tenth distinct points holds a near one)
	Budget        int     // the default budget of a non-exhaustive strategy: Tenth, at least 8
	PHit          float64 // P(a uniform sample of Budget distinct points holds a near one)
	Half          int     // fewest distinct uniform draws for a probability ≥ 1/2 (0: no point is near)
}

// Floor measures s's floor for a distance of within (0.02: 2%). PTenth
// and PHit are exact: one minus the hypergeometric probability of drawing none of the
// Near points in Budget draws without replacement from Points.
func Floor(s ReplayShape, within float64) ReplayFloor {
	f := ReplayFloor{Within: within, Points: s.Points, Tenth: (s.Points + 9) / 10, Budget: search.DefaultBudget(s.Points)}
	for p, m := range s.Truth {
		near := m/s.Optimum-1 <= within
		switch {
		case s.Full[p]:
			f.Full++
			if near {
				f.Near++
			}
		case near:
			f.NearAbandoned++
		}
	}
	// miss is the probability that n draws hold no near point, n = 1, 2, …
	miss, half := big.NewRat(1, 1), big.NewRat(1, 2)
	for n := 1; n <= f.Points; n++ {
		if f.Points-f.Near-n < 0 {
			miss.SetInt64(0)
		} else {
			miss.Mul(miss, big.NewRat(int64(f.Points-f.Near-n+1), int64(f.Points-n+1)))
		}
		p, _ := new(big.Rat).Sub(big.NewRat(1, 1), miss).Float64()
		if n == f.Tenth {
			f.PTenth = p
		}
		if n == f.Budget {
			f.PHit = p
		}
		if f.Half == 0 && f.Near > 0 && miss.Cmp(half) <= 0 {
			f.Half = n
		}
	}
	return f
}

// WriteFloorTable writes d's floors as Markdown table rows (the header is
// FloorTableHeader), with, per strategy of outs (ReplayStrategies' outcomes
// of d; nil: none), how many of its seeds ended within the floor's
// distance.
func WriteFloorTable(w io.Writer, d *ReplayData, floors []ReplayFloor, outs [][]ReplayOutcome) {
	for i, f := range floors {
		s := d.Shapes[i]
		half := "never"
		if f.Half > 0 {
			half = fmt.Sprintf("%d (%.0f%%)", f.Half, 100*float64(f.Half)/float64(f.Points))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d (%.1f%%) | %.2f (%d) | %.2f (%d, %.0f%%) | %s |", d.Name, s.Family.Name(), s.Shape.Key(),
			f.Points, f.Full, f.Near, 100*float64(f.Near)/float64(f.Points), f.PTenth, f.Tenth,
			f.PHit, f.Budget, 100*float64(f.Budget)/float64(f.Points), half)
		if outs == nil {
			fmt.Fprintln(w)
			continue
		}
		for _, oc := range outs[i] {
			n := 0
			for _, x := range oc.Dist {
				if x <= f.Within {
					n++
				}
			}
			fmt.Fprintf(w, " %d/%d |", n, len(oc.Dist))
		}
		fmt.Fprintln(w)
	}
}

// FloorTableHeader is the header of WriteFloorTable's rows for a distance
// of within and the strategies of its outcomes.
func FloorTableHeader(within float64, strategies []string) string {
	h := fmt.Sprintf("| database | kernel | shape | points | full | within %g%% | P, ⌈10%%⌉ draws | P, b draws (b, share) | draws for P ≥ 50%% |", 100*within)
	for _, s := range strategies {
		h += fmt.Sprintf(" %s: seeds within %g%% |", s, 100*within)
	}
	return h + "\n|---|---|---|---:|---:|---:|---:|---:|---:|" + repeat("---:|", len(strategies)) + "\n"
}
