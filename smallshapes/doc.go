// Package smallshapes picks shapes of a kernel family that the CPU
// interpreter runs in milliseconds: the generic edge cases every family
// may accept (a single element, a single row or column, extents that divide
// no tile or vector width) and the family's preset shapes shrunk extent by
// extent. Cross-checks between the GPU and the interpreter, and tests that
// run many variants on the interpreter, take their shapes from here.
//
// It uses only the kernels.Family interface, so it knows no family's
// internals, and imports neither the interpreter nor the runner.
package smallshapes
