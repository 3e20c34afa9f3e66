package runner

import (
	"fmt"
	"math"
	"sort"
)

// WinnerRule is how Choose picks the winner of a shape, stated once for
// the documentation, the table and the database.
const WinnerRule = "the fastest median; among the variants whose 95% CI overlaps the fastest's (a statistical tie), " +
	"the fewest registers, then the least shared memory, then the lowest median"

// Choice is the winner of a shape and how it was chosen.
type Choice struct {
	Best *Result
	// Fastest is the variant with the lowest median; Best differs from it
	// only when they are tied.
	Fastest *Result
	// Ties counts the other variants whose 95% CI overlaps Fastest's.
	Ties int
	// Rule says what decided: "fastest, no tie", or which criterion broke
	// the tie.
	Rule string
}

// Choose picks the winner among valid results (status ok, a median) by
// WinnerRule. Fewer registers and less shared memory leave more room to
// other kernels and to occupancy when the time cannot tell variants
// apart. It returns a zero Choice when there is no valid result.
func Choose(valid []*Result) Choice {
	var rs []*Result
	for _, r := range valid {
		if r != nil && r.Stats.Median > 0 {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return Choice{}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Stats.Median < rs[j].Stats.Median })
	fast := rs[0]
	_, hi := ci(fast)
	tied := []*Result{fast}
	for _, r := range rs[1:] {
		if lo, _ := ci(r); lo <= hi {
			tied = append(tied, r)
		}
	}
	c := Choice{Best: fast, Fastest: fast, Ties: len(tied) - 1, Rule: "fastest, no tie"}
	if len(tied) == 1 {
		return c
	}
	sort.SliceStable(tied, func(i, j int) bool {
		a, b := tied[i], tied[j]
		if a.Registers != b.Registers {
			return a.Registers < b.Registers
		}
		if a.SmemBytes != b.SmemBytes {
			return a.SmemBytes < b.SmemBytes
		}
		return a.Stats.Median < b.Stats.Median
	})
	c.Best = tied[0]
	c.Rule = tieRule(c.Best, tied[1:], c.Ties)
	return c
}

// tieRule names the criterion that put best before the others of a tie.
func tieRule(best *Result, others []*Result, ties int) string {
	regs, smem := true, true
	for _, r := range others {
		regs = regs && r.Registers > best.Registers
		smem = smem && (r.Registers > best.Registers || r.SmemBytes > best.SmemBytes)
	}
	switch {
	case regs:
		return fmt.Sprintf("tie of %d: fewest registers (%d)", ties+1, best.Registers)
	case smem:
		return fmt.Sprintf("tie of %d: fewest registers (%d), then least shared memory (%d B)", ties+1, best.Registers, best.SmemBytes)
	}
	return fmt.Sprintf("tie of %d: same registers (%d) and shared memory (%d B); lowest median", ties+1, best.Registers, best.SmemBytes)
}

// ci is r's interval, or its median at both ends when there is none.
func ci(r *Result) (lo, hi float64) {
	lo, hi = r.Stats.Lo, r.Stats.Hi
	if !(lo > 0) || !(hi > 0) || hi < lo || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return r.Stats.Median, r.Stats.Median
	}
	return lo, hi
}
