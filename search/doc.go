// Package search decides which variants of a space a tune run evaluates,
// and how many samples each gets: the strategies behind tune --strategy.
//
// A Strategy proposes points of an untyped variants.Space (every proposal
// is a point Enumerate lists, so every constraint holds) and is told what
// each evaluation found. Strategies are deterministic given their seed:
// the same observations give the same proposals.
//
//   - exhaustive: every point, in enumeration order (with a budget, that
//     many points spread evenly: the old --budget).
//   - random: a uniform sample of Budget points without replacement.
//   - halving: successive halving. Every point gets a short look (Rungs[0]
//     samples), the best third of them a longer one, and so on; the last
//     rung's survivors are evaluated with the full protocol (Samples 0).
//     Only full evaluations may win: a look is recorded as partial.
//   - model: an evolutionary search over the typed axes. A random third
//     of the budget seeds a population; then, while the best point so far
//     has an unproposed neighbor (a point of the space differing in one
//     axis), one of those is proposed (coordinate descent); otherwise the
//     proposal mutates one
//     or two axes of an elite (the best point with probability 0.6, else
//     one of the five best), sometimes after crossing it with another
//     elite, moving an axis to an adjacent value or to any value; a child
//     that is not a point of the space or was already proposed is redrawn,
//     and after 64 failed draws a random unproposed point is taken.
//
// Budget is a number of full evaluations per shape; DefaultBudget is 10%
// of the space (at least 8 points). Replay (tune replay) judges the
// strategies offline on recorded databases; docs/replay.md holds the
// table.
package search
