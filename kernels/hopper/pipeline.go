package hopper

import "github.com/gradtune/gradtune/kernels/ptx"

// AlignedBase declares the kernel's dynamic shared memory (16-byte
// aligned, all a launch guarantees) and returns its address rounded up
// to 1024 bytes, where 128B-swizzled TMA boxes and wgmma tiles must
// start. The kernel's SharedBytes adds 1024 bytes of slack for it.
func AlignedBase(k *ptx.Func) ptx.Reg {
	dyn := k.DynamicShared("smem", 16)
	return k.And(ptx.B32, k.Add(ptx.U32, k.Mov(ptx.U32, dyn), ptx.Imm(1023)), ptx.Imm(-1024))
}

// InitBarriers runs init (mbarrier.init of every barrier) in thread 0
// (tid == 0), then fences the initialization for the async proxy (TMA
// completes on the barriers). The caller then syncs the CTA (or the
// cluster) before any thread uses a barrier.
func InitBarriers(k *ptx.Func, tid ptx.Reg, init func()) {
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
		init()
		k.FenceMbarrierInit()
	})
}

// Release arrives on the empty barrier at bar (u32, shared): this CTA's,
// or in a cluster of cluster CTAs the one at the same offset in every
// CTA (each CTA's producer multicasts into the others' slots, so a slot
// is free only when every CTA's consumers are done with it; the empty
// barrier's count is then the consumers' arrivals times cluster).
func Release(k *ptx.Func, bar ptx.Reg, cluster int) {
	if cluster == 1 {
		k.MbarArriveDrop(ptx.At(bar, 0))
		return
	}
	for q := range cluster {
		k.MbarArriveCluster(ptx.At(k.Mapa(bar, ptx.Imm(int64(q))), 0))
	}
}

// Releaser releases a consumer's slots one k-tile late: a wgmma group
// reads its slot until it completes, so after committing k-tile i's
// group and waiting until only it is pending (wgmma.wait_group 1), the
// consumer releases k-tile i−1's slot; after the loop (wait_group 0) the
// last one. One elected thread per warp arrives (the empty barrier
// counts 4 per consumer warpgroup).
type Releaser struct {
	k       *ptx.Func
	cluster int
	prev    ptx.Reg // u32: the previous k-tile's empty barrier
}

// NewReleaser starts a releaser for a ring in a cluster of cluster CTAs.
func NewReleaser(k *ptx.Func, cluster int) *Releaser {
	return &Releaser{k: k, cluster: cluster, prev: k.Mov(ptx.U32, ptx.Imm(0))}
}

// Step releases the previous k-tile's slot where ok (false on a tile's
// first k-tile, which has none), remembers the cursor's slot as the
// previous one and moves the cursor on.
func (rl *Releaser) Step(ok ptx.Reg, c *Cursor, base ptx.Reg) {
	k := rl.k
	k.If(ok, func() { Release(k, rl.prev, rl.cluster) })
	e := c.Empty(base)
	k.MovTo(rl.prev, k.Add(ptx.U32, e.Base.(ptx.Reg), ptx.Imm(e.Off)))
	c.Next()
}

// Last releases the last k-tile's slot where ok (false where the loop
// ran no k-tile).
func (rl *Releaser) Last(ok ptx.Reg) {
	rl.k.If(ok, func() { Release(rl.k, rl.prev, rl.cluster) })
}
