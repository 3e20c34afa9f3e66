// Package ptx is a builder for PTX, the virtual instruction set of NVIDIA
// GPUs, modelled on avo: typed virtual registers, operands, instruction
// helpers that check operand types, structured control flow that generates
// its own labels, kernel directives, and a printer.
//
// A Module collects kernels; each kernel is written through a *Func, the
// build context. Mistakes (a float register given to an integer
// instruction, a vector of the wrong length, an unknown special register)
// do not panic: they are recorded with the caller's file and line, and
// Module.Build returns them all at once.
//
//	m := ptx.NewModule()
//	k := m.Func("scale")
//	p := k.Param("buf", ptx.U64)
//	...
//	mod, err := m.Build()
//	text := mod.String()
//
// Registers are printed in classes (%p pred, %h b16, %r b32, %rd b64, %f
// f32, %fd f64) and declared by the printer. Floating-point add, sub, mul
// and fma always carry .rn so that ptxas cannot contract them differently
// from what a CPU interpreter computes. Approximate instructions (ex2,
// tanh, rsqrt) are only emitted through helpers whose names say Approx.
//
// What an instruction is comes from one table, package isa: one row per
// instruction with its operand kinds, state spaces, effects and minimum
// target and PTX ISA version. The builder, the analyses and the CPU
// interpreter (runner/sim) all read it; see package isa for how to add an
// instruction.
//
// The .version and .target lines are derived from the instructions used:
// sm_80 and PTX ISA 7.0 are the baseline; an instruction whose row needs
// more raises them (bf16 arithmetic: sm_90, PTX 7.8), and so do the
// special registers and directives package isa lists (%cluster_ctarank,
// .reqnctapercluster: sm_90, PTX 7.8). A row marked ArchSpecific (wgmma,
// setmaxnreg) makes the target sm_90a, which ptxas assembles for sm_90a
// only. Every instruction's
// operands, Raw's included, are counted and matched to the kinds its row
// lists (a destination, a source, an address, a label, a member mask).
//
// The checks follow what ptxas accepts, so that a module that builds also
// assembles: arithmetic takes integer or float types, never bit types
// (add.b32 does not exist); shl is printed for bit types only; mov of
// half-precision types moves bits; cvt must carry the rounding mode PTX
// requires for the conversion and no other; atom and red take only the
// types PTX allows each operation, with .noftz on half-precision adds;
// 32-bit address registers are for shared memory only; dynamic shared
// memory is declared at module scope; negative address offsets print as
// [base+-8]. Raw writes anything else, and Label places raw branch
// targets, which Build checks are placed.
//
// Build also runs static analyses on every kernel (analysis.go), which
// take barriers, warp-synchronous and warp-collective instructions, shared
// accesses, destinations and purity from the rows: bar.sync
// only under CTA-uniform control flow, shfl.sync (and the other
// warp-synchronous instructions) with a member mask equal to the lanes
// that reach it, and shared-memory accesses within their array where the
// index is bounded. Each violation is an *UnsafeError, naming the kernel,
// the instruction as printed, the rule and the reason ("under the
// condition %p3, which depends on %tid.x"); all of them wrap ErrUnsafe,
// so that callers can tell an unsafe variant (errors.Is(err, ErrUnsafe))
// from a builder error. The analyses run only on kernels that built
// without errors. For Hopper they also check that warpgroup-collective
// instructions (wgmma, setmaxnreg) run under warpgroup-uniform control,
// that wgmma tiles start at swizzle-atom boundaries where the address is
// provable, and that an mbarrier wait in a loop does not wait on the same
// phase parity in every iteration.
//
// # Hopper
//
// insts_hopper.go and insts_tma.go hold the sm_90 helpers a tensor-core
// GEMM needs, each documented with its contract:
//
//   - warpgroup MMA: WgmmaAcc (N/2 f32 accumulators), WgmmaDesc (the
//     64-bit shared-memory descriptor of a tile from its 32-bit shared
//     address, LBO, SBO and Swizzle), WgmmaDescAdd (k steps), Wgmma (A
//     and B descriptors) and WgmmaRegA (A in registers) with WgmmaOpts
//     (scale-d, negation, transposition), WgmmaFence, WgmmaCommit,
//     WgmmaWait; SetMaxNReg (needs MaxNReg: Build reports it missing);
//   - mbarriers: MbarInit, MbarArrive (the state), MbarArriveDrop (`_`),
//     MbarArriveExpectTx, MbarArriveCluster (remote, after Mapa),
//     MbarTryWait and MbarWait (a loop until the phase of a parity
//     completes);
//   - TMA: TensorMapParam (a `.param .align 64 .b8 name[128]` the runner
//     fills with a tensor map by value), TensorMapAddr (its generic
//     address, the operand ptxas takes), TmaLoad, TmaLoadMulticast,
//     TmaLoadHinted (with an L2 eviction policy from CreatePolicy),
//     TmaStore, BulkCommit, BulkWait;
//   - FenceProxyAsync, FenceMbarrierInit, ClusterArrive, ClusterWait,
//     Mapa, the cluster special registers (ClusterCtaRank ...),
//     ReqNCtaPerCluster, ElectSync, Stmatrix (and, of sm_80, MmaSync and
//     Ldmatrix in tensor.go).
//
// Sink (`_`), DstPair (d|p) and TensorAddr ([map, {coords}]) are the
// operands they print, available to Raw too. The analyses add three
// rules for them (RuleWarpGroup, RuleSwizzleAlign, RuleMbarPhase; see
// analysis.go).
//
// The package knows about no kernel in particular.
package ptx
