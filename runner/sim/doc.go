// Package sim is a CPU interpreter of the PTX that kernels/ptx prints,
// with CUDA semantics, behind runner.Backend: validation code runs on it
// unchanged, on any machine. It proves variants correct; it never times
// them (tune refuses to time on it).
//
// # What it executes
//
// Parse reads the printer's dialect (registers declared in %x<N> ranges,
// structured-control-flow labels, 0fXXXXXXXX immediates, vector operands)
// and rejects anything else with an ErrParse naming the line. Instructions
// are decoded once into small opcodes with every operand a register slot
// (immediates, symbol addresses and special registers get slots of their
// own), labels into instruction indexes.
//
// An opcode is decoded through its row in the ISA table (kernels/ptx/isa),
// the one list of instructions the builder, its analyses and this
// interpreter share: an opcode without a row is an unknown instruction, a
// row's operand count is checked here, and the decoder of a row's
// instructions is registered under the row's name (semantics, in
// decode.go). A row without a decoder is an instruction the interpreter
// does not support; both are ErrParse errors naming the line.
//
// A launch runs CTAs of up to 1024 threads in warps of 32. A warp executes
// its active lanes together, instruction by instruction; divergence is
// handled by per-lane program counters and min-pc scheduling (the lanes
// at the smallest pc run; lanes meet again where their pcs meet), which
// reconverges structured code at the end of every if and loop. Warps of a
// CTA run one after another until each reaches a barrier or exits. CTAs
// run on Options.Workers goroutines; results are the same whatever the
// worker count, except that float atomics of different CTAs on one
// address add in a different order (as on a GPU). CTAs (clusters) start
// in index order and each runs to its end, global atomics are atomic
// across workers: a CTA may spin on a flag that a lower-numbered CTA
// raises (stream-K's fix-up), never on one a higher-numbered CTA raises
// (with one worker that CTA has not started: the spin ends in
// ErrTimeout).
//
// Covered: ld.param, ld/st in the global, shared (static and dynamic),
// local and generic spaces including .v2/.v4 and cache qualifiers (which
// have no effect); cvta; integer add/sub/mul.lo/hi/wide, mad, div, rem,
// min, max, neg, abs, logic and shifts, popc, clz, brev, bfind, bfe, prmt;
// float add/sub/mul/fma/div/min/max/neg/abs/rcp/sqrt in f32 and f64, in
// f16, bf16, f16x2 and bf16x2 (add, sub, mul, fma, min, max, neg, abs);
// the .approx functions; setp (all comparisons, boolean forms, p|q),
// selp; cvt between all integer and float types with every rounding mode,
// .ftz and .sat, and cvt.rn.{f16x2,bf16x2}.f32; mov including pack and
// unpack ({lo, hi}); testp; min and max with .NaN; bra, ret, exit, trap, brkpt (an
// illegal instruction without a debugger, as on a GPU);
// bar.sync, bar.arrive, bar.red (popc, and, or) and their barrier.*
// forms on the 16 named barriers, with thread counts (see Barriers),
// bar.warp.sync, membar, fence,
// prefetch and griddepcontrol (no effect: launches run in order);
// createpolicy.fractional and the .L2::cache_hint operand of TMA loads
// (no effect: the interpreter has no L2);
// shfl.sync idx/up/down/bfly with the PTX ISA's clamp and segment rules; vote.sync; redux.sync; activemask; atom and red on
// global and shared memory (add, min, max, inc, dec, and, or, xor, exch,
// cas; integer, f32, f64 and half types), and sm_90's vector reduction
// red.global.add.v2.f32 and .v4.f32 (each element an independent atomic
// add to consecutive words; vector atom is not supported); mma.sync
// m16n8k16 f16/bf16 → f32; ldmatrix and stmatrix m8n8 .x1/.x2/.x4 with
// .trans; cp.async .ca/.cg with commit_group, wait_group and wait_all.
//
// # sm_90: wgmma, mbarriers, TMA, clusters
//
// Also covered: wgmma.mma_async m64nNk16 .f32.{bf16,f16} (A from a shared
// memory descriptor or registers, B from a descriptor; scale-d, imm-scale
// ±1, imm-trans), wgmma.fence, commit_group and wait_group; mbarrier.init,
// arrive (with a count, .expect_tx, on shared::cluster addresses),
// expect_tx, complete_tx, try_wait and test_wait (.parity or a state
// token); cp.async.bulk.tensor.{2d,3d} loads (shared::cluster ← global,
// mbarrier::complete_tx::bytes, .multicast::cluster) and stores (global ←
// shared::cta, .bulk_group) with cp.async.bulk.commit_group and
// wait_group{.read}; cp.reduce.async.bulk.tensor.{2d,3d} .add into f32
// tensors (each element an atomic add, as red.add.f32); the non-tensor
// cp.async.bulk forms shared::cluster ← global (mbarrier::complete_tx::
// bytes), global ← shared::cta (.bulk_group) and shared::cluster ←
// shared::cta (16-byte aligned addresses, sizes a multiple of 16; global
// memory read at issue, as TMA loads); fence.proxy.async; barrier.cluster.arrive/wait; mapa
// and ld/st on shared::cluster addresses; the %cluster_* special
// registers; elect.sync; setmaxnreg (no effect beyond its checks);
// fence.mbarrier_init (no effect). Backend.LaunchCluster runs clusters
// (a kernel's .reqnctapercluster also makes one); Backend.EncodeTensorMap
// makes the by-value tensor maps the TMA instructions read (an encoding
// of the interpreter's own, checked as cuTensorMapEncodeTiled checks).
//
// Scheduling. The CTAs of a cluster run together on one worker; a warp
// runs until it exits, waits at bar.sync, blocks in mbarrier.try_wait or
// barrier.cluster.wait, or yields: after a false test_wait, at nanosleep
// (the pause of a spin loop on a flag in global memory) and after an
// atom or red with release semantics (so that a warp waiting on the flag
// it raises runs before it writes anything more: a flag raised before its
// data shows). Yielded warps run again once no other warp can run and
// every in-flight TMA load has completed. A barrier
// phase completes on the arrival that completes its count (or on the
// exit of the last warp a whole-CTA barrier waited for). When no warp
// can run, the in-flight TMA loads and bulk copies that complete on an
// mbarrier some warp waits on complete (in issue order), the others stay
// in flight (so a warp that waits on one barrier and reads what a copy on
// another writes reads it in flight); where none does, every one
// completes. When still no warp can run, the cluster is deadlocked: ErrDeadlock names every waiting warp, the mbarrier it
// waits on, its phase, pending arrivals and tx-count, and every named
// barrier with an open phase, its count, the warps that arrived and the
// warps that wait. A try_wait never
// returns false: it blocks until its phase completes. MaxSteps ends
// runaway loops (a test_wait spin, for one) with ErrTimeout.
//
// These rules hold (violations are errors naming instruction and thread):
//
//   - Phases. An mbarrier's phase completes when its pending arrivals and
//     its tx-count both reach 0; the next phase then expects the init
//     count again. try_wait.parity P returns once the phase with parity P
//     has completed, i.e. when the current phase's parity is not P (so
//     waiting on the parity before the first phase returns at once).
//     More arrivals than pending is ErrTrap; use before mbarrier.init is
//     ErrUninitialized. For the race check, an arrival releases what its
//     warp did before it and a wait that returns true acquires what the
//     arrivals of the completed phase it waited for released (see Races).
//   - TMA. A load reads global memory when it is issued (the earliest a
//     GPU may), and its box lands when the load completes, zeros outside the
//     tensor, in the shared-memory layout of the map's swizzle (the 16-byte
//     chunk index, address bits [4,7), XORed with bits [7,10) for 128B,
//     [7,9) for 64B, bit 7 for 32B, of the absolute shared address), and
//     then completes the box's bytes on the mbarrier of each destination
//     CTA. Until then any generic access to its destination is ErrAsync.
//     A store reads shared memory at issue and writes the elements inside
//     the tensor; its shared memory may not be written until the bulk
//     group's wait_group (ErrAsync).
//   - wgmma. Each warp computes its 16 rows at issue (a warp's rows need
//     only its rows of A and all of B). Until the wgmma.wait_group that
//     retires its group, no instruction but wgmma may read or write its
//     accumulator or A registers (ErrAsync), no generic store and no TMA
//     or bulk load may write the shared memory it reads, nor be issued
//     into it (ErrAsync), and a warp
//     may not exit. A warp's first wgmma.mma_async must follow a
//     wgmma.fence. wgmma.*, setmaxnreg are warpgroup-collective: all 32
//     lanes of all four warps of a complete warpgroup execute the same
//     sequence of them (ErrWarpSync otherwise, also when a warp exits
//     without its share). Descriptors must be warp-uniform.
//   - Descriptors follow CUTLASS's canonical layouts
//     (cute/arch/mma_sm90_desc.hpp): fields hold bytes>>4 (start [0,14),
//     LBO [16,30), SBO [32,46), base offset [49,52), layout [62,64): 0
//     interleave, 1 128B, 2 64B, 3 32B). K-major with swizzle S: element
//     (mn, k) is at start + (mn%8)·S + (mn/8)·SBO + (k%8)·2 + (k/8)·16;
//     interleaved: (mn%8)·16 + (mn/8)·SBO + (k%8)·2 + (k/8)·LBO;
//     MN-major (imm-trans): (mn%(S/2))·2 + (mn/(S/2))·LBO + (k%8)·S +
//     (k/8)·SBO, interleaved (mn%8)·2 + (mn/8)·SBO + (k%8)·16 +
//     (k/8)·LBO; then swizzled as TMA does. A base offset other than 0
//     (or, swizzled, (start>>7)&7, which the absolute-address swizzle
//     already implies) is not modelled: ErrTrap.
//   - Proxies. The async proxy (wgmma operands, TMA stores) may read
//     shared memory written by the generic proxy (st, stmatrix) only if
//     the writing thread executed fence.proxy.async after the write;
//     otherwise ErrProxy. TMA writes are async-proxy writes and need no
//     fence. (That a barrier also separates the fence from the async read
//     is not checked.)
//   - Clusters. shared::cluster addresses (mapa) carry the target CTA's
//     rank+1 in bits 24 and up; accesses to another CTA's shared memory
//     are not race-checked. barrier.cluster.wait returns when every warp
//     of the cluster that has not exited has arrived as often as the
//     waiter; it starts a new race interval in every CTA of the cluster.
//
// # Barriers
//
// A CTA has 16 named barriers. bar.sync a{, b}, barrier.sync{.aligned}
// a{, b} and bar.red wait until b threads have arrived at barrier a;
// bar.arrive a, b and barrier.arrive{.aligned} a, b arrive without
// waiting (the producer side of a producer/consumer pair). Arrivals are
// counted in whole warps, as on the GPU:
//
//   - b is a multiple of 32 up to the CTA's size rounded up to warps, or
//     the CTA's size; without b, the whole CTA. A whole-CTA count is met
//     when every warp that has not exited has arrived (exited threads do
//     not hold it up); a smaller count needs exactly b/32 warp arrivals,
//     so a warp that exits without arriving leaves it waiting.
//   - A phase completes on the arrival that meets its count; the waiting
//     warps go on and the barrier is ready for its next phase at once.
//   - Within one phase every arrival names the same count, each warp
//     arrives once (a second arrival would count twice on the GPU: it is
//     the usual way a count is exceeded), bar.red is not mixed with
//     bar.sync, and a phase without a count is one instruction in every
//     warp (.aligned: every thread executes the same instruction); with a
//     count, warps may arrive at different instructions (bar.arrive in
//     the producer, bar.sync in the consumers). Violations are ErrBarrier
//     naming the barrier, the counts and the warps that arrived.
//   - bar.* and barrier.*.aligned are executed by all live lanes of a
//     warp or none (ErrBarrier otherwise); barrier.sync without .aligned
//     reached by part of a warp is not modelled (ErrBarrier too).
//   - Waiting warps that no arrival can release are ErrDeadlock, naming
//     each open phase: barrier id, expected threads, arrived threads, the
//     warps that arrived and the warps that wait.
//
// # Races
//
// Shared-memory accesses are ordered by happens-before between warps,
// kept as vector clocks over the warps of the CTA: a completed barrier
// phase orders what every arriving warp did before its arrival (and what
// was ordered before that) before what every waiting warp does after the
// phase; warps outside the phase are not ordered by it, and what a
// bar.arrive warp does after arriving is not ordered by the phase. A
// whole-CTA phase in which every live warp waits orders everything
// before it in the CTA, exited warps included. mbarriers follow the same
// rule: an arrival (by any lane) releases its warp; a try_wait or
// test_wait that returns true acquires what the completed phase of the
// awaited parity released (a phase token: its parity). barrier.cluster
// still orders everything in every CTA of the cluster. Ordering is per
// warp: an arrival by one lane orders the accesses of all lanes of its
// warp (an elected lane arriving for its warp after __syncwarp is the
// usual pattern). Two accesses of different threads to the same two
// bytes, one a write and not both atomics, that no such order relates
// are ErrRace. Several readers of one granule that are not ordered among
// themselves are kept as one record (their warps and the latest
// interval): a write is then checked against that interval for every
// one of them, which is conservative (it can report a race that a
// reader's earlier interval would have excused) when readers of
// different intervals are merged. A wgmma's shared-memory operands count
// as read by its warp in the interval of the wgmma.wait_group that
// retires it, kept per warp and 16-byte chunk; a TMA or bulk load of
// which the issuing CTA is a target is checked at issue against each such
// read in that CTA (ErrRace): what the reading warp did after its wait
// (an mbarrier arrival) must be ordered before the issuing warp's
// present. A slot released before the wait, or twice (so that the
// producer's wait acquires an earlier release), fails here; so does one
// released by another warp of the warpgroup on the readers' behalf, a
// pattern the GPU allows (wgmma is warpgroup-wide) but the interpreter
// does not model: every reading warp releases.
//
// wgmma numerics: the 16 products of a k16 step are exact in float64,
// summed in k order in float64, added to the old accumulator (scale-d)
// and rounded once to f32 per wgmma; a GEMM thus rounds once per k16
// step, like the tensor cores, whose internal order and precision within
// a step are unspecified: expect agreement with the GPU to about
// 2^-23 of the sum of the magnitudes per step (bit-exact where all
// partial sums are exact in f32, e.g. small integers).
//
// # Errors
//
// Every error wraps a sentinel (ErrParse, ErrLaunch, ErrMemory,
// ErrMisaligned, ErrUninitialized, ErrBarrier, ErrRace, ErrWarpSync,
// ErrTrap, ErrTimeout, ErrIllegal, ErrDeadlock, ErrAsync, ErrProxy); errors of running kernels are *ExecError values
// naming the kernel, the instruction (line and text), the CTA, the thread
// and, for memory errors, the address:
//
//   - a global access outside every allocation (allocations are 256-aligned,
//     start at 0x100_0000_0000 and are followed by at least 1 MiB that
//     belongs to nothing), a shared access beyond the CTA's static plus
//     dynamic shared memory, a local access beyond the thread's .local
//     arrays: ErrMemory;
//   - an access whose address is not a multiple of its size (a .v4.f32
//     access, red.global.add.v4.f32 included, must be 16-byte aligned):
//     ErrMisaligned;
//   - a register or predicate read by a lane that never wrote it (the
//     guard of a predicated instruction included): ErrUninitialized;
//   - bar.sync reached by only some of the live lanes of a warp (a barrier
//     in a divergent branch or under a guard), warps of one phase of a
//     barrier without a count at different instructions, counts that are
//     not whole warps, exceed the CTA or differ within a phase, a warp
//     arriving twice in one phase: ErrBarrier (see Barriers);
//   - two threads of a CTA accessing the same two bytes of shared memory,
//     one of them writing (atomics among themselves excepted), with no
//     barrier phase ordering the two (see Races): ErrRace. This is
//     stricter than needed inside a warp, which needs no barrier where a
//     shuffle already synchronizes;
//   - shfl.sync, vote.sync and bar.warp.sync whose member mask names a lane
//     that does not execute them, or lanes executing them that it does not
//     name, a shuffle reading a lane outside the mask, and mma.sync or
//     ldmatrix executed by fewer than 32 lanes: ErrWarpSync.
//
// A launch's configuration errors (block too large, .reqntid mismatch,
// argument count, shared memory) are returned by Launch; errors of a
// running kernel by the next Sync, the first one of the lowest-numbered
// failing CTA.
//
// # Numerics and tolerances
//
// Exactly rounded instructions are bit-identical to the GPU: add, sub,
// mul, fma, div, rcp and sqrt with .rn (and the directed modes) in f32 and
// f64, half-precision arithmetic, and cvt. fma.rn.f32 is computed with
// round-to-odd in float64 and then rounded to f32, which is correct (a
// plain math.FMA followed by a rounding to f32 rounds twice and can be one
// ulp off; the float64 sum is used directly when it is not an f32
// midpoint). NaN results are the GPU's canonical NaN. min and max return
// the non-NaN operand and order -0 below +0. atom.add.f32 flushes
// subnormals, as the PTX ISA says the GPU does.
//
// Approximate instructions are computed in float64 and rounded once; the
// GPU's special function unit differs from that by at most its documented
// error (PTX ISA): ex2.approx.f32 2^-22.5 relative (2 ulp), rcp.approx
// 2^-23, rsqrt.approx 2^-22.9, sqrt.approx 2^-23 relative, lg2.approx
// 2^-22.6 absolute near 1, tanh.approx 2^-10.987 relative, sin/cos.approx
// 2^-20.5 absolute; div.approx and div.full are computed exactly rounded
// (the GPU: 2 ulp). Families built on them state tolerances at least that
// wide. mma.sync sums the 16 exact products and C in float64 and rounds
// once; the tensor cores' order and intermediate precision are not
// specified, so results can differ from the GPU in the last bits of f32
// (relative to the sum of the magnitudes of the terms, about 2^-23).
//
// # Not modelled
//
// Timing of any kind (%clock reads 0); the memory model beyond barriers,
// mbarriers and the proxy rule (other fences have no effect; a warp's
// instruction is atomic with respect to other warps); races in global
// memory; the L1/L2 caches and the .nc path's incoherence; barrier ids
// and thread counts in registers; barrier.sync without .aligned in
// divergent code; happens-before per thread rather than per warp (see
// Races); atomics on shared memory under the async
// rules; lanes of one warp waiting on different mbarriers; TMA im2col
// mode, 1d/4d/5d boxes, cp.async.bulk's multicast and cache hints, reductions
// other than a tensor's f32 add; wgmma on tf32/fp8/integer types; textures and surfaces;
// the .const space; function calls. %warpid is the warp's index in its CTA and %smid the
// CTA's index modulo 132.
package sim
