package ptx

import "fmt"

// Hopper's asynchronous data movement and its synchronization: mbarriers
// (64-bit shared-memory objects counting arrivals and transaction bytes
// through phases), TMA bulk tensor copies, proxy fences, clusters,
// elect.sync and stmatrix.
//
// An mbarrier completes a phase when its pending arrival count (set by
// MbarInit) reaches zero and the transaction bytes announced with
// MbarArriveExpectTx have all arrived; then it starts the next phase,
// whose parity is the other. A waiter tracks the parity of the phase it
// waits for and flips it each time it reuses the barrier (MbarWait).

// MbarInit emits mbarrier.init.shared::cta.b64 [bar], count: the barrier
// at bar (8 bytes, 8-aligned, in shared memory) starts phase 0 expecting
// count arrivals (1 to 2^20−1). Other threads may use it after a barrier
// (bar.sync); other CTAs of a cluster after FenceMbarrierInit and a
// cluster barrier.
func (f *Func) MbarInit(bar Addr, count Operand) {
	f.checkAddr("mbarrier.init", Shared, bar)
	f.check("mbarrier.init count", U32, count)
	if c, ok := count.(Imm); ok && (c < 1 || c >= 1<<20) {
		f.errorf("mbarrier.init: count %d out of range 1..2^20-1", c)
	}
	f.emit(&Inst{Op: "mbarrier.init.shared::cta.b64", Args: []Operand{bar, count}})
}

// MbarArrive emits mbarrier.arrive.shared::cta.b64 state, [bar]: one
// arrival, returning the barrier's state (b64) before it.
func (f *Func) MbarArrive(bar Addr) Reg {
	f.checkAddr("mbarrier.arrive", Shared, bar)
	d := f.Reg(B64)
	f.emit(&Inst{Op: "mbarrier.arrive.shared::cta.b64", Args: []Operand{d, bar}})
	return d
}

// MbarArriveDrop is MbarArrive with the state dropped (`_`).
func (f *Func) MbarArriveDrop(bar Addr) {
	f.checkAddr("mbarrier.arrive", Shared, bar)
	f.emit(&Inst{Op: "mbarrier.arrive.shared::cta.b64", Args: []Operand{Sink{}, bar}})
}

// MbarArriveExpectTx emits mbarrier.arrive.expect_tx.shared::cta.b64 _,
// [bar], bytes: the barrier's current phase also waits for bytes (below
// 2^20) of asynchronous transactions (TmaLoad's complete_tx), then one
// arrival. The producer of a TMA load calls it once per phase, before or
// after issuing the copies, with the bytes they bring.
func (f *Func) MbarArriveExpectTx(bar Addr, bytes Operand) {
	f.checkAddr("mbarrier.arrive.expect_tx", Shared, bar)
	f.check("mbarrier.arrive.expect_tx bytes", U32, bytes)
	if c, ok := bytes.(Imm); ok && (c < 0 || c >= 1<<20) {
		f.errorf("mbarrier.arrive.expect_tx: %d bytes out of range 0..2^20-1", c)
	}
	f.emit(&Inst{Op: "mbarrier.arrive.expect_tx.shared::cta.b64", Args: []Operand{Sink{}, bar, bytes}})
}

// MbarArriveCluster emits mbarrier.arrive.shared::cluster.b64 _, [bar]:
// an arrival, with the default release semantics at CTA scope, on a
// barrier of any CTA of the cluster; bar's base is a 32-bit
// shared::cluster address (Mapa of the local barrier's address). A
// multicast consumer releases a stage of every CTA that loaded it so,
// after wgmma.wait_group has retired its reads of the stage. Not
// .release.cluster: a cluster-scope fence per arrival stalls the k-loop
// (docs/kernels/gemm.md has the H200 figures).
func (f *Func) MbarArriveCluster(bar Addr) {
	if r, ok := bar.Base.(Reg); !ok || classOf(r.t) != clsB32 {
		f.errorf("mbarrier.arrive.shared::cluster: address %v must be a 32-bit shared::cluster register (from Mapa)", bar)
	}
	f.emit(&Inst{Op: "mbarrier.arrive.shared::cluster.b64", Args: []Operand{Sink{}, bar}})
}

