package search

import (
	"math"
	"sort"
)

// gp is the model's Gaussian process (see the package doc) over the log
// of the observed medians, with a constant mean. Its weights and nugget
// are refitted with every observation up to refitBelow of them, then
// once they have grown by a quarter; in between, an observation extends
// the Cholesky factor.
type gp struct {
	m     *model
	pts   []int     // observed points, in the factor's order
	raw   []float64 // their log medians (+Inf: a failure)
	y     []float64 // raw capped at the best plus capLog
	mean  float64
	w     []float64     // by axis
	tab   [][][]float64 // tables(w)
	eta   float64
	l     [][]float64 // lower Cholesky factor of R + eta·I
	beta  []float64   // l⁻¹ (y - mean)
	v     [][]float64 // by point: l⁻¹ r, r its correlations with pts
	norm2 []float64   // by point: |v|²
	fitN  int         // observations at the last refit
	dirty bool        // a median changed since
}

var (
	gpWeights   = []float64{0.125, 0.25, 0.5, 1, 2, 4}
	gpNuggets   = []float64{1e-4, 1e-3, 1e-2, 1e-1}
	gpMultiples = []float64{0, 0.25, 0.5, 1, 2, 4, 8}
)

// ardFrom: with fewer observations every axis keeps the one weight;
// ardPasses: the passes over the axes.
const (
	ardFrom   = 6
	ardPasses = 2
	fitMax    = 64
)

// refitBelow: below this many observations every one refits; above, a
// refit comes once they have grown by a quarter.
const refitBelow = 24

func (g *gp) corr(i, j int) float64 {
	ci, cj := g.m.code[i], g.m.code[j]
	k := 1.0
	for a, t := range g.tab {
		k *= t[ci[a]][cj[a]]
	}
	return k
}

// tables are, by axis, exp(-w·distance) between its values.
func (g *gp) tables(w []float64) [][][]float64 {
	out := make([][][]float64, len(w))
	for a, ax := range g.m.axes {
		out[a] = make([][]float64, len(ax.d))
		for x, row := range ax.d {
			out[a][x] = make([]float64, len(row))
			for y, d := range row {
				out[a][x][y] = math.Exp(-w[a] * d)
			}
		}
	}
	return out
}

// add takes in a newly observed point.
func (g *gp) add(i int) {
	g.pts = append(g.pts, i)
	g.raw = append(g.raw, g.m.obs[i].logY())
	g.y = append(g.y, 0)
	if g.capY() {
		g.dirty = true
	}
	n := len(g.pts)
	if g.dirty || n < refitBelow || 4*n >= 5*g.fitN || g.l == nil {
		g.refit()
		return
	}
	// Extend the factor by the new row: l⁻¹ r_i is v[i].
	li := g.v[i]
	d := math.Sqrt(max(1+g.eta-g.norm2[i], 1e-10))
	row := append(append([]float64(nil), li...), d)
	g.l = append(g.l, row)
	g.beta = append(g.beta, (g.y[n-1]-g.mean-dot(li, g.beta))/d)
	for c := range g.m.pts {
		x := (g.corr(c, i) - dot(g.v[c], li)) / d
		g.v[c] = append(g.v[c], x)
		g.norm2[c] += x * x
	}
}

// update takes in a new median of an observed point.
func (g *gp) update(i int) {
	for k, p := range g.pts {
		if p == i {
			g.raw[k] = g.m.obs[i].logY()
		}
	}
	g.capY()
	g.dirty = true
}

// capLog caps the fitted log medians at the best observed plus this (a
// factor of 1.5): a point 1.5 times slower than the best, 80 times
// slower (a kernel that thrashes) or failed is simply bad. Uncapped, the
// few such points set the process's scale (its variance and weights),
// and the differences that matter near the best read as noise.
var capLog = math.Log(1.5)

// capY sets y from raw and reports whether an earlier point's y changed
// (a new best moved the cap).
func (g *gp) capY() bool {
	best := math.Inf(1)
	for _, r := range g.raw {
		best = min(best, r)
	}
	if math.IsInf(best, 1) {
		best = 0 // only failures: all alike
	}
	changed := false
	for k, r := range g.raw {
		y := min(r, best+capLog)
		if k < len(g.y)-1 && y != g.y[k] {
			changed = true
		}
		g.y[k] = y
	}
	return changed
}

