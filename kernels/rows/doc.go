// Package rows is the generator library of the row families: kernels over
// an [m × n] matrix whose outputs need one or two sums over each row
// (softmax_bwd in package softmax, rmsnorm_bwd and layernorm_bwd in
// package norm). It holds their shape, their shared parameter axes and
// rules, the work split (Geom), the row and tile loops (Kernel) and the
// row reduction (Reducer).
//
// Rules:
//   - Work split. A row is cut into vectors of vec elements (16 bytes at
//     most; vec divides n, so every row starts aligned). A row group of
//     tpr threads handles one row at a time; thread lt of the group takes
//     vectors lt, lt+tpr, …, lt+(vpt−1)·tpr of each tile (coalesced). tpr
//     is derived from vpt: ⌈n/vec/vpt⌉ rounded up to a power of two (at
//     most 32, at least the family's MinTPR) or to whole warps above 32,
//     at most 1024 (TPRFor); a vpt that leaves a whole chunk idle is not
//     offered, so every point of a space is distinct. Rows longer than
//     1024·vpt vectors are walked in tiles (families with Tiles).
//   - A CTA holds `rows` row groups side by side; each group handles rpg
//     rows one after the other, `unroll` at a time with all their loads
//     issued before any arithmetic, or (prefetch) software-pipelined: the
//     next row's loads are issued before this row's reduction and stores.
//     CTAs = ⌈m/(rows·rpg)⌉, at least min(128, ⌈m/16⌉).
//   - Runtime rows. A program computes any row count m: m is the row
//     kernel's last parameter (u32, DimArg), the grid is ⌈m/(rows·rpg)⌉
//     (GridExpr) and the buffers are sized by expressions of m, so the PTX
//     is the same at every m. Geom's M and Grid are the values at the
//     shape the rules judge; nothing emitted depends on them.
//   - Control flow is CTA-uniform. The rows are emitted twice behind a
//     branch on the CTA index: the CTAs whose rows are all below m run
//     them unguarded; the CTA holding row m−1 clamps its rows past m to
//     row m−1 and predicates their stores (and column sums) off. So every
//     bar.sync and shfl.sync is reached by all threads with full masks,
//     and every loop counts over immediates.
//   - Row storage (Store): regs keeps the row's vectors in registers
//     between the reduction and the output pass; reread loads them again
//     from global memory; smem keeps the raw words in a thread-private
//     slice of dynamic shared memory (no barrier: each thread reads back
//     only what it wrote); async copies every row of the group into such
//     a slice with cp.async as the kernel starts, one commit group per
//     row, and row i waits only for its own group.
//   - Reduction: a butterfly of shfl.sync.bfly over the group's lanes
//     (≤ 32); above 32 threads, lane 0 of each warp writes a shared slot,
//     one bar.sync, and every thread adds the warps' slots in the same
//     order, so all threads of a row agree bit for bit. Slots are
//     double-buffered: one barrier per row batch.
//   - Limits: at most MaxHeld row values held per thread, a register cap
//     only from CapHeld held in registers, MaxRowSmem of dynamic shared
//     memory (MaxAsyncSmem with store=async).
//
// The reasoning and the H200 measurements behind these rules are in
// docs/kernels/rows.md.
package rows
