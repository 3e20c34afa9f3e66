package hopper

import (
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The budgets gemm_bwd's space states: a TMA producer's 40 registers
// leave 152 with three consumers, 232 with two, 240 (the cap) with one;
// and what the CTA holds at launch bounds the split.
func TestConsumerBudget(t *testing.T) {
	for _, c := range []struct{ consumers, want int }{{3, 152}, {2, 232}, {1, 240}} {
		s := Split{Producer: ProducerRegs, Consumers: c.consumers}
		got := s.ConsumerRegs()
		if got != c.want {
			t.Errorf("%d consumers: budget %d, want %d", c.consumers, got, c.want)
		}
		held := InitialRegs(s.Threads()) * (1 + c.consumers)
		if s.Producer+got*c.consumers > held {
			t.Errorf("%d consumers: %d + %d·%d registers, more than the CTA's %d", c.consumers, s.Producer, got, c.consumers, held)
		}
	}
	if got := InitialRegs(384); got != 168 {
		t.Errorf("InitialRegs(384) = %d, want 168", got)
	}
}

// A ring's barriers follow the layout the doc states: full s at Bars+8s,
// empty s at Bars+8(N+s); data at Data + s·Stride.
func TestRingLayout(t *testing.T) {
	m := ptx.NewModule()
	k := m.Func("ring")
	base := k.Mov(ptx.U32, ptx.Imm(0))
	r := Ring{N: 4, Stride: 2048, Data: 1024, Bars: 9216}
	c := r.Cursor(k)
	if f, e := c.Full(base), c.Empty(base); f.Off != 9216 || e.Off != 9216+32 {
		t.Errorf("full at +%d, empty at +%d; want +9216, +9248", f.Off, e.Off)
	}
	if r.BarsBytes() != 64 {
		t.Errorf("BarsBytes = %d, want 64", r.BarsBytes())
	}
	if _, err := m.Build(); err != nil {
		t.Fatal(err)
	}
}

// Staging rows are 128 bytes where the tile's rows are whole 128-byte
// atoms, else 64 (the 64B swizzle of 96- and 160-column bf16 tiles).
func TestStagingRowBytes(t *testing.T) {
	for _, c := range []struct {
		cols int
		od   dtype.DType
		want int
	}{{128, dtype.BF16, 128}, {96, dtype.BF16, 64}, {160, dtype.F16, 64}, {96, dtype.F32, 128}} {
		if got := (Staging{Cols: c.cols, Out: c.od}).RowBytes(); got != c.want {
			t.Errorf("%d %v columns: %d-byte rows, want %d", c.cols, c.od, got, c.want)
		}
	}
}
