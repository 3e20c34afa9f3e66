package lppool

// gatherPlan is what a gather unit computes, fixed when the kernel is
// generated. Unit q of a row owns elements [q·E, q·E+E), E = G·s, and
// window slot d is window q·G − back + d.
type gatherPlan struct {
	G, E, V, back, nw, U int
	cover                [][]int // cover[e]: the slots whose windows cover element e
	loQ                  []int   // slot d is a window (≥ 0) iff q ≥ loQ[d]; 0: always
	hiQ                  []int   // slot d is a window (< Lout) iff q < hiQ[d]; −1: always
	lastQ                []int   // slot d is the clipped last window iff q == lastQ[d]; −1: never
	tailQ                []int   // vector v lies inside the row iff q < tailQ[v]; −1: always
}

func newGatherPlan(g geom, G, V int) gatherPlan {
	pl := gatherPlan{G: G, E: G * g.s, V: V, back: (g.k - 1) / g.s}
	pl.nw = G + pl.back
	pl.U = ceilDiv(g.l, pl.E)
	pl.cover = make([][]int, pl.E)
	for e := range pl.cover {
		for d := 0; d < pl.nw; d++ {
			if lo := (d - pl.back) * g.s; lo <= e && e < lo+g.k {
				pl.cover[e] = append(pl.cover[e], d)
			}
		}
	}
	for d := 0; d < pl.nw; d++ {
		lo := 0
		if d < pl.back {
			lo = ceilDiv(pl.back-d, G) // q·G ≥ back − d
		}
		pl.loQ = append(pl.loQ, lo)
		hi := -1
		if (pl.U-1)*G-pl.back+d >= g.lout { // q·G − back + d < Lout
			hi = max(0, ceilDiv(g.lout+pl.back-d, G))
		}
		pl.hiQ = append(pl.hiQ, hi)
		last := -1
		if t := g.lout - 1 + pl.back - d; g.partial() && t >= 0 && t%G == 0 && t/G < pl.U {
			last = t / G
		}
		pl.lastQ = append(pl.lastQ, last)
	}
	for v := 0; v < pl.E/V; v++ {
		t := -1
		if (pl.U-1)*pl.E+v*V >= g.l { // q·E + v·V < L
			t = max(0, ceilDiv(g.l-v*V, pl.E))
		}
		pl.tailQ = append(pl.tailQ, t)
	}
	return pl
}

// scatterPlan is what a scatter thread computes. Group q of a row owns
// windows q·G + j, j < G, which cover elements q·G·s + e, e < span.
type scatterPlan struct {
	G, span, WG int
	cover       [][]int // cover[e]: the slots j whose windows cover element e
	winHiQ      []int   // slot j is a window (< Lout) iff q < winHiQ[j]; −1: always
	elemHiQ     []int   // element e lies inside the row iff q < elemHiQ[e]; −1: always
	lastQ       []int   // slot j is the clipped last window iff q == lastQ[j]; −1: never
	excl        []bool  // no other group's window covers element e
}

func newScatterPlan(g geom, G int) scatterPlan {
	pl := scatterPlan{G: G, span: (G-1)*g.s + g.k, WG: ceilDiv(g.lout, G)}
	pl.cover = make([][]int, pl.span)
	for e := range pl.cover {
		for j := 0; j < G; j++ {
			if j*g.s <= e && e < j*g.s+g.k {
				pl.cover[e] = append(pl.cover[e], j)
			}
		}
		hi := -1
		if (pl.WG-1)*G*g.s+e >= g.l {
			hi = max(0, ceilDiv(g.l-e, G*g.s))
		}
		pl.elemHiQ = append(pl.elemHiQ, hi)
		pl.excl = append(pl.excl, e >= max(0, g.k-g.s) && e < G*g.s)
	}
	for j := 0; j < G; j++ {
		hi := -1
		if (pl.WG-1)*G+j >= g.lout {
			hi = max(0, ceilDiv(g.lout-j, G))
		}
		pl.winHiQ = append(pl.winHiQ, hi)
		last := -1
		if t := g.lout - 1 - j; g.partial() && t >= 0 && t%G == 0 {
			last = t / G
		}
		pl.lastQ = append(pl.lastQ, last)
	}
	return pl
}