// refit chooses w and eta and computes the factor from scratch: first
// one weight for every axis and the nugget, from grids; then, axis by
// axis, a multiple of its weight (from 0: the axis does not matter, to
// 8), twice over, each choice the one of the highest marginal likelihood.
func (g *gp) refit() {
	n := len(g.pts)
	g.mean = 0
	for _, y := range g.y {
		g.mean += y / float64(n)
	}
	D := len(g.m.axes)
	// The weights and the nugget are chosen on the fitN fastest
	// observations at most: the region that matters, at a bounded cost.
	sub := make([]int, n)
	for k := range sub {
		sub[k] = k
	}
	sort.SliceStable(sub, func(a, b int) bool { return g.y[sub[a]] < g.y[sub[b]] })
	sub = sub[:min(n, fitMax)]
	hn := len(sub)
	c := make([]float64, hn)
	hmean := 0.0
	for _, k := range sub {
		hmean += g.y[k] / float64(hn)
	}
	for i, k := range sub {
		c[i] = g.y[k] - hmean
	}
	ll := func(w []float64, eta float64) float64 {
		tab := g.tables(w)
		l, ok := factorOf(hn, eta, func(i, j int) float64 {
			ci, cj := g.m.code[g.pts[sub[i]]], g.m.code[g.pts[sub[j]]]
			k := 1.0
			for a, t := range tab {
				k *= t[ci[a]][cj[a]]
			}
			return k
		})
		if !ok {
			return math.Inf(-1)
		}
		beta := forward(l, c)
		v := -float64(hn) / 2 * math.Log(max(dot(beta, beta)/float64(hn), 1e-300))
		for k := range l {
			v -= math.Log(l[k][k])
		}
		return v
	}
	w := make([]float64, D)
	bestLL, bw, be := math.Inf(-1), gpWeights[0], gpNuggets[0]
	for _, x := range gpWeights {
		for a := range w {
			w[a] = x
		}
		for _, eta := range gpNuggets {
			if v := ll(w, eta); v > bestLL {
				bestLL, bw, be = v, x, eta
			}
		}
	}
	for a := range w {
		w[a] = bw
	}
	if n >= ardFrom {
		for range ardPasses {
			for a := range w {
				cur := w[a]
				for _, k := range gpMultiples {
					w[a] = bw * k
					if v := ll(w, be); v > bestLL+1e-9 {
						bestLL, cur = v, w[a]
					}
				}
				w[a] = cur
			}
		}
	}
	g.w, g.eta, g.tab = w, be, g.tables(w)
	g.l, _ = g.factor()
	g.beta = forward(g.l, g.centered())
	g.v = make([][]float64, len(g.m.pts))
	g.norm2 = make([]float64, len(g.m.pts))
	r := make([]float64, n)
	for c := range g.m.pts {
		for k, p := range g.pts {
			r[k] = g.corr(c, p)
		}
		g.v[c] = forward(g.l, r)
		g.norm2[c] = dot(g.v[c], g.v[c])
	}
	g.fitN, g.dirty = n, false
}

func (g *gp) centered() []float64 {
	out := make([]float64, len(g.y))
	for k, y := range g.y {
		out[k] = y - g.mean
	}
	return out
}

// factor is the Cholesky factor of R + eta·I over pts.
func (g *gp) factor() ([][]float64, bool) {
	return factorOf(len(g.pts), g.eta, func(i, j int) float64 { return g.corr(g.pts[i], g.pts[j]) })
}

// factorOf is the Cholesky factor of the n×n matrix corr(i, j) (j ≤ i)
// plus eta on the diagonal; false when it is not positive definite.
func factorOf(n int, eta float64, corr func(i, j int) float64) ([][]float64, bool) {
	l := make([][]float64, n)
	for i := range n {
		l[i] = make([]float64, i+1)
		for j := 0; j <= i; j++ {
			s := corr(i, j)
			if i == j {
				s += eta
			}
			s -= dot(l[i][:j], l[j][:j])
			if i == j {
				if s <= 0 {
					return nil, false
				}
				l[i][i] = math.Sqrt(s)
			} else {
				l[i][j] = s / l[j][j]
			}
		}
	}
	return l, true
}

// propose returns the unproposed point of the highest expected
// improvement over the best observed log median, ties drawn at random;
// false when every point was proposed.
func (g *gp) propose(exploit bool) (int, bool) {
	if g.dirty {
		g.refit()
	}
	n := len(g.pts)
	sf2 := max(dot(g.beta, g.beta)/float64(n), 1e-12)
	best := math.Inf(1)
	for _, y := range g.y {
		best = min(best, y-g.mean)
	}
	pick, pickEI, ties := -1, -1.0, 0
	for c := range g.m.pts {
		if g.m.proposed[c] {
			continue
		}
		mu := dot(g.v[c], g.beta)
		sd := math.Sqrt(sf2 * max(1-g.norm2[c], 1e-12))
		z := (best - mu) / sd
		ei := (best-mu)*normCDF(z) + sd*normPDF(z)
		if exploit {
			ei = math.Exp(-mu) // the lowest predicted time
		}
		switch {
		case ei > pickEI*(1+1e-9):
			pick, pickEI, ties = c, ei, 1
		case ei >= pickEI*(1-1e-9):
			ties++
			if g.m.rng.IntN(ties) == 0 {
				pick = c
			}
		}
	}
	return pick, pick >= 0
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// forward solves l·x = b for lower-triangular l.
func forward(l [][]float64, b []float64) []float64 {
	x := make([]float64, len(b))
	for i := range b {
		x[i] = (b[i] - dot(l[i][:i], x[:i])) / l[i][i]
	}
	return x
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
func normPDF(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
