package sim_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/runner/sim"
)

// wsPTX is a warp-specialized kernel of 384 threads in the shape of a
// Hopper GEMM's: warpgroup 0 (warps 0-3) produces, warpgroups 1 and 2
// (warps 4-11) consume. Per round i < 4 the producer waits on the empty
// barrier 3 (bar.sync 3, 384; not in round 0), copies x[256i, 256i+256)
// to buf and arrives on the full barrier 2 (bar.arrive 2, 384); the
// consumers wait on full, add buf[255-c] + buf[0] to their sum and arrive
// on empty. In the epilogue consumer c stores its sum to stage[c], the
// consumers synchronize among themselves (epilogue, by default bar.sync
// 1, 256), and consumer c writes stage[255-c] to y[c]: so y[c] = Σ_i
// x[256i+c] + x[256i].
func wsPTX(epilogue string, producerSyncs bool) string {
	empty := "\tbar.sync 3, 384;"
	if !producerSyncs {
		empty = ""
	}
	return `.version 8.0
.target sm_90a
.address_size 64

.visible .entry ws(
	.param .u64 ws_param_x,
	.param .u64 ws_param_y
)
.reqntid 384
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.reg .f32 %f<8>;
	.shared .align 16 .b8 buf[1024];
	.shared .align 16 .b8 stage[1024];

	ld.param.u64 %rd1, [ws_param_x];
	ld.param.u64 %rd2, [ws_param_y];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, 0;
	mov.u32 %r10, buf;
	mov.u32 %r11, stage;
	setp.ge.u32 %p1, %r1, 128;
	@%p1 bra CONSUMER;
PRODUCER:
	setp.eq.u32 %p2, %r2, 0;
	@%p2 bra FILL;
` + empty + `
FILL:
	shl.b32 %r3, %r2, 8;
	shl.b32 %r4, %r1, 1;
	add.u32 %r5, %r3, %r4;
	mul.wide.u32 %rd3, %r5, 4;
	add.u64 %rd4, %rd1, %rd3;
	ld.global.v2.f32 {%f1, %f2}, [%rd4];
	shl.b32 %r5, %r4, 2;
	add.u32 %r5, %r5, %r10;
	st.shared.v2.f32 [%r5], {%f1, %f2};
	bar.arrive 2, 384;
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p2, %r2, 4;
	@%p2 bra PRODUCER;
	ret;
CONSUMER:
	sub.u32 %r6, %r1, 128;
	mov.u32 %r7, 255;
	sub.u32 %r7, %r7, %r6;
	shl.b32 %r7, %r7, 2;
	mov.f32 %f3, 0f00000000;
LOOP:
	bar.sync 2, 384;
	add.u32 %r8, %r7, %r10;
	ld.shared.f32 %f4, [%r8];
	ld.shared.f32 %f5, [buf];
	add.f32 %f3, %f3, %f4;
	add.f32 %f3, %f3, %f5;
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p2, %r2, 4;
	@!%p2 bra EPILOGUE;
	bar.arrive 3, 384;
	bra LOOP;
EPILOGUE:
	shl.b32 %r9, %r6, 2;
	add.u32 %r8, %r9, %r11;
	st.shared.f32 [%r8], %f3;
	and.b32 %r12, %r6, 31;
	setp.lt.u32 %p3, %r12, 16;
	setp.lt.u32 %p2, %r6, 128;
` + epilogue + `
	add.u32 %r8, %r7, %r11;
	ld.shared.f32 %f6, [%r8];
	mul.wide.u32 %rd5, %r6, 4;
	add.u64 %rd6, %rd2, %rd5;
	st.global.f32 [%rd6], %f6;
	ret;
}
`
}

// Epilogues for wsPTX (%p2: consumer warpgroup 1; %p3: lanes 0-15).
const (
	epilogueOK = "\tbar.sync 1, 256;"
	// Each consumer warpgroup synchronizes only itself, yet reads what
	// the other one wrote.
	epilogueSplit = "\t@%p2 bra EPI1;\n\tbar.sync 4, 128;\n\tbra EPI2;\nEPI1:\n\tbar.sync 1, 128;\nEPI2:"
	// One warp more than the consumers: it never completes.
	epilogueCount = "\tbar.sync 1, 288;"
	// The second warpgroup names another count.
	epilogueMismatch = "\t@%p2 bra EPI1;\n\tbar.sync 1, 224;\n\tbra EPI2;\nEPI1:\n\tbar.sync 1, 256;\nEPI2:"
	// Half of every warp skips the barrier.
	epilogueDivergent = "\t@%p3 bar.sync 1, 256;"
)

func runWS(t *testing.T, epilogue string, producerSyncs bool) ([]float32, error) {
	t.Helper()
	out, err := launchPTX(t, wsPTX(epilogue, producerSyncs), "ws", [3]int{1, 1, 1}, [3]int{384, 1, 1}, 0,
		ramp(1024), make([]byte, 4*256))
	if err != nil {
		return nil, err
	}
	y := make([]float32, 256)
	for i := range y {
		y[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[1][4*i:]))
	}
	return y, nil
}

// TestNamedBarriersProducerConsumer: a producer warpgroup and two
// consumer warpgroups hand a buffer back and forth through bar.arrive and
// bar.sync on named barriers 2 and 3, and the consumers alone synchronize
// their epilogue (bar.sync 1, 256 in a CTA of 384 threads, after the
// producer exited). The race detector accepts it.
func TestNamedBarriersProducerConsumer(t *testing.T) {
	y, err := runWS(t, epilogueOK, true)
	if err != nil {
		t.Fatal(err)
	}
	for c, v := range y {
		want := float32(0)
		for i := 0; i < 4; i++ {
			want += float32(256*i+c) + float32(256*i)
		}
		if v != want {
			t.Fatalf("y[%d] = %v, want %v", c, v, want)
		}
	}
}

