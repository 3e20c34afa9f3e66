// Package isa is the PTX instruction set in one table: one Row per
// instruction with its operand kinds, the state spaces it takes, its
// effects (destination, memory reads and writes, atomicity, barrier,
// warp-synchronous or warp-collective execution, branches, exits, fences,
// asynchronous completion) and the minimum target and PTX ISA version of
// each form. Three readers share it:
//
//   - the builder (kernels/ptx) derives an instruction's .target and
//     .version from its row and checks its operands against the row's
//     kinds;
//   - the static analyses (kernels/ptx) read barriers, warp-synchronous
//     and warp-collective instructions, destinations, purity and memory
//     accesses off the row;
//   - the interpreter (runner/sim) decodes an opcode by finding its row
//     and the semantics it keeps under the row's name, and rejects an
//     opcode without a row.
//
// An opcode belongs to the row with the longest Name it begins with, in
// whole dot-separated components: ld.global.nc.v4.f32 is a form of "ld",
// cp.async.wait_group has a row of its own beside "cp.async". What
// follows the name are qualifiers; Row.Quals returns them, Row.Space the
// state spaces they name, Row.Target what the form needs.
//
// # Adding an instruction
//
// An instruction is a row plus its semantics. Take stmatrix (sm_90, PTX
// ISA 7.8): each lane of the warp stores one 16-byte row of 8×8 matrices
// to shared memory.
//
// 1. The row, in table.go:
//
//	{Name: "stmatrix.sync", Args: as, Spaces: Shared, Effects: Store | Aligned, SM: 90, PTX: 78},
//
// With the row alone, Raw(0, 0, "stmatrix.sync.aligned.m8n8.x1.shared.b16",
// addr, vec) raises the module to sm_90 and PTX 7.8 and is refused unless
// it gets an address and a source; the analyses require all 32 lanes at
// it (Aligned) and bound its shared access; the interpreter reports it
// unsupported rather than unknown (TestRowAlone in kernels/ptx and TestDecodeByRow in runner/sim
// show it).
//
// 2. Its semantics, where they say more than the effects: a builder
// helper with typed operands (see tensor.go's Ldmatrix), the bytes one
// lane accesses for the shared-bounds rule (accessBytes in
// kernels/ptx/analysis.go) and, for a result the analyses should bound,
// a case in compute (analysis_values.go); in runner/sim a decoder
// registered under the row's name in semantics (decode.go) and the
// execution of the opcode it decodes to (exec.go, warpops.go).
//
// Forms that need more than the row's minimum are Raise entries: a
// qualifier (red's .v4 needs sm_90 and PTX 8.1) or a rule over the
// qualifiers (cvt from bf16). A row marked ArchSpecific (wgmma,
// setmaxnreg) needs the architecture-specific target: the module is
// printed with .target sm_90a, which runs on sm_90 devices only.
// WarpGroup marks warpgroup-collective rows (all 128 threads of a
// warpgroup execute them together); they are Aligned as well.
//
// Operands and directives that raise the target have small tables of
// their own beside the rows: special registers (LookupSReg: the cluster's,
// %cluster_ctarank and the like, need sm_90 and PTX 7.8) and kernel
// directives (LookupDirective: .reqnctapercluster).
//
// The tests of kernels/ptx and runner/sim check that the readers agree
// with the table: every opcode the builder's helpers emit has a row and
// the target the row gives, and every row the interpreter has semantics
// for exists.
package isa