// MbarTryWait emits mbarrier.try_wait.parity.shared::cta.b64 p, [bar],
// parity and returns p: true once the phase of the given parity (0 or 1,
// u32) has completed; false when it has not, after a time-limited wait.
func (f *Func) MbarTryWait(bar Addr, parity Operand) Reg {
	f.checkAddr("mbarrier.try_wait", Shared, bar)
	f.check("mbarrier.try_wait parity", U32, parity)
	if c, ok := parity.(Imm); ok && c != 0 && c != 1 {
		f.errorf("mbarrier.try_wait: parity %d (want 0 or 1)", c)
	}
	p := f.Reg(Pred)
	f.emit(&Inst{Op: "mbarrier.try_wait.parity.shared::cta.b64", Args: []Operand{p, bar, parity}})
	return p
}

// MbarWait waits until the phase of the given parity of the barrier at
// bar has completed: a loop of MbarTryWait. A thread waiting on the same
// barrier again waits for the other parity: the caller flips its parity
// register after each wait (and, in a ring of stages, when the stage
// index wraps). The analyses report a wait whose barrier and parity
// cannot change between the iterations of a loop around it
// (RuleMbarPhase).
func (f *Func) MbarWait(bar Addr, parity Operand) {
	f.While(func() Reg {
		done := f.MbarTryWait(bar, parity)
		busy := f.Reg(Pred)
		f.emit(&Inst{Op: "not.pred", Args: []Operand{busy, done}})
		return busy
	}, func() {})
}

// TensorMapParam declares a kernel parameter holding a TMA tensor map by
// value: `.param .align 64 .b8 name[128]`, the 128 bytes
// cuTensorMapEncodeTiled makes (kernels.Arg.TensorMap). TmaLoad and
// TmaStore take its generic address (TensorMapAddr); it cannot be loaded
// into a register.
func (f *Func) TensorMapParam(name string) Sym {
	s := f.Param(name, B64)
	s.tmap = true
	f.params[len(f.params)-1] = s
	return s
}

// TensorMapAddr returns the generic address of tensor-map parameter p
// (mov.u64 of the symbol, then cvta.param.u64, PTX ISA 7.7, as nvcc
// does for a __grid_constant__ CUtensorMap): the tensor-map operand of
// TmaLoad and TmaStore. (ptxas 12.4 also takes the mov's .param address,
// and refuses the parameter's name as the operand: "State space
// mismatch".)
func (f *Func) TensorMapAddr(p Sym) Reg {
	if !p.tmap {
		f.errorf("TensorMapAddr: %v is not a tensor-map parameter", p)
	}
	a := f.Mov(U64, p)
	d := f.Reg(U64)
	f.emit(&Inst{Op: "cvta.param.u64", Args: []Operand{d, a}})
	return d
}

// tensorAddr checks and builds the [map, {coords}] operand.
func (f *Func) tensorAddr(what string, tmap Reg, coords []Operand) (TensorAddr, bool) {
	f.check(what+" tensor map", U64, tmap)
	if len(coords) != 2 && len(coords) != 3 {
		f.errorf("%s: %d coordinates (want 2 or 3)", what, len(coords))
		return TensorAddr{}, false
	}
	for _, c := range coords {
		f.check(what+" coordinate", S32, c)
	}
	return TensorAddr{Map: tmap, Coords: coords}, true
}

// TmaLoad emits cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// [dst], [tmap, {coords}], [bar]: the box at coords
// (2 or 3, innermost first, in elements; s32) of the tensor map whose
// generic address is tmap (TensorMapAddr) is copied to shared memory
// at dst (the box's bytes, 128-aligned; 1024 for a 128-byte swizzle),
// and its bytes complete transactions on the barrier at bar, whose
// current phase must expect them (MbarArriveExpectTx). One thread issues
// it (see ElectSync).
func (f *Func) TmaLoad(dst Addr, tmap Reg, coords []Operand, bar Addr) {
	f.tmaLoad(dst, tmap, coords, bar, nil, Reg{})
}

