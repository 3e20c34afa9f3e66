// Package ptxtest holds what the tests of kernels/ptx and the families
// share: structural checks of printed PTX (labels defined once and branched
// to only where defined, structured regions that nest, and register
// declarations that match the registers used), the golden-file comparison,
// the assembly sweep's verdicts (Assemble: a module's ptxas rejection, its
// reports' faults and warnings, through ptxas.Assembler.Check) and sorted
// problem reports. It reads the builder's printing conventions (register
// classes %p %h %r %rd %f %fd, generated labels $L_if<id>_... and
// $L_loop<id>_...), not PTX in general.
package ptxtest
