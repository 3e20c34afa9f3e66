package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/runner"
)

// The interpreter's tensor map (runner.TensorMapArg), little-endian:
//
//	[0,4)   magic "GTTM"
//	4       element size in bytes
//	5       rank (1 to 5)
//	6       swizzle span in bytes / 16 (0: none)
//	[8,16)  global address of element (0, …, 0): buffer + offset
//	[16,56) dims, 5 × u64
//	[56,88) byte strides of dims 1 to 4, 4 × u64
//	[88,98) box, 5 × u16
const tmapMagic = "GTTM"

// tensorMap is a decoded tensor map.
type tensorMap struct {
	global  uint64 // address of element (0, …, 0): buffer + offset
	esize   int
	rank    int
	swizzle int
	dims    [5]int64
	strides [5]int64 // byte stride of each dimension (strides[0] = esize)
	box     [5]int
	f32     bool // the elements are f32 (a reduce's add is a float add)
}

// boxBytes is the size of one box in shared memory.
func (m *tensorMap) boxBytes() int {
	n := m.esize
	for i := 0; i < m.rank; i++ {
		n *= m.box[i]
	}
	return n
}

// EncodeTensorMap encodes m for the interpreter's TMA instructions over
// global, the address of the tensor's element (0, …, 0): its buffer's
// address plus m.Offset (m.Global), which the caller has added. Every
// element the TMA instructions move lies at global plus its coordinates
// times the strides, so a map with an offset reads and writes its
// sub-tensor, and elements outside the map's dims are out of bounds even
// where the buffer goes on. The checks are those of cuTensorMapEncodeTiled
// (configs.TensorMapSpec.Check) and a 16-byte aligned global address.
// The interpreter moves elements with element strides 1, no interleave and
// zeros outside the tensor; a map asking for anything else is refused (its
// L2 promotion does not change what is read).
func (b *Backend) EncodeTensorMap(m configs.TensorMapSpec, global runner.Ptr) (runner.TensorMapArg, error) {
	var out runner.TensorMapArg
	bad := func(format string, args ...any) (runner.TensorMapArg, error) {
		return out, fmt.Errorf("%w: tensor map of %s: %s", ErrLaunch, m.Buffer, fmt.Sprintf(format, args...))
	}
	if err := m.Check(); err != nil {
		return bad("%v", err)
	}
	if uint64(global)%16 != 0 {
		return bad("global address %#x is not 16-byte aligned", global)
	}
	for _, e := range m.ElemStrides {
		if e != 1 {
			return bad("element strides %v: the interpreter implements 1 only", m.ElemStrides)
		}
	}
	if m.Interleave != "none" || m.OOBFill != "zero" {
		return bad("interleave %s, fill %s: the interpreter implements none and zero only", m.Interleave, m.OOBFill)
	}
	es, r := m.DType.Size(), len(m.Dims)
	copy(out[0:4], tmapMagic)
	out[4], out[5], out[6] = byte(es), byte(r), byte(m.Swizzle/16)
	if m.DType == configs.F32 {
		out[7] = 1 // what a TMA reduce adds as floats
	}
	binary.LittleEndian.PutUint64(out[8:], uint64(global))
	for i, d := range m.Dims {
		binary.LittleEndian.PutUint64(out[16+8*i:], uint64(d))
		binary.LittleEndian.PutUint16(out[88+2*i:], uint16(m.Box[i]))
	}
	for i, s := range m.Strides {
		binary.LittleEndian.PutUint64(out[56+8*i:], uint64(s))
	}
	return out, nil
}

var errTmap = errors.New("not a tensor map made by EncodeTensorMap")