// TmaLoadHinted is TmaLoad with .L2::cache_hint: the lines it brings
// into L2 take the eviction priority of policy (a CreatePolicy register),
// e.g. evict_first for an operand read once, so that streaming it does
// not push out lines the kernel still needs.
func (f *Func) TmaLoadHinted(dst Addr, tmap Reg, coords []Operand, bar Addr, policy Reg) {
	f.check("cp.async.bulk.tensor cache policy", U64, policy)
	f.tmaLoad(dst, tmap, coords, bar, nil, policy)
}

// L2Priority is an L2 eviction priority a cache policy applies.
type L2Priority string

// The priorities createpolicy takes.
const (
	L2EvictFirst  L2Priority = "L2::evict_first"  // replaced before normal lines
	L2EvictNormal L2Priority = "L2::evict_normal" // as without a hint
	L2EvictLast   L2Priority = "L2::evict_last"   // replaced after normal lines
)

// CreatePolicy emits createpolicy.fractional.p.b64 (fraction 1.0): an
// opaque cache policy that gives every line an .L2::cache_hint operation
// touches priority p. Of the builder's operations TmaLoadHinted takes one.
func (f *Func) CreatePolicy(p L2Priority) Reg {
	switch p {
	case L2EvictFirst, L2EvictNormal, L2EvictLast:
	default:
		f.errorf("createpolicy: priority %q", p)
	}
	d := f.Reg(U64)
	f.emit(&Inst{Op: "createpolicy.fractional." + string(p) + ".b64", Args: []Operand{d}})
	return d
}

// TmaLoadMulticast is TmaLoad into the same offsets of every CTA of the
// cluster whose rank is set in ctaMask (u16), each completing bytes on
// its own barrier at bar's offset (.multicast::cluster).
func (f *Func) TmaLoadMulticast(dst Addr, tmap Reg, coords []Operand, bar Addr, ctaMask Operand) {
	f.check("cp.async.bulk.tensor ctaMask", U16, ctaMask)
	f.tmaLoad(dst, tmap, coords, bar, ctaMask, Reg{})
}

func (f *Func) tmaLoad(dst Addr, tmap Reg, coords []Operand, bar Addr, mask Operand, policy Reg) {
	const what = "cp.async.bulk.tensor"
	f.checkAddr(what+" destination", Shared, dst)
	f.checkAddr(what+" mbarrier", Shared, bar)
	ta, ok := f.tensorAddr(what, tmap, coords)
	if !ok {
		return
	}
	op := fmt.Sprintf("cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes", len(coords))
	args := []Operand{dst, ta, bar}
	if mask != nil {
		op += ".multicast::cluster"
		args = append(args, mask)
	}
	if policy.Valid() {
		op += ".L2::cache_hint"
		args = append(args, policy)
	}
	f.emit(&Inst{Op: op, Args: args})
}

// TmaStore emits cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group
// [tmap, {coords}], [src]: the box at coords is written from shared
// memory at src (written before with st.shared or stmatrix, then
// FenceProxyAsync). It joins the thread's bulk group: BulkCommit, then
// BulkWait before src is reused.
func (f *Func) TmaStore(tmap Reg, coords []Operand, src Addr) {
	f.tmaFromShared("cp.async.bulk.tensor", "cp.async.bulk.tensor.%dd.global.shared::cta.tile.bulk_group", tmap, coords, src)
}

// tmaFromShared emits the bulk-group TMA op (its format takes the rank)
// that writes the box at src to the tensor at coords.
func (f *Func) tmaFromShared(what, format string, tmap Reg, coords []Operand, src Addr) {
	f.checkAddr(what+" source", Shared, src)
	ta, ok := f.tensorAddr(what, tmap, coords)
	if !ok {
		return
	}
	f.emit(&Inst{Op: fmt.Sprintf(format, len(coords)), Args: []Operand{ta, src}})
}

// TmaReduceAdd emits
// cp.reduce.async.bulk.tensor.Nd.global.shared::cta.add.tile.bulk_group
// [tmap, {coords}], [src]: the box at src is added element by element
// into the tensor at coords (each element an atomic add in L2; f32 here).
// Like TmaStore it reads src, written before and then FenceProxyAsync,
// until the thread's BulkWait(…, true) of its group.
func (f *Func) TmaReduceAdd(tmap Reg, coords []Operand, src Addr) {
	f.tmaFromShared("cp.reduce.async.bulk.tensor", "cp.reduce.async.bulk.tensor.%dd.global.shared::cta.add.tile.bulk_group", tmap, coords, src)
}

