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
//   - model: Bayesian optimization over the typed axes. An initial
//     design of a third of the budget (3 to 10 points) spreads out by
//     Mitchell's best candidate: the first point is drawn at random, each
//     next one is, of 2k unproposed points drawn at random (k the points
//     proposed so far), the one farthest from those proposed (distances
//     below). (The farthest point of the whole space would pick its
//     corners, a kernel space's odd combinations, often its slowest.)
//     Then a Gaussian process fitted to the log of the observed medians
//     (partial and abandoned ones included), capped at the best plus
//     log 1.5, proposes, in turn, the unproposed point of the highest
//     expected improvement and the one of the lowest predicted time. A
//     failed point (compile or launch error, wrong result) is observed
//     at the cap: as bad as anything. The cap keeps a few very slow or
//     failed points from setting the process's scale. Its kernel is
//     exp(-Σ w_a·d_a) over the axes: d_a is 0 between equal values, 1
//     between two values of a categorical axis, and between two values
//     of a numeric axis 1/2 plus 1/2 of how far apart they lie in the
//     axis's order. The weights w_a and the nugget (noise and misfit) are
//     those of the highest marginal likelihood, one weight for all axes
//     from a grid, then each axis's own (0 to 8 times it) once six points
//     were observed.
//   - Confirmation (model): the last fifth of the budget (1 to 6
//     evaluations; none below 4) re-measures (Proposal.Again) the fastest
//     full evaluation, then the leader the winner rule would choose, up
//     to three evaluations each, so that noise and a statistical tie do
//     not pick a loser; the runner pools a re-measured point's samples
//     with its earlier ones. A slot neither needs goes to the search, and
//     so does a budget's single slot (budgets below 10) unless the leader
//     is not the fastest (a tie the winner rule decides): there it is an
//     eighth of the search or more.
//
// Budget is a number of full evaluations per shape; DefaultBudget is 10%
// of the space (at least 8 points). Replay (tune replay) judges the
// strategies offline on recorded databases; docs/replay.md holds the
// table.
package search