func decodeTmap(b []byte) (*tensorMap, error) {
	if len(b) < 128 || string(b[0:4]) != tmapMagic {
		return nil, errTmap
	}
	m := &tensorMap{esize: int(b[4]), rank: int(b[5]), swizzle: 16 * int(b[6]), f32: b[7] == 1, global: binary.LittleEndian.Uint64(b[8:])}
	if m.rank < 1 || m.rank > 5 {
		return nil, errTmap
	}
	m.strides[0] = int64(m.esize)
	for i := 0; i < 5; i++ {
		m.dims[i] = 1
		m.box[i] = 1
	}
	for i := 0; i < m.rank; i++ {
		m.dims[i] = int64(binary.LittleEndian.Uint64(b[16+8*i:]))
		m.box[i] = int(binary.LittleEndian.Uint16(b[88+2*i:]))
		if i > 0 {
			m.strides[i] = int64(binary.LittleEndian.Uint64(b[56+8*(i-1):]))
		}
	}
	return m, nil
}

// tmap reads the tensor map operand of lane l: a by-value parameter or
// one in global memory at the address the register holds.
func (w *warp) tmap(in *inst, l int) (*tensorMap, error) {
	c := w.c
	var b []byte
	if in.a[1] < 0 {
		b = c.l.params[in.target:]
	} else {
		addr := w.lanes(in.a[1])[l]
		if off := addr - paramWindow; off < windowSize {
			if off+128 > uint64(len(c.l.params)) {
				return nil, w.fault(in, l, ErrMemory, addr, true, "tensor map address beyond the kernel's parameters")
			}
			b = c.l.params[off:]
			goto decode
		}
		a := findAlloc(c.l.allocs, addr, 128)
		if a == nil {
			return nil, w.fault(in, l, ErrMemory, addr, true, "tensor map address: "+c.l.mem.describe(c.l.allocs, addr, 128))
		}
		b = a.data[addr-a.base:]
	}
decode:
	m, err := decodeTmap(b)
	if err != nil {
		return nil, w.fault(in, l, ErrTrap, 0, false, "the tensor map operand is "+err.Error())
	}
	return m, nil
}

// tmaOp is an in-flight TMA load: its box lands in the shared memory of
// each target CTA at dst, and completes bytes of transactions on the
// mbarrier at bar in each.
type tmaOp struct {
	w       *warp
	in      *inst
	lane    int
	m       *tensorMap
	coords  [5]int64
	targets []*ctaRun
	dst     uint32
	bar     uint32
	box     []byte // the box as read from global memory at issue (zeros outside the tensor), unswizzled
}

// boxEach calls f for every element of the box: its byte offset in the
// box (before swizzling), its global address and whether it is inside
// the tensor.
func (m *tensorMap) boxEach(coords [5]int64, f func(off int, g uint64, in bool) error) error {
	off := 0
	var idx [5]int
	for {
		g, inside := m.global, true
		for d := 0; d < 5; d++ {
			x := coords[d] + int64(idx[d])
			if x < 0 || x >= m.dims[d] {
				inside = false
			}
			g += uint64(x * m.strides[d])
		}
		if err := f(off, g, inside); err != nil {
			return err
		}
		off += m.esize
		d := 0
		for ; d < 5; d++ {
			if idx[d]++; idx[d] < m.box[d] {
				break
			}
			idx[d] = 0
		}
		if d == 5 {
			return nil
		}
	}
}

