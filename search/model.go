package search

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/gradtune/gradtune/variants"
)

// model is the Bayesian optimization of the package doc, with its
// confirmation round.
type model struct {
	pts    []variants.Params
	index  map[string]int
	axes   []axisDist
	code   [][]int // by point and axis: the value's index
	budget int
	seedN  int // evaluations of the initial design
	confN  int // evaluations kept for the confirmation round
	rng    *rand.Rand

	leader   string        // the winner rule's choice so far
	fastest  string        // the fastest full evaluation so far
	n        int           // proposals made
	proposed []bool        // by point
	obs      map[int]*seen // by point: what its evaluations found
	order    []int         // observed points, in the order first told

	gp gp
}

// seen is what the evaluations of one point found.
type seen struct {
	median, lo, hi float64
	full           bool // a full evaluation: a candidate winner
	times          int  // evaluations
	failed         bool // no valid evaluation (yet)
}

// logY is what the model fits for the point: the log of its median, +Inf
// for a failure (gp caps it).
func (s *seen) logY() float64 {
	if s.failed {
		return math.Inf(1)
	}
	return math.Log(s.median)
}

// axisDist is the distance between the values of one axis, by value
// index: 0 for equal values; 1 between two values of a categorical axis;
// between two values of a numeric axis, 1/2 plus 1/2 of how far apart
// they lie in the axis's order, so that neighbors are closer than the
// ends.
type axisDist struct {
	name string
	val  map[string]int
	d    [][]float64
}

const (
	// confirmEvery: one evaluation in this many of the budget is kept
	// for the confirmation round (at least one, at most maxConfirm).
	confirmEvery = 5
	maxConfirm   = 6
	// minConfirmBudget: a smaller budget is all search.
	minConfirmBudget = 4
	// maxAgain: evaluations of one point the confirmation asks for at
	// most.
	maxAgain = 3
	// seedEvery: the initial design is one evaluation in this many of
	// the budget (at least minSeed, at most maxSeed).
	seedEvery = 3
	minSeed   = 3
	maxSeed   = 10
	// spreadCandidates: the initial design draws this many candidates
	// per point proposed so far (spread).
	spreadCandidates = 2
)

func newModel(space variants.Space, pts []variants.Params, budget int, rng *rand.Rand) *model {
	m := &model{pts: pts, index: map[string]int{}, budget: budget, rng: rng,
		proposed: make([]bool, len(pts)), obs: map[int]*seen{}}
	for _, a := range space.Axes {
		m.axes = append(m.axes, newAxisDist(a))
	}
	m.code = make([][]int, len(pts))
	for i, p := range pts {
		m.index[p.String()] = i
		m.code[i] = make([]int, len(m.axes))
		for a, ax := range m.axes {
			m.code[i][a] = ax.val[p[ax.name]]
		}
	}
	m.confN = min(maxConfirm, max(1, budget/confirmEvery))
	if budget < minConfirmBudget {
		m.confN = 0
	}
	m.seedN = min(budget-m.confN, max(minSeed, min(maxSeed, budget/seedEvery)))
	m.gp = gp{m: m}
	return m
}

// newAxisDist: categorical values are all 1 apart; numeric ones 0.5 plus
// half their distance in rank (by value, whatever the axis's listing
// order: a value appended to an axis sits among its neighbours).
func newAxisDist(a variants.Axis) axisDist {
	ad := axisDist{name: a.Name, val: map[string]int{}}
	rank, numeric := numericRanks(a.Values)
	for i, v := range a.Values {
		ad.val[v] = i
	}
	n := len(a.Values)
	ad.d = make([][]float64, n)
	for i := range ad.d {
		ad.d[i] = make([]float64, n)
		for j := range ad.d[i] {
			switch {
			case i == j:
			case !numeric:
				ad.d[i][j] = 1
			default:
				ad.d[i][j] = 0.5 + 0.5*math.Abs(float64(rank[i]-rank[j]))/float64(n-1)
			}
		}
	}
	return ad
}

// numericRanks gives each value's rank among vs by value, when every one
// is a number.
func numericRanks(vs []string) ([]int, bool) {
	xs := make([]float64, len(vs))
	for i, v := range vs {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, false
		}
		xs[i] = x
	}
	rank := make([]int, len(vs))
	for i := range xs {
		for j := range xs {
			if xs[j] < xs[i] {
				rank[i]++
			}
		}
	}
	return rank, true
}

