package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/gradtune/gradtune/variants"
)

// Proposal is one evaluation a strategy asks for.
type Proposal struct {
	Params variants.Params
	// Samples caps the evaluation's samples (a short look of successive
	// halving, recorded as partial); 0 asks for the full protocol.
	Samples int
	// Again asks to measure a point the search evaluated before once more
	// (never answered from earlier runs): its samples join the earlier
	// ones, so that its interval narrows.
	Again bool
}

// Observation is what an evaluation found, as a strategy sees it.
type Observation struct {
	// OK: the variant is valid and Median is its time in µs, Lo and Hi
	// its 95% confidence interval (over every sample the point's
	// evaluations took).
	OK             bool
	Median, Lo, Hi float64
	// Partial: from a short look or an abandoned measurement; such a
	// point never wins.
	Partial bool
	// Leader and Fastest are the points (Params.String) the winner rule
	// would choose among the full evaluations so far (the fastest, or in
	// a statistical tie the one of fewest resources; runner.Choose) and
	// the fastest of them; empty before the first.
	Leader, Fastest string
}

// Strategy proposes evaluations and learns from their outcomes.
type Strategy interface {
	// Next returns the next proposals; none when the search is over.
	// Every proposal is told before Next is called again.
	Next() []Proposal
	// Tell reports what the evaluation of a proposal found.
	Tell(p Proposal, o Observation)
}

// Names lists the strategies, default non-exhaustive one second.
func Names() []string { return []string{"exhaustive", "model", "random", "halving"} }

// Config selects and parameterizes a strategy.
type Config struct {
	Name string
	// Budget is the number of full evaluations per shape, or Fraction of
	// the space's points when that is positive; neither: every point for
	// exhaustive, DefaultBudget for random and model. Halving ignores
	// both.
	Budget   int
	Fraction float64
	Seed     uint64
	// Points are the space's points when the caller has them (nil: New
	// enumerates the space).
	Points []variants.Params
}

// ParseName checks a strategy name.
func ParseName(s string) (string, error) {
	for _, n := range Names() {
		if s == n {
			return n, nil
		}
	}
	return "", fmt.Errorf("strategy %q: want %s", s, strings.Join(Names(), ", "))
}

// DefaultBudget is the budget of a non-exhaustive strategy over n points:
// 10% of them, at least 8 (all of them when fewer).
func DefaultBudget(n int) int { return min(n, max(8, (n+9)/10)) }

// budget resolves c.Budget over n points.
func (c Config) budget(n int) int {
	switch {
	case c.Budget > 0:
		return min(c.Budget, n)
	case c.Fraction > 0:
		return min(n, max(1, int(math.Ceil(c.Fraction*float64(n)))))
	case c.Name == "exhaustive":
		return n
	}
	return DefaultBudget(n)
}

// New starts a strategy over the points of space that agree with fix.
// Its proposals are always among those points.
func New(c Config, space variants.Space, fix variants.Params) (Strategy, error) {
	all := c.Points
	if all == nil {
		all = space.Enumerate()
	}
	pts := variants.Filter(all, fix)
	b := c.budget(len(pts))
	rng := rand.New(rand.NewPCG(c.Seed, 0x73656172))
	switch c.Name {
	case "", "exhaustive":
		return &fixedList{list: variants.Spread(pts, b)}, nil
	case "random":
		perm := rng.Perm(len(pts))
		list := make([]variants.Params, b)
		for i := range list {
			list[i] = pts[perm[i]]
		}
		return &fixedList{list: list}, nil
	case "halving":
		return newHalving(pts, DefaultRungs), nil
	case "model":
		return newModel(space, pts, b, rng), nil
	}
	_, err := ParseName(c.Name)
	return nil, err
}

// fixedList proposes a list decided up front, all at once.
type fixedList struct {
	list []variants.Params
	done bool
}

func (f *fixedList) Next() []Proposal {
	if f.done {
		return nil
	}
	f.done = true
	out := make([]Proposal, len(f.list))
	for i, p := range f.list {
		out[i] = Proposal{Params: p}
	}
	return out
}

func (f *fixedList) Tell(Proposal, Observation) {}