// BulkCommit emits cp.async.bulk.commit_group: the thread's bulk stores
// since the last commit form a group.
func (f *Func) BulkCommit() { f.emit(&Inst{Op: "cp.async.bulk.commit_group"}) }

// BulkWait emits cp.async.bulk.wait_group{.read} n: the thread waits until
// at most n of its bulk groups are pending; with read, only until they
// have read their shared-memory source (which may then be overwritten).
func (f *Func) BulkWait(n int, read bool) {
	if n < 0 || n > 63 {
		f.errorf("cp.async.bulk.wait_group %d: want 0 to 63", n)
		return
	}
	op := "cp.async.bulk.wait_group"
	if read {
		op += ".read"
	}
	f.emit(&Inst{Op: op, Args: []Operand{Imm(n)}})
}

// FenceProxyAsync emits fence.proxy.async.shared::cta: the thread's
// shared-memory accesses through the generic proxy (ld, st, stmatrix)
// are ordered with those of the async proxy (wgmma operands, TMA) after
// it. Needed between writing a tile with st.shared and a wgmma or TMA
// store reading it.
func (f *Func) FenceProxyAsync() { f.emit(&Inst{Op: "fence.proxy.async.shared::cta"}) }

// FenceMbarrierInit emits fence.mbarrier_init.release.cluster: the
// thread's MbarInit are visible to the cluster (with the acquire of a
// following cluster barrier) before other CTAs arrive on or copy to them.
func (f *Func) FenceMbarrierInit() { f.emit(&Inst{Op: "fence.mbarrier_init.release.cluster"}) }

// ClusterArrive emits barrier.cluster.arrive (.release with release):
// the thread arrives at the cluster barrier. Every thread of every CTA of
// the cluster must arrive before any ClusterWait returns, so the analyses
// treat it like bar.sync (CTA-uniform control; they do not know whether
// other CTAs of the cluster take the same path).
func (f *Func) ClusterArrive(release bool) {
	op := "barrier.cluster.arrive"
	if release {
		op += ".release"
	}
	f.emit(&Inst{Op: op})
}

// ClusterWait emits barrier.cluster.wait (.acquire with acquire): the
// thread waits until all threads of the cluster have arrived.
func (f *Func) ClusterWait(acquire bool) {
	op := "barrier.cluster.wait"
	if acquire {
		op += ".acquire"
	}
	f.emit(&Inst{Op: op})
}

// Mapa returns the shared::cluster address of the variable at addr (a
// 32-bit shared-window address) in the CTA of the cluster whose rank is
// rank (u32): mapa.shared::cluster.u32.
func (f *Func) Mapa(addr Reg, rank Operand) Reg {
	f.check("mapa", U32, addr)
	f.check("mapa rank", U32, rank)
	d := f.Reg(U32)
	f.emit(&Inst{Op: "mapa.shared::cluster.u32", Args: []Operand{d, addr, rank}})
	return d
}

// ElectSync emits elect.sync _|p, mask and returns p: true in one lane of
// those the mask names (which all execute it together), false in the
// others. The analyses take p to vary, so that a warp- or
// warpgroup-collective instruction under it is reported.
func (f *Func) ElectSync(mask uint32) Reg {
	p := f.Reg(Pred)
	f.emit(&Inst{Op: "elect.sync", Args: []Operand{DstPair{D: Sink{}, P: p}, Imm(int64(mask))}})
	return p
}

// Stmatrix emits stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16
// [addr], {vals}: the inverse of Ldmatrix. Each of the n = len(vals)
// (1, 2 or 4) b32 registers holds, per lane t, two halves of an 8×8
// matrix of 16-bit elements (row t/4, columns 2·(t%4) and +1; with
// trans, those of column t/4); lane 8·i+r gives the shared address of
// row r of matrix i (16 bytes, 16-aligned). Warp-collective.
func (f *Func) Stmatrix(trans bool, addr Addr, vals []Reg) {
	n := len(vals)
	if n != 1 && n != 2 && n != 4 {
		f.errorf("stmatrix: %d matrices (want 1, 2 or 4)", n)
		return
	}
	for i, r := range vals {
		f.checkFrag(fmt.Sprintf("stmatrix vals[%d]", i), r)
	}
	f.checkAddr("stmatrix", Shared, addr)
	op := fmt.Sprintf("stmatrix.sync.aligned.m8n8.x%d", n)
	if trans {
		op += ".trans"
	}
	f.emit(&Inst{Op: op + ".shared.b16", Args: []Operand{addr, Vec(vals)}})
}

