package sim_test

import (
	"fmt"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	contractlaunch "github.com/gradtune/gradtune/launch"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
)

// boxPTX loads one {8, 4} f32 box by TMA at coordinates {0, row} and
// copies its 32 words to out, one per lane.
const boxPTX = `.version 8.0
.target sm_90a
.address_size 64
.visible .entry box(
	.param .align 64 .b8 tm[128],
	.param .u64 out,
	.param .u32 row
)
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.shared .align 128 .b8 tile[128];
	.shared .align 8 .b64 bar[1];
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
	fence.mbarrier_init.release.cluster;
	bar.sync 0;
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 128;
	ld.param.u32 %r2, [row];
	mov.u32 %r3, 0;
	@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [tile], [tm, {%r3, %r2}], [bar];
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
	@!%p2 bra WAIT;
	shl.b32 %r4, %r1, 2;
	mov.u32 %r5, tile;
	add.u32 %r5, %r5, %r4;
	ld.shared.u32 %r6, [%r5];
	ld.param.u64 %rd1, [out];
	mul.wide.u32 %rd2, %r1, 4;
	add.u64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r6;
	ret;
}
`

// simDevice is the interpreter as package launch sees it.
type simDevice struct{ be *sim.Backend }

func (d simDevice) Pointer(addr uint64) any { return runner.Ptr(addr) }

func (d simDevice) TensorMap(m configs.TensorMapSpec, global uint64) (any, error) {
	return d.be.EncodeTensorMap(m, runner.Ptr(global))
}

func (d simDevice) Launch(fn any, l configs.LaunchSpec, args []any) error {
	return d.be.Launch(fn.(runner.Function), l.Grid, l.Block, l.SharedBytes, args)
}

type simMemory map[string][2]int

func (m simMemory) Buffer(name string) (uint64, int, bool) {
	b, ok := m[name]
	return uint64(b[0]), b[1], ok
}

// TestTMAMapOffset: a map of rows j·c to j·c+c−1 of a weight [v×h] (its
// offset j·c·h·4 bytes), bound by package launch, loads those rows; a box
// that reaches past the map's c rows reads zeros there, although the
// weight goes on with the next block's rows.
func TestTMAMapOffset(t *testing.T) {
	const v, h, c, j = 16, 8, 4, 2
	be := sim.New(sim.Options{Workers: 1, MaxSteps: 1 << 20})
	mod, err := be.Load(boxPTX)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("box")
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, v*h)
	for i := range w {
		w[i] = float64(i)
	}
	pw, _ := be.Alloc(v * h * 4)
	be.Upload(pw, dtype.F32.Encode(w))
	po, _ := be.Alloc(128)
	block := &configs.TensorMap{Buffer: "w", Offset: configs.Var("j").TimesInt(c * h * 4), DType: dtype.F32,
		Dims: configs.Ints(h, c), Strides: configs.Ints(h * 4), Box: []int{8, 4}}
	bufs := []configs.Buffer{{Name: "w", DType: dtype.F32, Elems: configs.Int(v * h), Role: configs.Input},
		{Name: "out", DType: dtype.F32, Elems: configs.Int(32), Role: configs.Output}}
	mem := simMemory{"w": {int(pw), v * h * 4}, "out": {int(po), 128}}
	for _, row := range []int{0, 2} {
		l := configs.Launch{Entry: "box", Grid: configs.Grid(1, 1, 1), Block: [3]int{32, 1, 1},
			Args: []configs.Arg{{TensorMap: block}, {Buffer: "out"}, {Scalar: configs.Int(row), Type: configs.U32}}}
		p, err := configs.Resolve([]configs.Launch{l}, bufs, configs.Env{"j": j})
		if err != nil {
			t.Fatal(err)
		}
		dev := simDevice{be}
		b, err := contractlaunch.Bind(dev, p, []any{fn}, mem)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Run(dev); err != nil {
			t.Fatal(err)
		}
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 128)
		be.Download(out, po)
		got := dtype.F32.Decode(out)
		for i := range 32 {
			r := row + i/h // the box's row, within the map
			want := 0.0
			if r < c {
				want = w[(j*c+r)*h+i%h]
			}
			if got[i] != want {
				t.Fatalf("row %d: out[%d] = %v, want %v (%s)", row, i, got[i], want, fmt.Sprint(got))
			}
		}
	}
}
