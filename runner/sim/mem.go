package sim

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"
)

// Address layout. Global allocations live at and above globalBase, each
// 256-aligned and followed by a gap of at least allocGap bytes that
// belongs to nothing, so running off the end of a buffer is caught.
// Generic addresses of shared and local memory (cvta) live in windows far
// above every allocation.
const (
	globalBase   = 0x0000_0100_0000_0000
	allocGap     = 1 << 20
	sharedWindow = 0x0001_0000_0000_0000
	localWindow  = 0x0002_0000_0000_0000
	paramWindow  = 0x0003_0000_0000_0000 // kernel parameters (read-only; TMA tensor maps)
	windowSize   = 0x0000_0001_0000_0000
)

type alloc struct {
	base uint64
	size uint64
	data []byte // len(data) == size; backed by []uint64 so 8-byte atomics are aligned
}

// memory is the device's global memory.
type memory struct {
	mu     sync.RWMutex
	allocs []*alloc // sorted by base
	freed  []*alloc // for messages about use after free
	next   uint64
	bytes  uint64
}

func newMemory() *memory { return &memory{next: globalBase} }

func (m *memory) alloc(n int) (uint64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("%w: allocation of %d bytes", ErrMemory, n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	words := make([]uint64, (n+7)/8)
	data := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)[:n]
	a := &alloc{base: m.next, size: uint64(n), data: data}
	m.next += (uint64(n)+allocGap-1)/allocGap*allocGap + allocGap
	m.allocs = append(m.allocs, a) // bases only grow, so the slice stays sorted
	m.bytes += uint64(n)
	return a.base, nil
}

func (m *memory) free(p uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, a := range m.allocs {
		if a.base == p {
			m.allocs = append(m.allocs[:i:i], m.allocs[i+1:]...)
			m.freed = append(m.freed, &alloc{base: a.base, size: a.size})
			if len(m.freed) > 1024 {
				m.freed = m.freed[1:]
			}
			m.bytes -= a.size
			return nil
		}
	}
	return fmt.Errorf("%w: free of %#x, which is not the start of a live allocation", ErrMemory, p)
}

// snapshot returns the allocations for a launch (read-only while it runs).
func (m *memory) snapshot() []*alloc {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]*alloc(nil), m.allocs...)
}

// find returns the allocation holding [addr, addr+n), or nil.
func findAlloc(as []*alloc, addr uint64, n uint64) *alloc {
	i := sort.Search(len(as), func(i int) bool { return as[i].base+as[i].size > addr })
	if i < len(as) {
		a := as[i]
		if addr >= a.base && addr-a.base+n <= a.size {
			return a
		}
	}
	return nil
}

// describe explains why addr is not a valid global address of n bytes.
func (m *memory) describe(as []*alloc, addr uint64, n uint64) string {
	i := sort.Search(len(as), func(i int) bool { return as[i].base+as[i].size > addr })
	if i < len(as) && addr >= as[i].base {
		a := as[i]
		return fmt.Sprintf("%d-byte access crosses the end of the %d-byte allocation at %#x (offset %d)", n, a.size, a.base, addr-a.base)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, f := range m.freed {
		if addr >= f.base && addr < f.base+f.size {
			return fmt.Sprintf("inside the freed allocation at %#x (offset %d)", f.base, addr-f.base)
		}
	}
	var best *alloc
	for _, a := range as {
		if a.base+a.size <= addr && (best == nil || a.base > best.base) {
			best = a
		}
	}
	if best != nil && addr-(best.base+best.size) < allocGap {
		return fmt.Sprintf("%d bytes past the end of the %d-byte allocation at %#x", addr-(best.base+best.size), best.size, best.base)
	}
	if i < len(as) && as[i].base-addr < allocGap {
		return fmt.Sprintf("%d bytes before the %d-byte allocation at %#x", as[i].base-addr, as[i].size, as[i].base)
	}
	switch {
	case addr >= sharedWindow && addr < sharedWindow+windowSize:
		return "a generic shared-memory address used in the global space"
	case addr >= localWindow && addr < localWindow+windowSize:
		return "a generic local-memory address used in the global space"
	case addr < globalBase:
		return "not a device address (below every allocation)"
	}
	return "outside every allocation"
}

// rangeOf returns the bytes [p, p+n) of one allocation for host copies.
func (m *memory) rangeOf(p uint64, n int) ([]byte, error) {
	as := m.snapshot()
	if n == 0 {
		return nil, nil
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: negative size %d", ErrMemory, n)
	}
	a := findAlloc(as, p, uint64(n))
	if a == nil {
		return nil, fmt.Errorf("%w: host copy of %d bytes at %#x: %s", ErrMemory, n, p, m.describe(as, p, uint64(n)))
	}
	off := p - a.base
	return a.data[off : off+uint64(n)], nil
}
