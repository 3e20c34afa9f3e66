package rows

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// AsyncAt is the shared address of chunk j of tensor ten (0 or 1) of the
// group's row i in this thread's stash (store=async): slots [row][chunk]
// [tensor][thread] of vb bytes.
func (rk *Kernel) AsyncAt(stash ptx.Reg, i, j, ten int) ptx.Addr {
	return ptx.At(stash, int64(((i*rk.G.VPT+j)*2+ten)*rk.G.Block*rk.G.VB))
}

// OneTile is the tile of a row that fits one.
func (rk *Kernel) OneTile() Tile {
	t := Tile{OK: make([]ptx.Reg, rk.G.VPT)}
	t.OK[rk.G.VPT-1] = rk.lastOK
	return t
}

// ForTiles calls body for each tile of a row: once for a one-tile row,
// else in a CTA-uniform loop. stashBase is StashBase (or invalid).
func (rk *Kernel) ForTiles(stashBase ptx.Reg, body func(t Tile)) {
	k, g := rk.K, rk.G
	if g.Tiles == 1 {
		t := rk.OneTile()
		t.Stash = stashBase
		body(t)
		return
	}
	span := g.TPR * g.VPT
	k.For(ptx.U32, ptx.Imm(0), ptx.Imm(g.Tiles), ptx.Imm(1), func(ti ptx.Reg) {
		t := Tile{OK: make([]ptx.Reg, g.VPT)}
		t.Off = k.MulWide(ptx.U32, ti, ptx.Imm(span*g.VB))
		if g.NV%span != 0 {
			vt := k.Mad(ptx.U32, ti, ptx.Imm(span), rk.Lt)
			for j := range t.OK {
				t.OK[j] = k.Setp("lt", ptx.U32, vt, ptx.Imm(g.NV-j*g.TPR))
			}
		}
		if stashBase.Valid() {
			t.Stash = k.Mad(ptx.U32, ti, ptx.Imm(g.VPT*2*g.Block*g.VB), stashBase)
		}
		body(t)
	})
}

// RowPtr returns base + the row's offset (+ the tile's).
func (rk *Kernel) RowPtr(base ptx.Reg, r Row, t Tile) ptx.Reg {
	p := rk.K.Add(ptx.U64, base, r.Off)
	if t.Off.Valid() {
		p = rk.K.Add(ptx.U64, p, t.Off)
	}
	return p
}

// ChunkAt is the address of chunk j relative to a row (tile) pointer.
func (rk *Kernel) ChunkAt(p ptx.Reg, j int) ptx.Addr {
	return ptx.At(p, int64(j*rk.G.TPR*rk.G.VB))
}

// stashAt is the shared address of chunk j of tensor ten (0 or 1) in a
// tile's stash: slots [chunk][tensor][thread] of vb bytes.
func (rk *Kernel) stashAt(t Tile, j, ten int) ptx.Addr {
	return ptx.At(t.Stash, int64((j*2+ten)*rk.G.Block*rk.G.VB))
}

// LoadPair loads chunk j of two rows of tile t from global memory (at row
// pointers p0 and p1), stashes the raw words in shared memory when the
// variant keeps rows there (store=smem), and returns both widened to f32.
func (rk *Kernel) LoadPair(t Tile, j int, p0, p1 ptx.Reg) (a, b []ptx.Reg) {
	k, g := rk.K, rk.G
	aw := gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(p0, j), t.OK[j], rk.Ld)
	bw := gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(p1, j), t.OK[j], rk.Ld)
	if g.Store == StoreSmem {
		gen.StRaw(k, ptx.Shared, rk.stashAt(t, j, 0), aw)
		gen.StRaw(k, ptx.Shared, rk.stashAt(t, j, 1), bw)
	}
	return gen.Widen(k, g.DType, aw), gen.Widen(k, g.DType, bw)
}

// ReloadPair reads chunk j of the same two rows again for the output
// pass: from the shared-memory stash (store=smem) or from global memory,
// widened to f32.
func (rk *Kernel) ReloadPair(t Tile, j int, p0, p1 ptx.Reg) (a, b []ptx.Reg) {
	k, g := rk.K, rk.G
	var aw, bw []ptx.Reg
	if g.Store == StoreSmem {
		aw = gen.LdRaw(k, ptx.Shared, g.DType, g.Vec, rk.stashAt(t, j, 0), ptx.Reg{})
		bw = gen.LdRaw(k, ptx.Shared, g.DType, g.Vec, rk.stashAt(t, j, 1), ptx.Reg{})
	} else {
		aw = gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(p0, j), t.OK[j], rk.Ld)
		bw = gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(p1, j), t.OK[j], rk.Ld)
	}
	return gen.Widen(k, g.DType, aw), gen.Widen(k, g.DType, bw)
}

// StashBase is this thread's stash slot 0 (invalid unless store=smem or
// async).
func (rk *Kernel) StashBase() ptx.Reg {
	if rk.G.Store != StoreSmem && rk.G.Store != StoreAsync {
		return ptx.Reg{}
	}
	return rk.K.Mad(ptx.U32, rk.Tid, ptx.Imm(rk.G.VB), rk.K.Add(ptx.U32, rk.Smem, ptx.Imm(rk.G.stashOff)))
}
