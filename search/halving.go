package search

import (
	"sort"

	"github.com/gradtune/gradtune/variants"
)

// DefaultRungs are successive halving's sample caps: every point gets 6
// samples, the best third 18, the best ninth 54, and the best 27th the
// full protocol.
var DefaultRungs = []int{6, 18, 54}

// keepFraction is the share of a rung that goes on to the next.
const keepFraction = 3

type halving struct {
	rungs []int
	rung  int
	alive []variants.Params
	seen  map[string]Observation
}

func newHalving(pts []variants.Params, rungs []int) *halving {
	return &halving{rungs: rungs, alive: pts, rung: -1}
}

func (h *halving) Next() []Proposal {
	if h.rung >= len(h.rungs) {
		return nil
	}
	if h.rung >= 0 {
		h.alive = h.survivors()
	}
	h.rung++
	h.seen = map[string]Observation{}
	cap := 0 // the last rung: the full protocol
	if h.rung < len(h.rungs) {
		cap = h.rungs[h.rung]
	}
	out := make([]Proposal, len(h.alive))
	for i, p := range h.alive {
		out[i] = Proposal{Params: p, Samples: cap}
	}
	return out
}

// survivors are the best third of the rung's valid points (at least one),
// in their original order.
func (h *halving) survivors() []variants.Params {
	type scored struct {
		i int
		m float64
	}
	var ok []scored
	for i, p := range h.alive {
		if o := h.seen[p.String()]; o.OK {
			ok = append(ok, scored{i, o.Median})
		}
	}
	sort.SliceStable(ok, func(a, b int) bool { return ok[a].m < ok[b].m })
	keep := min(len(ok), max(1, (len(h.alive)+keepFraction-1)/keepFraction))
	ok = ok[:keep]
	sort.Slice(ok, func(a, b int) bool { return ok[a].i < ok[b].i })
	out := make([]variants.Params, len(ok))
	for j, s := range ok {
		out[j] = h.alive[s.i]
	}
	return out
}

func (h *halving) Tell(p Proposal, o Observation) { h.seen[p.Params.String()] = o }