// tmaLoad issues cp.async.bulk.tensor loads: global memory is read at
// issue, and the bytes land when the load completes (when no warp of the
// cluster can run), which then completes its transactions on the
// mbarrier. Reading at issue is the earliest a GPU may read: a load
// issued before the data it needs was written (a flag raised too early)
// reads what was there.
func (w *warp) tmaLoad(in *inst, mask uint32) error {
	c := w.c
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		tm, err := w.tmap(in, l)
		if err != nil {
			return err
		}
		op := &tmaOp{w: w, in: in, lane: l, m: tm}
		for i, s := range in.x {
			op.coords[i] = int64(int32(w.lanes(s)[l]))
		}
		n := tm.boxBytes()
		dc, dst, err := w.sharedAt(in, l, w.lanes(in.a[0])[l]+uint64(in.imm), n, 128)
		if err != nil {
			return err
		}
		bc, bar, _, err := w.mbarAt(in, l, true)
		if err != nil {
			return err
		}
		op.dst, op.bar, op.targets = dst, bar, []*ctaRun{dc}
		if op.box, err = op.read(n); err != nil {
			return err
		}
		if bc != dc {
			return w.fault(in, l, ErrTrap, uint64(bar), true, "the destination and the mbarrier of a TMA load are in different CTAs")
		}
		if in.mode2&tmaMulticast != 0 {
			cm := uint32(w.lanes(in.a[2])[l] & 0xffff)
			if cm>>len(c.cl.ctas) != 0 || cm == 0 {
				return w.fault(in, l, ErrTrap, 0, false, fmt.Sprintf("multicast ctaMask %#x in a cluster of %d CTAs", cm, len(c.cl.ctas)))
			}
			op.targets = op.targets[:0]
			for ; cm != 0; cm &= cm - 1 {
				op.targets = append(op.targets, c.cl.ctas[bits.TrailingZeros32(cm)])
			}
		}
		for _, t := range op.targets {
			if t.hs.mbars[bar] == nil {
				return w.fault(in, l, ErrUninitialized, uint64(bar), true, "TMA load signals an mbarrier that mbarrier.init never initialized")
			}
			if err := w.loadInto(in, l, t, dst, uint32(n)); err != nil {
				return err
			}
		}
		c.cl.loads = append(c.cl.loads, op)
	}
	return nil
}

// loadInto counts the n bytes at dst of CTA t as written by an
// asynchronous load (a TMA or bulk load) the warp issues: no in-flight
// wgmma or bulk store may read them, and in the warp's own CTA every
// retired wgmma's read of them must be released to it (asyncWriteCheck).
// A reader issued later finds them written (asyncRead), so the load's
// completion needs no check of its own.
func (w *warp) loadInto(in *inst, l int, t *ctaRun, dst, n uint32) error {
	if t == w.c {
		if err := w.asyncWriteCheck(in, l, dst, n); err != nil {
			return err
		}
	}
	for ch := dst >> 4; ch < (dst+n)>>4; ch++ {
		if t.hs.asyncRd[ch] != 0 {
			return w.fault(in, l, ErrAsync, uint64(ch)*16, true,
				"is issued into shared memory that an in-flight wgmma.mma_async or bulk store still reads (its slot released before wgmma.wait_group or cp.async.bulk.wait_group, or released twice)")
		}
		t.hs.asyncWr[ch]++
	}
	return nil
}

// asyncCopy is an in-flight asynchronous copy into shared memory that
// completes transactions on an mbarrier: a TMA load or a bulk copy.
// awaited reports whether a warp is blocked on one of its mbarriers.
type asyncCopy interface {
	complete() error
	awaited() bool
}

// completeLoads completes in-flight copies, in issue order, once no warp
// can run: only those a blocked warp waits on, where any is, else every
// one. Copies nobody waits for stay in flight, so a warp that waits on
// one step's barrier and reads another step's data reads it before it
// lands.
func (cl *clusterRun) completeLoads() error {
	var ready, later []asyncCopy
	for _, op := range cl.loads {
		if op.awaited() {
			ready = append(ready, op)
		} else {
			later = append(later, op)
		}
	}
	if len(ready) == 0 {
		ready, later = later, nil
	}
	cl.loads = later
	for _, op := range ready {
		if err := op.complete(); err != nil {
			return err
		}
	}
	return nil
}

// waitedOn reports whether a warp is blocked on mb (its waiters are the
// warps whose try_wait blocks on it).
func waitedOn(mb *mbarrier) bool { return mb != nil && len(mb.waiters) > 0 }

func (op *tmaOp) awaited() bool {
	return slices.ContainsFunc(op.targets, func(t *ctaRun) bool { return waitedOn(t.hs.mbars[op.bar]) })
}

func (op *bulkOp) awaited() bool { return waitedOn(op.to.hs.mbars[op.bar]) }

