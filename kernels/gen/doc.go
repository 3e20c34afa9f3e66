// Package gen is the generator library the kernel families share, on top
// of the PTX builder: vector loads and stores of any dtype (words moved
// raw, widened to f32 after a load and rounded to nearest even before a
// store), guarded f32 vectors, pairwise sums, predicate helpers, the
// regrouping of an mma accumulator fragment's rows between lane pairs
// (QuadRows) and the integer arithmetic of launch geometry.
package gen
