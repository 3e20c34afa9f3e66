// Package sweep decides how much of the exhaustive test sweeps a test run
// takes, at one of three levels that GRADTUNE_SWEEP names:
//
//   - unset or empty (the README's `go test ./...`): a sweep of "one in n"
//     takes one item in SampleFactor·n, so that the README's command stays
//     within 3 minutes on two cores;
//   - ci (what .ci/run sets): one in Every(n) = ⌈n/CIFactor⌉,
//     SampleFactor·CIFactor times as many, sized so that .ci/run stays
//     within 30 minutes on two cores;
//   - full: every item (GRADTUNE_PTXAS_ALL=1, its older name, means the
//     same). Nothing runs it on a schedule; run it by hand after changing a
//     family's space or emitter.
//
// Any other value is a mistake and panics, naming the accepted ones.
//
// Every sample is deterministic: the same items on every run at a level.
// Pick and PickGroups, for sweeps over spaces' points (one group per
// shape), take every value of every axis that the points hold at least
// once and a point of every shape (a greedy cover), then points spread
// evenly over each shape's enumeration order up to one in Every(n): a
// value is never left out because a stride aliases with an axis's period. Take and
// TakeKeyed, for sweeps over other lists, keep one index in Every(n)
// (TakeKeyed shifted by a hash of its key, so that the sweeps of
// different shapes take different items); they give no per-axis promise
// and suit lists without axes (distinct programs, shapes).
package sweep

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"

	"github.com/gradtune/gradtune/variants"
)

// A sweep of "one in n" takes one in SampleFactor·n by default and one
// in ⌈n/CIFactor⌉ with GRADTUNE_SWEEP=ci.
const (
	SampleFactor = 8
	CIFactor     = 4
)

// Level is how much of the sweeps a run takes.
type Level int

// The levels, in increasing order of what they take.
const (
	Sample Level = iota // the default
	CI                  // GRADTUNE_SWEEP=ci
	All                 // GRADTUNE_SWEEP=full
)

// Current is the level GRADTUNE_SWEEP (or GRADTUNE_PTXAS_ALL=1) asks for.
func Current() Level {
	if os.Getenv("GRADTUNE_PTXAS_ALL") == "1" {
		return All
	}
	switch v := os.Getenv("GRADTUNE_SWEEP"); v {
	case "":
		return Sample
	case "ci":
		return CI
	case "full":
		return All
	default:
		panic(fmt.Sprintf("GRADTUNE_SWEEP=%q: want empty (a sample), ci or full", v))
	}
}

// Full reports whether the exhaustive sweeps are asked for.
func Full() bool { return Current() == All }

// ByDefault is atDefault at the default level and deeper with
// GRADTUNE_SWEEP=ci or full: a count a test lowers where the README's
// command must stay short.
func ByDefault(atDefault, deeper int) int {
	if Current() == Sample {
		return atDefault
	}
	return deeper
}

// Every is the stride of a sweep of one in n at the current level:
// SampleFactor·n by default, ⌈n/CIFactor⌉ with GRADTUNE_SWEEP=ci, 1 with
// full.
func Every(n int) int {
	switch Current() {
	case All:
		return 1
	case CI:
		return max(1, (n+CIFactor-1)/CIFactor)
	}
	return max(1, SampleFactor*n)
}

// Take reports whether item i of a sweep is in its sample of one in every
// n items (one in Every(n)).
func Take(i, n int) bool { return i%Every(n) == 0 }

// TakeKeyed is Take with the sample shifted by a hash of key, so that the
// sweeps of different shapes (keys) sample different items.
func TakeKeyed(key string, i, n int) bool {
	e := Every(n)
	h := fnv.New32a()
	h.Write([]byte(key))
	return (i+int(h.Sum32()%uint32(e)))%e == 0
}

// Pick returns the points of a sweep of one in n over points (a space's,
// in enumeration order): PickGroups of the one group.
func Pick(points []variants.Params, n int) []variants.Params {
	return PickGroups([][]variants.Params{points}, n)[0]
}

// PickGroups returns the points of a sweep of one in n over groups of
// points (the spaces of a test's shapes, each in enumeration order): every
// value of every axis that some group holds at least once, and at least
// one point of every group that has one (a greedy cover, which prefers the
// earlier group and point among equals: list cheap shapes first); then, in
// each group, up to ⌈len/Every(n)⌉ points spread evenly. Each group's
// points stay in enumeration order. With Every(n) = 1 it returns groups.
func PickGroups(groups [][]variants.Params, n int) [][]variants.Params {
	e := Every(n)
	if e <= 1 {
		return groups
	}
	chosen := cover(groups)
	out := make([][]variants.Params, len(groups))
	for g, points := range groups {
		want := (len(points) + e - 1) / e
		for k := 0; len(chosen[g]) < want && k < want; k++ {
			chosen[g][(2*k+1)*len(points)/(2*want)] = true
		}
		for i, p := range points {
			if chosen[g][i] {
				out[g] = append(out[g], p)
			}
		}
	}
	return out
}

// cover returns, per group, a set of indices of its points such that the
// sets hold every axis value the groups hold and a point of every
// non-empty group: greedily, the point with the most of these not yet
// held (the first of equals), until none is missing.
func cover(groups [][]variants.Params) []map[int]bool {
	held := make([][][]string, len(groups)) // the values each point holds, its group first
	missing := map[string]bool{}
	chosen := make([]map[int]bool, len(groups))
	for g, points := range groups {
		chosen[g] = map[int]bool{}
		held[g] = make([][]string, len(points))
		for i, p := range points {
			vs := []string{"group " + strconv.Itoa(g)}
			for k, v := range p {
				vs = append(vs, k+"="+v)
			}
			held[g][i] = vs
			for _, v := range vs {
				missing[v] = true
			}
		}
	}
	for len(missing) > 0 {
		bestG, bestI, gain := -1, -1, 0
		for g, points := range held {
			for i, vs := range points {
				n := 0
				for _, v := range vs {
					if missing[v] {
						n++
					}
				}
				if n > gain {
					bestG, bestI, gain = g, i, n
				}
			}
		}
		chosen[bestG][bestI] = true
		for _, v := range held[bestG][bestI] {
			delete(missing, v)
		}
	}
	return chosen
}

// Describe says what a sweep of one in n takes at the current level, for
// test logs.
func Describe(n int) string {
	switch e := Every(n); {
	case Current() == All:
		return "all (GRADTUNE_SWEEP=full)"
	case e <= 1:
		return "all"
	case Current() == CI:
		return "a sample of one in " + strconv.Itoa(e) + " (GRADTUNE_SWEEP=ci; full takes all)"
	default:
		return "a sample of one in " + strconv.Itoa(e) + " (GRADTUNE_SWEEP=ci takes " + strconv.Itoa(SampleFactor*CIFactor) + " times as many, full all)"
	}
}
