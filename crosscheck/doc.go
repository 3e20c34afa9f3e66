// Package crosscheck runs the same small cases on a GPU and on the CPU
// interpreter (runner/sim) and compares every output element, so that the
// interpreter, which check relies on, stays faithful to the hardware.
//
// Pick spreads cases over families, their dtypes, their small shapes
// (package smallshapes) and their variants, deterministically for a seed.
// Run validates each case on the interpreter first (in parallel), then on
// the GPU, skipping there what faulted on the interpreter (a fault would
// spoil the CUDA context for the cases after it), and then runs the
// interpreter's probes (tensor-core and cp.async layouts) on both.
//
// A case's verdict: identical (every bit), within (not identical, within
// tolerance, and the program's math is not exactly rounded), differs
// (exactly rounded, within tolerance, not identical), disagree (one side
// passes validation, the other fails), outside (beyond the tolerance), or
// error. Only identical and within pass.
//
// Results are JSON lines, one per case or probe. WriteFile writes them
// through a temporary file renamed into place, and refuses to replace a
// file that is not a crosscheck output unless forced, and an SQLite
// database whatever the force.
package crosscheck