// BulkCopyToCluster emits
// cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes
// [dst], [src], bytes, [bar]: the async proxy copies bytes (a positive
// multiple of 16, both addresses 16-byte aligned) of this CTA's shared
// memory at src to dst in a CTA of the cluster and completes them as
// transactions on bar, a barrier of that CTA whose current phase expects
// them. dst and bar are 32-bit shared::cluster addresses (Mapa). Generic
// writes of the source need a fence.proxy.async of each writing thread
// first; the source is read until the destination's barrier completes.
func (f *Func) BulkCopyToCluster(dst, src Addr, bytes int, bar Addr) {
	for _, a := range []Addr{dst, bar} {
		if r, ok := a.Base.(Reg); !ok || classOf(r.t) != clsB32 {
			f.errorf("cp.async.bulk.shared::cluster: address %v must be a 32-bit shared::cluster register (from Mapa)", a)
		}
	}
	f.checkAddr("cp.async.bulk", Shared, src)
	if bytes <= 0 || bytes%16 != 0 {
		f.errorf("cp.async.bulk: %d bytes (want a positive multiple of 16)", bytes)
	}
	f.emit(&Inst{Op: "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes",
		Args: []Operand{dst, src, Imm(bytes), bar}})
}

// BulkLoad emits
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// [dst], [src], bytes, [bar]: the async proxy copies bytes (u32, a
// positive multiple of 16; both addresses 16-byte aligned) of global
// memory at src into shared memory at dst and completes them as
// transactions on bar, whose current phase must expect them
// (MbarArriveExpectTx). One thread issues it.
func (f *Func) BulkLoad(dst, src Addr, bytes Operand, bar Addr) {
	f.checkAddr("cp.async.bulk destination", Shared, dst)
	f.checkAddr("cp.async.bulk source", Global, src)
	f.checkAddr("cp.async.bulk mbarrier", Shared, bar)
	f.checkBulkBytes(bytes)
	f.emit(&Inst{Op: "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
		Args: []Operand{dst, src, bytes, bar}})
}

// BulkStore emits cp.async.bulk.global.shared::cta.bulk_group [dst],
// [src], bytes: bytes (u32, a positive multiple of 16; both addresses
// 16-byte aligned) of this CTA's shared memory at src, written before
// with st.shared and then FenceProxyAsync, are written to global memory
// at dst. It joins the thread's bulk group: BulkCommit, then BulkWait
// before src is reused or the CTA exits.
func (f *Func) BulkStore(dst, src Addr, bytes Operand) {
	f.checkAddr("cp.async.bulk destination", Global, dst)
	f.checkAddr("cp.async.bulk source", Shared, src)
	f.checkBulkBytes(bytes)
	f.emit(&Inst{Op: "cp.async.bulk.global.shared::cta.bulk_group", Args: []Operand{dst, src, bytes}})
}

// checkBulkBytes checks a bulk copy's size: a u32 register, or an
// immediate positive multiple of 16.
func (f *Func) checkBulkBytes(bytes Operand) {
	if n, ok := bytes.(Imm); ok {
		if n <= 0 || n%16 != 0 {
			f.errorf("cp.async.bulk: %d bytes (want a positive multiple of 16)", n)
		}
		return
	}
	f.check("cp.async.bulk size", U32, bytes)
}

// FenceProxyAsyncGlobal emits fence.proxy.async.global: the thread's
// global-memory accesses through the generic proxy are ordered with
// those of the async proxy (TMA) after it. A kernel that TMA-loads data
// other CTAs stored with st.global fences on both sides of the flag that
// publishes it: the writer after its stores, the reader after its
// acquire.
func (f *Func) FenceProxyAsyncGlobal() { f.emit(&Inst{Op: "fence.proxy.async.global"}) }
