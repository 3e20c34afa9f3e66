package search

import (
	"math/rand/v2"
	"sort"

	"github.com/gradtune/gradtune/variants"
)

// model is the evolutionary search (see the package doc).
type model struct {
	axes     []variants.Axis
	valid    map[string]variants.Params // every point of the space
	pts      []variants.Params
	budget   int
	seedN    int // random proposals before evolution starts
	rng      *rand.Rand
	proposed map[string]bool
	n        int
	scores   []scored
}

type scored struct {
	p variants.Params
	m float64
}

const (
	elites      = 5
	pBest       = 0.6
	pCrossover  = 0.2
	pTwoAxes    = 0.3
	pAdjacent   = 0.5
	maxAttempts = 64
)

func newModel(space variants.Space, pts []variants.Params, budget int, rng *rand.Rand) *model {
	m := &model{axes: space.Axes, valid: map[string]variants.Params{}, pts: pts, budget: budget,
		seedN: max(min(budget, 4), budget/3), rng: rng, proposed: map[string]bool{}}
	for _, p := range pts {
		m.valid[p.String()] = p
	}
	return m
}

func (m *model) Next() []Proposal {
	if m.n >= m.budget || m.n >= len(m.pts) {
		return nil
	}
	var p variants.Params
	if m.n >= m.seedN && len(m.scores) > 0 {
		if p = m.neighbor(m.scores[0].p); p == nil {
			p = m.child()
		}
	}
	if p == nil {
		p = m.randomUnproposed()
	}
	m.proposed[p.String()] = true
	m.n++
	return []Proposal{{Params: p}}
}

func (m *model) Tell(p Proposal, o Observation) {
	if !o.OK {
		return
	}
	m.scores = append(m.scores, scored{p.Params, o.Median})
	sort.SliceStable(m.scores, func(a, b int) bool { return m.scores[a].m < m.scores[b].m })
}

// child breeds an unproposed point of the space from the elites, or
// returns nil after maxAttempts draws.
func (m *model) child() variants.Params {
	top := m.scores[:min(elites, len(m.scores))]
	for range maxAttempts {
		parent := top[0].p
		if m.rng.Float64() >= pBest {
			parent = top[m.rng.IntN(len(top))].p
		}
		c := parent.Clone()
		if m.rng.Float64() < pCrossover && len(top) > 1 {
			other := top[m.rng.IntN(len(top))].p
			for _, a := range m.axes {
				if m.rng.IntN(2) == 0 {
					c[a.Name] = other[a.Name]
				}
			}
		}
		m.mutate(c)
		if m.rng.Float64() < pTwoAxes {
			m.mutate(c)
		}
		key := c.String()
		if q, ok := m.valid[key]; ok && !m.proposed[key] {
			return q
		}
	}
	return nil
}

// mutate moves one axis with more than one value to an adjacent value
// or to any other value.
func (m *model) mutate(c variants.Params) {
	var multi []variants.Axis
	for _, a := range m.axes {
		if len(a.Values) > 1 {
			multi = append(multi, a)
		}
	}
	if len(multi) == 0 {
		return
	}
	a := multi[m.rng.IntN(len(multi))]
	cur := 0
	for i, v := range a.Values {
		if v == c[a.Name] {
			cur = i
		}
	}
	next := m.rng.IntN(len(a.Values) - 1)
	if next >= cur {
		next++
	}
	if m.rng.Float64() < pAdjacent {
		next = cur + 1
		if (m.rng.IntN(2) == 0 && cur > 0) || next == len(a.Values) {
			next = cur - 1
		}
	}
	c[a.Name] = a.Values[next]
}

// randomUnproposed draws a point not proposed yet (there is one: Next
// stops at the size of the space).
func (m *model) randomUnproposed() variants.Params {
	for range maxAttempts {
		p := m.pts[m.rng.IntN(len(m.pts))]
		if !m.proposed[p.String()] {
			return p
		}
	}
	start := m.rng.IntN(len(m.pts))
	for i := range m.pts {
		p := m.pts[(start+i)%len(m.pts)]
		if !m.proposed[p.String()] {
			return p
		}
	}
	return m.pts[start]
}

// neighbor returns an unproposed point of the space that differs from p
// in one axis, drawn at random; nil when every such neighbor was
// proposed.
func (m *model) neighbor(p variants.Params) variants.Params {
	var out []variants.Params
	for _, a := range m.axes {
		for i, v := range a.Values {
			if v != p[a.Name] {
				continue
			}
			for j := range a.Values {
				if j == i {
					continue
				}
				q := p.Clone()
				q[a.Name] = a.Values[j]
				if v, ok := m.valid[q.String()]; ok && !m.proposed[q.String()] {
					out = append(out, v)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[m.rng.IntN(len(out))]
}