// complete writes the box read at issue to every target and completes
// its transactions on their mbarriers.
func (op *tmaOp) complete() error {
	w, tm := op.w, op.m
	n := tm.boxBytes()
	for _, t := range op.targets {
		for ch := op.dst >> 4; ch < (op.dst+uint32(n))>>4; ch++ {
			t.hs.asyncWr[ch]--
		}
		for off := 0; off < n; off += tm.esize {
			s := swizzle(op.dst+uint32(off), uint32(tm.swizzle))
			copy(t.smem[s:s+uint32(tm.esize)], op.box[off:])
		}
		for g := op.dst / 2; g < (op.dst+uint32(n))/2; g++ {
			t.hs.proxy[g] = proxyMark{}
		}
		mb := t.hs.mbars[op.bar]
		if mb == nil {
			return w.fault(op.in, op.lane, ErrUninitialized, uint64(op.bar), true, "TMA load completes on an mbarrier that is no longer initialized")
		}
		if mb.tx -= int64(n); mb.pending == 0 && mb.tx == 0 {
			t.completePhase(mb)
		}
	}
	return nil
}

// read reads the load's box of n bytes from global memory, zeros for
// the elements outside the tensor.
func (op *tmaOp) read(n int) ([]byte, error) {
	w, tm := op.w, op.m
	c := w.c
	box := make([]byte, n)
	err := tm.boxEach(op.coords, func(off int, g uint64, inside bool) error {
		if !inside {
			return nil
		}
		a := findAlloc(c.l.allocs, g, uint64(tm.esize))
		if a == nil {
			return w.fault(op.in, op.lane, ErrMemory, g, true, "TMA load: "+c.l.mem.describe(c.l.allocs, g, uint64(tm.esize)))
		}
		copy(box[off:off+tm.esize], a.data[g-a.base:])
		return nil
	})
	return box, err
}