func (m *model) Next() []Proposal {
	if m.n >= m.budget {
		return nil
	}
	m.n++
	if m.budget-m.n < m.confN && (m.confN > 1 || m.leader != m.fastest) {
		// A single slot (a budget below 2·confirmEvery) is an eighth of
		// the search or more: it confirms only a statistical tie, where
		// the winner rule would not choose the fastest.
		if i, ok := m.confirm(); ok {
			return []Proposal{{Params: m.pts[i], Again: true}}
		}
	}
	i, ok := -1, false
	if len(m.order) >= min(m.seedN, 2) && m.n > m.seedN {
		i, ok = m.gp.propose(m.n%2 == 0)
	}
	if !ok {
		i, ok = m.spread()
	}
	if !ok {
		m.n = m.budget
		return nil
	}
	m.proposed[i] = true
	return []Proposal{{Params: m.pts[i]}}
}

func (m *model) Tell(p Proposal, o Observation) {
	m.leader, m.fastest = o.Leader, o.Fastest
	i, ok := m.index[p.Params.String()]
	if !ok {
		return
	}
	if !o.OK || !(o.Median > 0) {
		// A failure (a compile or launch error, a wrong result) is
		// observed as bad as the model reads anything (gp's cap), so
		// that the model does not keep proposing its neighbors as the
		// unknown.
		if m.obs[i] == nil {
			m.obs[i] = &seen{failed: true, times: 1}
			m.order = append(m.order, i)
			m.gp.add(i)
		}
		return
	}
	s := m.obs[i]
	if s == nil {
		s = &seen{}
		m.obs[i] = s
		m.order = append(m.order, i)
		defer m.gp.add(i)
	} else {
		defer m.gp.update(i)
	}
	lo, hi := o.Lo, o.Hi
	if !(lo > 0) || !(hi >= lo) {
		lo, hi = o.Median, o.Median
	}
	s.median, s.lo, s.hi, s.full, s.failed = o.Median, lo, hi, !o.Partial, false
	s.times++
}

// confirm picks a point to evaluate again so that noise does not choose
// the winner: the fastest until it was evaluated maxAgain times (its
// interval, which bounds the statistical tie, narrows), then the leader
// (the winner rule's choice) until it was too. It reports false when
// neither needs more.
func (m *model) confirm() (int, bool) {
	li, lok := m.index[m.leader]
	fi, fok := m.index[m.fastest]
	switch {
	case !lok || !fok:
		return 0, false
	case m.obs[fi].times < maxAgain:
		return fi, true
	case m.obs[li].times < maxAgain:
		return li, true
	}
	return 0, false
}

// spread picks the initial design's next point by Mitchell's best
// candidate: of 2k unproposed points drawn at random (k the points
// proposed so far; the first point is drawn at random), the one whose
// distance to the nearest proposed point is largest. A pure farthest
// point (every unproposed point a candidate) picks the corners of the
// space: a kernel space's odd combinations of values, often among its
// slowest points; the drawn candidates follow where the space's points
// lie, and as the design grows the draw nears the farthest point. It
// reports false when every point was proposed.
func (m *model) spread() (int, bool) {
	var chosen, free []int
	for i, p := range m.proposed {
		if p {
			chosen = append(chosen, i)
		} else {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return 0, false
	}
	best, bestD := -1, -1.0
	for range max(1, spreadCandidates*len(chosen)) {
		if len(free) == 0 {
			break
		}
		k := m.rng.IntN(len(free))
		i := free[k]
		free[k] = free[len(free)-1]
		free = free[:len(free)-1]
		d := math.Inf(1)
		for _, j := range chosen {
			d = min(d, m.dist(i, j, nil))
		}
		if d > bestD {
			best, bestD = i, d
		}
	}
	return best, true
}

// dist is the weighted distance between points i and j (weights nil:
// all 1).
func (m *model) dist(i, j int, w []float64) float64 {
	ci, cj := m.code[i], m.code[j]
	d := 0.0
	for a, ax := range m.axes {
		x := ax.d[ci[a]][cj[a]]
		if w != nil {
			x *= w[a]
		}
		d += x
	}
	return d
}
