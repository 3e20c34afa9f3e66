package hopper

import "github.com/gradtune/gradtune/kernels/ptx"

// Ring is the layout of a ring of N slots in dynamic shared memory, as
// offsets from a base address (u32, shared window): slot s's data at
// Data + s·Stride; its full barrier at Bars + 8s and its empty barrier
// at Bars + 8(N + s), 8-byte mbarriers.
type Ring struct {
	N      int // slots
	Stride int // bytes from one slot's data to the next
	Data   int // offset of slot 0's data
	Bars   int // offset of slot 0's full barrier; the empty ones follow the N full ones
}

// BarsBytes is the bytes of the ring's barriers: a full and an empty
// barrier per slot.
func (r Ring) BarsBytes() int { return 16 * r.N }

// FullAt is the full barrier of the slot at index slot (u32).
func (r Ring) FullAt(k *ptx.Func, base, slot ptx.Reg) ptx.Addr { return r.BarAt(k, base, slot, r.Bars) }

// EmptyAt is the empty barrier of the slot at index slot (u32).
func (r Ring) EmptyAt(k *ptx.Func, base, slot ptx.Reg) ptx.Addr {
	return r.BarAt(k, base, slot, r.Bars+8*r.N)
}

// BarAt is the slot's barrier in an array of 8-byte barriers, one per
// slot, at offset off (a caller's own barriers beside the ring's).
func (r Ring) BarAt(k *ptx.Func, base, slot ptx.Reg, off int) ptx.Addr {
	return ptx.At(k.Mad(ptx.U32, slot, ptx.Imm(8), base), int64(off))
}

// DataAt is the shared address of the slot's data.
func (r Ring) DataAt(k *ptx.Func, base, slot ptx.Reg) ptx.Reg {
	d := k.Mad(ptx.U32, slot, ptx.Imm(int64(r.Stride)), base)
	if r.Data != 0 {
		d = k.Add(ptx.U32, d, ptx.Imm(int64(r.Data)))
	}
	return d
}

// InitSlot initializes slot s's barriers: full expects full arrivals per
// phase (besides the transaction bytes a TMA completes), empty expects
// empty arrivals (the consumers' releases). One thread initializes every
// barrier, before InitBarriers' fence.
func (r Ring) InitSlot(k *ptx.Func, base ptx.Reg, s, full, empty int) {
	k.MbarInit(ptx.At(base, int64(r.Bars+8*s)), ptx.Imm(int64(full)))
	k.MbarInit(ptx.At(base, int64(r.Bars+8*(r.N+s))), ptx.Imm(int64(empty)))
}

// Cursor tracks a position in a ring: the slot (u32) and the parity of
// its lap (u32, 0 on the first lap). Every role that walks the ring
// keeps its own cursor and moves it once per k-tile, so that all of them
// see the same slot and parity for the same k-tile.
type Cursor struct {
	k           *ptx.Func
	r           Ring
	Slot, Phase ptx.Reg
}

// Cursor is a cursor at slot 0 of lap 0.
func (r Ring) Cursor(k *ptx.Func) *Cursor {
	return &Cursor{k: k, r: r, Slot: k.Mov(ptx.U32, ptx.Imm(0)), Phase: k.Mov(ptx.U32, ptx.Imm(0))}
}

// Full, Empty and Data are the current slot's barriers and data; Bar its
// barrier in the caller's array at off (Ring.BarAt).
func (c *Cursor) Full(base ptx.Reg) ptx.Addr  { return c.r.FullAt(c.k, base, c.Slot) }
func (c *Cursor) Empty(base ptx.Reg) ptx.Addr { return c.r.EmptyAt(c.k, base, c.Slot) }
func (c *Cursor) Data(base ptx.Reg) ptx.Reg   { return c.r.DataAt(c.k, base, c.Slot) }
func (c *Cursor) Bar(base ptx.Reg, off int) ptx.Addr {
	return c.r.BarAt(c.k, base, c.Slot, off)
}

// WaitFull waits until the slot's data of this lap has arrived (parity
// Phase).
func (c *Cursor) WaitFull(base ptx.Reg) { c.k.MbarWait(c.Full(base), c.Phase) }

// WaitEmpty waits until the consumers released the slot's previous lap
// (parity Phase^1: on the first lap the phase before phase 0, which
// counts as complete, so the wait passes at once).
func (c *Cursor) WaitEmpty(base ptx.Reg) {
	c.k.MbarWait(c.Empty(base), c.k.Xor(ptx.U32, c.Phase, ptx.Imm(1)))
}

// Release frees the slot once the consumers' reads of it are complete
// (their wgmma group waited for): the thread where elected holds, one a
// consumer warp, arrives on its empty barrier (which counts those
// arrivals).
func (c *Cursor) Release(base, elected ptx.Reg) {
	c.k.If(elected, func() { c.k.MbarArriveDrop(c.Empty(base)) })
}

// Next moves to the next slot, flipping the parity when the ring wraps.
func (c *Cursor) Next() {
	k := c.k
	k.MovTo(c.Slot, k.Add(ptx.U32, c.Slot, ptx.Imm(1)))
	wrap := k.Setp("eq", ptx.U32, c.Slot, ptx.Imm(int64(c.r.N)))
	k.MovTo(c.Slot, k.Selp(ptx.U32, ptx.Imm(0), c.Slot, wrap))
	k.MovTo(c.Phase, k.Xor(ptx.U32, c.Phase, k.Selp(ptx.U32, ptx.Imm(1), ptx.Imm(0), wrap)))
}