// tmaStore executes cp.async.bulk.tensor stores and
// cp.reduce.async.bulk.tensor adds: the box is read from shared memory
// (which the async proxy must be allowed to read) and its elements inside
// the tensor are written at once, or added each as an atomic f32 add
// (other element types are refused); the shared memory counts as read
// until the bulk group's wait_group.
func (w *warp) tmaStore(in *inst, mask uint32) error {
	reduce := in.mode2&tmaReduceAdd != 0
	hw := w.hwState()
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		tm, err := w.tmap(in, l)
		if err != nil {
			return err
		}
		var coords [5]int64
		for i, s := range in.x {
			coords[i] = int64(int32(w.lanes(s)[l]))
		}
		if reduce && !tm.f32 {
			return w.fault(in, l, ErrTrap, 0, false, "the interpreter implements cp.reduce.async.bulk.tensor .add on f32 tensor maps only")
		}
		n := tm.boxBytes()
		sc, src, err := w.sharedAt(in, l, w.lanes(in.a[0])[l]+uint64(in.imm), n, 128)
		if err != nil {
			return err
		}
		if sc != w.c {
			return w.fault(in, l, ErrTrap, uint64(src), true, "a TMA store reads the CTA's own shared memory")
		}
		for ch := src >> 4; ch < (src+uint32(n))>>4; ch++ {
			if why := w.c.asyncRead(ch); why != "" {
				return w.fault(in, l, ErrProxy, uint64(ch)*16, true, "the TMA store reads shared memory that "+why)
			}
			w.c.hs.asyncRd[ch]++
			hw.bulkOpen = append(hw.bulkOpen, ch)
		}
		c := w.c
		err = tm.boxEach(coords, func(off int, g uint64, inside bool) error {
			if !inside {
				return nil
			}
			s := swizzle(src+uint32(off), uint32(tm.swizzle))
			a := findAlloc(c.l.allocs, g, uint64(tm.esize))
			if a == nil {
				return w.fault(in, l, ErrMemory, g, true, "TMA store: "+c.l.mem.describe(c.l.allocs, g, uint64(tm.esize)))
			}
			if reduce {
				v := binary.LittleEndian.Uint32(c.smem[s:])
				rmw(a.data[g-a.base:], 4, func(old uint64) uint64 {
					return uint64(math.Float32bits(math.Float32frombits(uint32(old)) + math.Float32frombits(v)))
				})
				return nil
			}
			copy(a.data[g-a.base:g-a.base+uint64(tm.esize)], c.smem[s:])
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// bulkOp is an in-flight cp.async.bulk into shared memory, completing
// its bytes on the destination CTA's mbarrier: from this CTA's shared
// memory to a CTA of the cluster, or (data set) from global memory, read
// at issue.
type bulkOp struct {
	w             *warp
	in            *inst
	lane          int
	src, dst, bar uint32
	n             uint32
	to            *ctaRun
	data          []byte // the global bytes read at issue; nil: src is this CTA's shared memory
}

// bulkToCluster issues cp.async.bulk.shared::cluster.shared::cta copies:
// the source (this CTA's, written through the generic proxy only before
// a fence.proxy.async of the writing thread) counts as read and the
// destination as written until the copy completes.
func (w *warp) bulkToCluster(in *inst, mask uint32) error {
	c := w.c
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		n, err := w.bulkSize(in, l)
		if err != nil {
			return err
		}
		sc, src, err := w.sharedAt(in, l, w.lanes(in.a[1])[l]+uint64(in.target), int(n), 16)
		if err != nil {
			return err
		}
		if sc != c {
			return w.fault(in, l, ErrTrap, uint64(src), true, "the source of cp.async.bulk.shared::cluster.shared::cta is in another CTA")
		}
		for ch := src >> 4; ch < (src+n)>>4; ch++ {
			if why := c.asyncRead(ch); why != "" {
				return w.fault(in, l, ErrAsync, uint64(ch)*16, true, "cp.async.bulk reads shared memory that "+why)
			}
		}
		dc, dst, bar, err := w.bulkDest(in, l, n)
		if err != nil {
			return err
		}
		for ch := src >> 4; ch < (src+n)>>4; ch++ {
			c.hs.asyncRd[ch]++
		}
		c.cl.loads = append(c.cl.loads, &bulkOp{w: w, in: in, lane: l, src: src, dst: dst, bar: bar, n: n, to: dc})
	}
	return nil
}

// complete copies the bytes and completes them on the destination's
// mbarrier.
func (op *bulkOp) complete() error {
	c, t := op.w.c, op.to
	for ch := op.dst >> 4; ch < (op.dst+op.n)>>4; ch++ {
		t.hs.asyncWr[ch]--
	}
	if op.data != nil {
		copy(t.smem[op.dst:op.dst+op.n], op.data)
	} else {
		for ch := op.src >> 4; ch < (op.src+op.n)>>4; ch++ {
			c.hs.asyncRd[ch]--
		}
		copy(t.smem[op.dst:op.dst+op.n], c.smem[op.src:op.src+op.n])
	}
	for g := op.dst / 2; g < (op.dst+op.n)/2; g++ {
		t.hs.proxy[g] = proxyMark{}
	}
	mb := t.hs.mbars[op.bar]
	if mb == nil {
		return op.w.fault(op.in, op.lane, ErrUninitialized, uint64(op.bar), true, "a bulk copy completes on an mbarrier that is no longer initialized")
	}
	if mb.tx -= int64(op.n); mb.pending == 0 && mb.tx == 0 {
		t.completePhase(mb)
	}
	return nil
}

// bulkDest checks lane l's destination of a cp.async.bulk into shared
// memory (n bytes, 16-aligned) and its mbarrier, which must be in the
// same CTA, and counts the destination as written until the copy
// completes.
func (w *warp) bulkDest(in *inst, l int, n uint32) (*ctaRun, uint32, uint32, error) {
	dc, dst, err := w.sharedAt(in, l, w.lanes(in.a[0])[l]+uint64(in.imm), int(n), 16)
	if err != nil {
		return nil, 0, 0, err
	}
	bc, bar, _, err := w.mbarAt(in, l, true)
	if err != nil {
		return nil, 0, 0, err
	}
	if bc != dc {
		return nil, 0, 0, w.fault(in, l, ErrTrap, uint64(bar), true, "the destination and the mbarrier of a bulk copy are in different CTAs")
	}
	if err := w.loadInto(in, l, dc, dst, n); err != nil {
		return nil, 0, 0, err
	}
	return dc, dst, bar, nil
}

// bulkSize is lane l's size operand of a cp.async.bulk: a positive
// multiple of 16.
func (w *warp) bulkSize(in *inst, l int) (uint32, error) {
	n := uint32(w.lanes(in.a[2])[l])
	if n == 0 || n%16 != 0 {
		return 0, w.fault(in, l, ErrMisaligned, uint64(n), false, "cp.async.bulk size must be a positive multiple of 16")
	}
	return n, nil
}

// bulkGlobal returns the allocation holding lane l's global operand
// slot (its address plus off) of n bytes, and the address, 16-aligned.
func (w *warp) bulkGlobal(in *inst, l int, slot int32, off int64, n uint32) (*alloc, uint64, error) {
	g := w.lanes(slot)[l] + uint64(off)
	if g%16 != 0 {
		return nil, 0, w.fault(in, l, ErrMisaligned, g, true, "cp.async.bulk needs a 16-byte aligned global address")
	}
	a := findAlloc(w.c.l.allocs, g, uint64(n))
	if a == nil {
		return nil, 0, w.fault(in, l, ErrMemory, g, true, "cp.async.bulk: "+w.c.l.mem.describe(w.c.l.allocs, g, uint64(n)))
	}
	return a, g, nil
}

// bulkFromGlobal issues cp.async.bulk.shared::cluster.global copies:
// global memory is read at issue (as TMA loads are), and the
// destination counts as written until the copy completes on its
// mbarrier.
func (w *warp) bulkFromGlobal(in *inst, mask uint32) error {
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		n, err := w.bulkSize(in, l)
		if err != nil {
			return err
		}
		a, g, err := w.bulkGlobal(in, l, in.a[1], int64(in.target), n)
		if err != nil {
			return err
		}
		dc, dst, bar, err := w.bulkDest(in, l, n)
		if err != nil {
			return err
		}
		data := slices.Clone(a.data[g-a.base : g-a.base+uint64(n)])
		w.c.cl.loads = append(w.c.cl.loads, &bulkOp{w: w, in: in, lane: l, dst: dst, bar: bar, n: n, to: dc, data: data})
	}
	return nil
}

// bulkToGlobal executes cp.async.bulk.global.shared::cta stores: the
// source (this CTA's, which the async proxy must be allowed to read) is
// written to global memory at once and counts as read until the bulk
// group's wait_group.
func (w *warp) bulkToGlobal(in *inst, mask uint32) error {
	hw := w.hwState()
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		n, err := w.bulkSize(in, l)
		if err != nil {
			return err
		}
		a, g, err := w.bulkGlobal(in, l, in.a[0], in.imm, n)
		if err != nil {
			return err
		}
		sc, src, err := w.sharedAt(in, l, w.lanes(in.a[1])[l]+uint64(in.target), int(n), 16)
		if err != nil {
			return err
		}
		if sc != w.c {
			return w.fault(in, l, ErrTrap, uint64(src), true, "a bulk store reads the CTA's own shared memory")
		}
		for ch := src >> 4; ch < (src+n)>>4; ch++ {
			if why := w.c.asyncRead(ch); why != "" {
				return w.fault(in, l, ErrProxy, uint64(ch)*16, true, "the bulk store reads shared memory that "+why)
			}
			w.c.hs.asyncRd[ch]++
			hw.bulkOpen = append(hw.bulkOpen, ch)
		}
		copy(a.data[g-a.base:g-a.base+uint64(n)], w.c.smem[src:src+n])
	}
	return nil
}
