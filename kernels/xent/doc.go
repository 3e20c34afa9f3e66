// Package xent is the cross_entropy_bwd family: the gradient of the mean
// cross-entropy over the logits [t tokens × v classes] with respect to
// the logits, as PyTorch's cross_entropy(logits, labels,
// ignore_index=-100, label_smoothing=ε, reduction="mean") backward:
//
//	p = softmax(z) per row, lse = log Σ_c e^z
//	dlogits[r,c] = dloss/n_valid · (p[r,c]·(1 + 2λ·lse[r]) − ε/v − (1−ε)·[c = label[r]])
//	loss[r]      = lse[r] − (1−ε)·z[r,label[r]] − ε/v·Σ_c z[r,c] + λ·lse[r]²
//
// with both zero on a row whose label is ignore_index (−100); λ·lse² is
// PaLM's z-loss (λ = 0 without it).
//
// Rules:
//   - Buffers: logits [t·v] and dlogits [t·v] in the dtype (f32, f16,
//     bf16); labels [t] i32, or i64 with labels=i64 (class indices below
//     2³¹ or ignore_index: the kernels read the low 32 bits of an i64
//     label, so a larger one or another negative one is misread);
//     zloss_scale [1] f32 with zloss=1, λ, read at run time; dloss [1] f32, the upstream gradient of the
//     mean loss (1 for a loss that is the objective); n_valid [1] f32, the
//     number of labels that are not ignore_index, the mean's denominator,
//     which the trainer supplies (PyTorch counts it on the device before
//     the backward); lse [t] f32 and loss [t] f32, each row's log-sum-exp
//     and loss (not divided by n_valid: the mean loss is Σloss/n_valid).
//     A label outside [0, v) other than ignore_index is the caller's
//     error, as it is PyTorch's: its row's values are undefined, but no
//     memory outside the buffers is touched.
//   - Shapes: from a preset, [Tokens × Vocab] without smoothing, i32
//     labels, no z-loss; specs name t and v and may name smooth (ε,
//     0 ≤ ε < 1, three decimals at most, baked into the PTX), labels
//     (i32 or i64), zloss (0 or 1) and inplace (0 or 1: with 1 the
//     gradient is written over the logits, an inout buffer, and there is
//     no dlogits, as Liger-Kernel does; the runner restores the logits
//     before each validation, and timed runs compute from what the last
//     run left, the same work).
//   - Two launches of one module, both of t·split CTAs: the statistics
//     kernel, CTA c taking part c mod split of row c/split, leaves per CTA
//     a partial (m·log₂e, Σ 2^(z·log₂e − m·log₂e), Σz, zl) in the Scratch
//     buffer partials [t·split·4 f32], zl = z[r, label[r]] in part 0's
//     (0 in the others and on an ignored row); the gradient kernel's CTA merges
//     its row's split partials in order, m = max(m₁, m₂) and
//     s = s₁·2^(m₁−m) + s₂·2^(m₂−m), computes the gradient of its part,
//     and the part-0 CTA's thread 0 writes lse and loss from the merged
//     partial and zl. Reverse takes the gradient kernel's rows last to
//     first.
//   - One pass (pass=one, sm_90): one launch of t·split CTAs in clusters
//     of split (no cluster at split 1), CTA rank c taking part c of row
//     c's cluster as above; it copies its raw vectors into its dynamic
//     shared memory (⌈v/vec/split⌉·vec elements; with the static arrays
//     at most 227 KB; split at most 8, reverse 0) while it absorbs them (copy=ld), or thread 0
//     brings the whole part in by one cp.async.bulk on an mbarrier and
//     the threads absorb it from there (copy=in, inout: 16-byte vectors,
//     so every part starts and ends on 16 bytes), or one bulk copy per
//     loop step (block·vpt vectors), each on its own mbarrier, which the
//     threads wait on before the step, so they absorb a step while the
//     later ones are in flight (copy=stream: the longest part at least
//     two whole steps), publishes its partial (and part 0's zl, read
//     before any barrier) in a static slot, and
//     after a cluster barrier every thread merges the split partials in
//     rank order through distributed shared memory (mapa, ld.shared::
//     cluster); a second cluster barrier keeps each slot alive until
//     every CTA has read it. The gradient is then computed from the
//     shared copy: the logits are read once. With copy=inout each thread
//     writes its gradient over the vectors it read there, fences
//     (fence.proxy.async), and after the CTA's barrier thread 0 writes
//     the part out by one bulk store and waits until it has been read.
//   - The loop writes every element with the off-label term (−g·ε/v);
//     after it, the thread that stored the vector holding the label (in
//     the CTA whose part holds it) writes the label's element again, from
//     zl by the same arithmetic with the label's term; its own program
//     order puts the second store after the first, so no barrier is
//     needed (with copy=inout, into the shared copy before its fence).
//     An ignored row's label, or one outside [0, v), lies in no part.
//   - Registers (regs): .maxnreg lets one CTA fill the register file
//     (free), or, in the one pass, lets as many CTAs share an SM as
//     their shared memory allows, never below 1.5·vec·vpt + 16 rounded
//     up to 8 (smem).
//   - Alias-safe: the gradient kernel reads no logit but its part's, each
//     element once, by the thread that writes its gradient, before that
//     store (a batch's loads precede its stores); z[label] comes from the
//     statistics kernel, which writes no logit. So dlogits may be the
//     logits' memory; the gradient kernel then reads them without .nc.
//   - The token count t is taken at run time: neither kernel reads it;
//     the grids and the buffers are expressions of t (RuntimeDims).
//   - Work split: a row is v/vec vectors (vec divides v: the widest width
//     dividing v, at most 16 bytes, or half that; an odd v gets vec=1);
//     part i takes vectors [i·cv, (i+1)·cv) below v/vec, cv =
//     ⌈v/vec/split⌉ (a part may be empty); its block threads take vpt
//     coalesced vectors each per iteration, unguarded in the iterations
//     that are whole and guarded in the last. Loop counts are
//     CTA-uniform; the only barrier is the statistics kernel's merge of
//     its warps.
//   - Arithmetic in f32 in log₂ units: the running maximum is kept as
//     m·log₂e rounded to f32, each term is ex2.approx.ftz of an fma, so a
//     rescale by an unchanged maximum is exactly 1; lse = (m·log₂e +
//     lg2.approx(s))·ln 2. ftz makes a term under 2⁻¹²⁶ (of the maximum,
//     in the sum; of p, in the gradient) 0: at most v·2⁻¹²⁶ of a sum that
//     is at least 1, and 2⁻¹²⁶·g of a gradient element, far inside the
//     tolerance; it keeps ex2 one MUFU operation (without it ptxas adds a
//     compare and two predicated multiplies to each).
//   - Inputs: logits uniform in [−8, 8] rounded to the dtype; labels
//     uniform in [0, v), every eighth row (offset by the seed)
//     ignore_index; dloss uniform in [0.5, 2); n_valid their count;
//     zloss_scale uniform in [0.01, 0.1) (above a trainer's 1e-4, so the
//     z-loss terms are seen).
//   - Tolerance (u = 2⁻²⁴; K = 4·⌈⌈v/vec_min⌉/128⌉ + 160 bounds the
//     relative error of a row's sum of exponentials in u, its longest
//     chain: 4u per loop iteration, the pairwise and merge sums): dlogits
//     Atol = gmax·(pmax·R + 4u), Rtol = R = (K + 192)·u, plus the
//     rounding of the stored dtype (gmax = 2/max(1, t − ⌈t/8⌉), pmax a
//     six-sigma bound of the generated softmax); lse Atol = E = (K + 200 +
//     4·lmax)·u, lmax = 8 + ln v ≥ |lse|; loss Atol = E + (16 + 8·ε·K +
//     4·(lmax + 8))·u. With z-loss (λ ≤ λmax = 0.1): p's factor
//     F = 1 + 2λ·lse ≤ 1 + 2·λmax·lmax is formed from the f32 lse, so its
//     relative error is at most 2·λmax·E + 2u, and u more scaling g:
//     dlogits R becomes R + 2·λmax·E + 3u and Atol gmax·(pmax·F·R + 4u);
//     λ·lse² adds λmax·(2·lmax·E + 4·lmax²·u) to loss's Atol.
//
// The byte floor, the design and the work left are in
// docs/kernels/xent.md.
package xent