// Planted bugs in the warp-specialized kernel, each a clear error (and no hang).
func TestNamedBarrierBugs(t *testing.T) {
	cases := []struct {
		name          string
		epilogue      string
		producerSyncs bool
		want          error
		msg           []string
	}{
		{"count one warp too many", epilogueCount, true, sim.ErrDeadlock,
			[]string{"barrier 1", "expects 288 threads (9 warps), 256 arrived (warps 4-11)", "waiting: warps 4-11"}},
		{"warpgroups ordered by different barriers", epilogueSplit, true, sim.ErrRace,
			[]string{"thread (256,0,0)", "writes shared memory that thread 255 read with no barrier ordering the two"}},
		{"mismatched counts", epilogueMismatch, true, sim.ErrBarrier,
			[]string{"thread count 224 does not match barrier 1", "count of 256 threads", "arrived: warps 4-7"}},
		{"divergent aligned barrier", epilogueDivergent, true, sim.ErrBarrier,
			[]string{"reached by lanes 0-15 of warp 4 only; lanes 16-31 are elsewhere"}},
		{"producer skips the empty barrier", epilogueOK, false, sim.ErrBarrier,
			[]string{"warp 0 arrives a second time in one phase of barrier 2", "count of 384 threads"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runWS(t, tc.epilogue, tc.producerSyncs)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%v\ndoes not say %q", err, m)
				}
			}
		})
	}
}

// barCountPTX runs one barrier instruction in every warp of a 64-thread CTA.
func barCountPTX(inst string) string {
	return rawHead + fmt.Sprintf(`.reqntid 64
{
	%s;
	ret;
}
`, inst)
}

// TestBarrierCounts: counts that are not whole warps or exceed the CTA,
// and arrive without a count.
func TestBarrierCounts(t *testing.T) {
	for _, tc := range []struct {
		inst string
		want error
		msg  string
	}{
		{"bar.sync 1, 48", sim.ErrBarrier, "thread count 48 is not a positive multiple of 32"},
		{"bar.sync 1, 96", sim.ErrBarrier, "thread count 96 exceeds the CTA's 64 threads"},
		{"barrier.sync.aligned 1, 64", nil, ""},
		{"barrier.sync 2", nil, ""},
		{"bar.arrive 1, 64", nil, ""}, // nobody waits: the phase completes on the second arrival
		{"bar.arrive 1", sim.ErrParse, "bar.arrive takes 2 operands, found 1"},
	} {
		_, err := launchPTX(t, barCountPTX(tc.inst), "k", [3]int{1, 1, 1}, [3]int{64, 1, 1}, 0, []byte{0}, []byte{0})
		if !errors.Is(err, tc.want) || tc.want != nil && !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v saying %q", tc.inst, err, tc.want, tc.msg)
		}
	}
}

// mbarOrderPTX: warp 0 writes data and arrives on an mbarrier (count 32);
// warps 1 and 2 read it after waiting on the phase. With skip, warp 2
// reads without waiting: the phase orders warp 0's writes before what the
// waiting warps do, not before warp 2, so that is a race.
func mbarOrderPTX(skip bool) string {
	jump := ""
	if skip {
		jump = "\t@%p3 bra READ;"
	}
	return `.version 8.0
.target sm_90a
.address_size 64

.visible .entry mb(
	.param .u64 mb_param_x,
	.param .u64 mb_param_y
)
.reqntid 96
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.reg .f32 %f<4>;
	.shared .align 8 .b64 bar[1];
	.shared .align 16 .b8 data[128];

	mov.u32 %r1, %tid.x;
	shr.u32 %r2, %r1, 5;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 mbarrier.init.shared::cta.b64 [bar], 32;
	fence.mbarrier_init.release.cluster;
	bar.sync 0;
	and.b32 %r3, %r1, 31;
	shl.b32 %r3, %r3, 2;
	mov.u32 %r4, data;
	add.u32 %r4, %r4, %r3;
	setp.eq.u32 %p2, %r2, 0;
	setp.eq.u32 %p3, %r2, 2;
	@!%p2 bra CONSUME;
	mov.f32 %f1, 0f3F800000;
	st.shared.f32 [%r4], %f1;
	mbarrier.arrive.shared::cta.b64 %rd1, [bar];
	ret;
CONSUME:
` + jump + `
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
	@!%p2 bra WAIT;
READ:
	ld.shared.f32 %f2, [%r4];
	ret;
}
`
}

// TestMbarrierOrdersOnlyItsWaiters: a completed mbarrier phase orders the
// arriving warps' accesses before the waiting warps' only.
func TestMbarrierOrdersOnlyItsWaiters(t *testing.T) {
	run := func(skip bool) error {
		_, err := launchPTX(t, mbarOrderPTX(skip), "mb", [3]int{1, 1, 1}, [3]int{96, 1, 1}, 0, []byte{0}, []byte{0})
		return err
	}
	if err := run(false); err != nil {
		t.Fatalf("readers that wait on the phase: %v", err)
	}
	err := run(true)
	// Warp 2 runs first (it completes bar.sync 0 and goes on): warp 0's
	// write finds its read unordered.
	if !errors.Is(err, sim.ErrRace) || !strings.Contains(err.Error(), "thread (0,0,0)") ||
		!strings.Contains(err.Error(), "writes shared memory that thread 64 read") {
		t.Fatalf("warp 2 reads without waiting: %v, want ErrRace naming thread 0 and thread 64", err)
	}
}
