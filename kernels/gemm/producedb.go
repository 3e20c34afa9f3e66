package gemm

import (
	"fmt"
	"sync"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// A BProducer writes B into its global buffer while the GEMM that reads
// it runs (nf4_gemm_bwd's streamed path: the NF4 weight dequantized once
// into an L2-resident scratch buffer). B [N×K] is cut into chunks of 64
// reduction rows by 64 columns, chunk c = kt·(K/64) + j holding rows
// 64·kt.. and columns 64·j..: the order the k-loops need them in.
//
//   - Every CTA's producer warpgroup has three warps with nothing to do
//     beside the thread that issues the TMA loads: each of them claims
//     chunks (lane 0 adds 1 to the claim counter and broadcasts the old
//     value) until none is left, and its 32 lanes call Chunk. The lanes
//     then fence (fence.proxy.async.global: TMA reads what they wrote),
//     meet (bar.warp.sync) and lane 0 counts the chunk in its k-slice's
//     counter and in the ready count, both red.release.gpu. Claims need
//     no CTA to be resident at once: a claimed chunk is being written by
//     a running warp, and every running CTA claims until none is left.
//   - Before it loads a k-tile of B, the producer thread loads the ready
//     count and the k-slice's counter (ld.acquire.gpu, together: one
//     round trip per k-tile, which the ring's slack hides), waits until
//     the slice's K/64 chunks are counted (a nanosleep between tries),
//     then fences (fence.proxy.async.global) so that its TMA loads read
//     what the chunks' writers stored. Once the ready count shows every
//     chunk it stops looking: B is whole.
//   - The last CTA to finish (an acq_rel count of finished CTAs, after
//     every thread of the CTA met at barrier 0) zeroes the state, which
//     the next run expects zero: every other CTA is done with it.
//
// The state (State, u32 words): the claim counter, the ready count, the
// finished CTAs, one word of padding, then a counter per k-slice. B itself is
// Scratch: no run reads what an earlier one left there.
type BProducer interface {
	// Declare declares the kernel parameters the producer reads (they
	// follow A's and B's tensor maps) and returns their launch arguments.
	Declare(k *ptx.Func) []kernels.Arg
	// Setup runs once on every thread of the CTA before the roles split
	// (tid: %tid.x); it may write shared memory and pass barrier 0.
	Setup(k *ptx.Func, tid ptx.Reg)
	// Chunk writes B's 64 rows from row0 by 64 columns from col0 (u32)
	// into B at b (u64, generic: B's element (0, 0)), row-major with rows
	// K elements apart; the 32 lanes of a warp call it (lane: u32).
	Chunk(k *ptx.Func, b, lane, row0, col0 ptx.Reg)
}

// ChunkRows and ChunkCols are the extent of a BProducer's chunk.
const ChunkRows, ChunkCols = 64, 64

// producedState is the produced B's state buffer; stateHead its words
// before the k-slices' counters.
const (
	producedState = "bstate"
	stateHead     = 4
)

// stateWord is one of the state's words before the counters.
type stateWord int

// The state's head: chunks claimed, chunks ready, CTAs finished.
const (
	stateClaimed stateWord = iota
	stateReady
	stateFinished
)

// prodProducerR is the producer warpgroup's registers under the register
// split when its warps produce B: what a 192×192 tile's three consumers
// leave (3·144 + 80 = 512 per thread slot of a 512-thread CTA).
const prodProducerR = 80

// planted holds the bugs this package's tests plant in the programs they
// emit (export_test.go), each to be caught by validation on the
// interpreter; no other build sets them.
var planted struct {
	flagFirst bool // a chunk's flag is raised before the chunk is written
	keepState bool // the last CTA leaves the produced B's state as it is
	dropSplit bool // the split-K reduce leaves out the last split
}

// produced is the build state of a produced B.
type produced struct {
	src   BProducer
	wk    *wgKernel
	state ptx.Reg // u64 generic: the state buffer
	b     ptx.Reg // u64 generic: B
	ready ptx.Reg // u32, the producer thread's: every chunk seen ready (1) or not yet (0)
}

// chunks is B's chunks: N/64 rows of K/64.
func (pr *produced) chunks() (rows, cols int) { return pr.wk.g.l / ChunkRows, pr.wk.g.c / ChunkCols }

// buffers: B [N×K] in the input dtype (Scratch) and the state.
func (pr *produced) buffers() []kernels.Buffer {
	g := pr.wk.g
	r, _ := pr.chunks()
	return []kernels.Buffer{
		{Name: g.b.buf, DType: g.in, Elems: configs.Int(g.l * g.c), Role: kernels.Scratch},
		{Name: producedState, DType: dtype.F32, Elems: configs.Int(stateHead + r), Role: kernels.State},
	}
}

// head is the address of state word i.
func (pr *produced) head(i stateWord) ptx.Addr { return ptx.At(pr.state, 4*int64(i)) }

// slice is the address of k-slice kt's counter (u32).
func (pr *produced) slice(kt ptx.Reg) ptx.Addr {
	k := pr.wk.k
	return ptx.At(k.Add(ptx.U64, pr.state, k.MulWide(ptx.U32, kt, ptx.Imm(4))), 4*stateHead)
}

var release = ptx.AtomOpts{Sem: "release", Scope: "gpu"}

// declare declares the state's and B's addresses, the kernel's last
// parameters before m.
func (pr *produced) declare() {
	k := pr.wk.k
	pr.state, pr.b = gen.Param(k, producedState), gen.Param(k, "b_out")
}

// args are the launch arguments of declare's parameters.
func (pr *produced) args() []kernels.Arg {
	return []kernels.Arg{{Buffer: producedState}, {Buffer: pr.wk.g.b.buf}}
}

// produce is the producer warps' part (tid32: the thread's index from
// warp 1 of the producer warpgroup, 0..95): claim chunks until none is
// left.
func (pr *produced) produce(tid32 ptx.Reg) {
	k := pr.wk.k
	rows, cols := pr.chunks()
	total := rows * cols
	k.Comment("produce B: claim 64x64 chunks in k order, write them, raise their flags")
	lane := k.And(ptx.U32, tid32, ptx.Imm(31))
	lead := k.Setp("eq", ptx.U32, lane, ptx.Imm(0))
	claim := func() ptx.Reg {
		c := k.Mov(ptx.U32, ptx.Imm(0))
		k.If(lead, func() { k.MovTo(c, k.Atom(ptx.Global, "add", ptx.U32, pr.head(stateClaimed), ptx.Imm(1))) })
		return k.ShflSync("idx", c, ptx.Imm(0), ptx.Imm(31), 0xffffffff)
	}
	c := claim()
	k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, c, ptx.Imm(total)) }, func() {
		kt := k.Div(ptx.U32, c, ptx.Imm(cols))
		j := k.Sub(ptx.U32, c, k.Mul(ptx.U32, kt, ptx.Imm(cols)))
		raise := func() {
			k.If(lead, func() {
				k.Red(ptx.Global, "add", ptx.U32, pr.slice(kt), ptx.Imm(1), release)
				k.Red(ptx.Global, "add", ptx.U32, pr.head(stateReady), ptx.Imm(1), release)
			})
		}
		if planted.flagFirst {
			raise()
		}
		pr.src.Chunk(k, pr.b, lane, k.Mul(ptx.U32, kt, ptx.Imm(ChunkRows)), k.Mul(ptx.U32, j, ptx.Imm(ChunkCols)))
		k.FenceProxyAsyncGlobal()
		k.BarWarpSync(0xffffffff)
		if !planted.flagFirst {
			raise()
		}
		k.MovTo(c, claim())
	})
}

// gateStart sets up the producer thread's gate (nothing without a
// produced B).
func (pr *produced) gateStart() {
	if pr == nil {
		return
	}
	pr.ready = pr.wk.k.Mov(ptx.U32, ptx.Imm(0))
}

// gate waits until the k-slice of the k-tile at kc (u32, its first row)
// is written (its counter reached K/64 chunks), unless every chunk was
// seen ready before: one round trip per k-tile (the ready count and the
// slice's counter are loaded together), which the ring's slack hides.
func (pr *produced) gate(kc ptx.Reg) {
	if pr == nil {
		return
	}
	k := pr.wk.k
	rows, cols := pr.chunks()
	acq := ptx.LdOpts{Acquire: true}
	k.If(k.Setp("eq", ptx.U32, pr.ready, ptx.Imm(0)), func() {
		k.Comment("B is being produced: wait for this k-tile's slice")
		slice := pr.slice(k.Shr(ptx.U32, kc, ptx.Imm(6)))
		n := k.Ld(ptx.Global, ptx.U32, 1, pr.head(stateReady), acq)[0]
		done := k.Ld(ptx.Global, ptx.U32, 1, slice, acq)[0]
		k.MovTo(pr.ready, k.Selp(ptx.U32, ptx.Imm(1), ptx.Imm(0), k.Setp("eq", ptx.U32, n, ptx.Imm(rows*cols))))
		k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, done, ptx.Imm(cols)) }, func() {
			k.Nanosleep(ptx.Imm(64))
			k.LdTo(ptx.Global, ptx.U32, []ptx.Reg{done}, slice, acq)
		})
		k.FenceProxyAsyncGlobal()
	})
}

// finish: the CTA's threads meet; the last CTA to get here zeroes the
// state (nothing without a produced B).
func (pr *produced) finish(tid ptx.Reg) {
	if pr == nil {
		return
	}
	k := pr.wk.k
	rows, _ := pr.chunks()
	words := stateHead + rows
	k.Comment("the last CTA to finish leaves the produced B's state zero")
	last := k.Mov(ptx.U32, k.SharedArray("bstate_last", ptx.U32, 1, 4))
	k.BarSync(0)
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
		done := k.Atom(ptx.Global, "add", ptx.U32, pr.head(stateFinished), ptx.Imm(1), ptx.AtomOpts{Sem: "acq_rel", Scope: "gpu"})
		nct := k.Mov(ptx.U32, ptx.NCtaidX)
		k.St(ptx.Shared, ptx.U32, ptx.At(last, 0), []ptx.Reg{k.Selp(ptx.U32, ptx.Imm(1), ptx.Imm(0), k.Setp("eq", ptx.U32, k.Add(ptx.U32, done, ptx.Imm(1)), nct))})
	})
	k.BarSync(0)
	isLast := k.Ld(ptx.Shared, ptx.U32, 1, ptx.At(last, 0))[0]
	if planted.keepState {
		return
	}
	k.If(k.Setp("ne", ptx.U32, isLast, ptx.Imm(0)), func() {
		threads := pr.wk.threads()
		zero := k.Mov(ptx.U32, ptx.Imm(0))
		k.For(ptx.U32, tid, ptx.Imm(words), ptx.Imm(threads), func(i ptx.Reg) {
			k.St(ptx.Global, ptx.U32, ptx.At(k.Add(ptx.U64, pr.state, k.MulWide(ptx.U32, i, ptx.Imm(4))), 0), []ptx.Reg{zero})
		})
	})
}

// DXGemm is gemm_bwd's dX product C[M×K] = dY[M×N]·B[N×K] on the wgmma
// path, with B in a buffer of the caller's: its own input, a buffer an
// earlier launch of the caller's program writes (WaitPrior: this launch
// is dependent, and its producer thread waits for that grid before its
// first load), or a Scratch buffer that Producer writes during the
// kernel. A "dy" and C "dx" are in DType; M is the runtime dim m.
type DXGemm struct {
	M, N, K   int
	DType     dtype.DType
	B, Entry  string
	WaitPrior bool
	Producer  BProducer
	// LoRA, when not 0, adds an adapter's dX as gemm_bwd's lora=r does
	// (dh and A in the buffers LoRAH and LoRAA).
	LoRA int
	// Before, when set, adds the caller's kernels to the program's module
	// and returns the launches that run ahead of the GEMM's (the one that
	// writes B, for WaitPrior) and the buffers the program owns for them.
	Before func(m *ptx.Module) ([]kernels.Launch, []kernels.Buffer)
}

// WGConsumers is the consumer warpgroups of a bm-row tile on the wgmma
// path (gemm_bwd's warp layout rule).
func WGConsumers(bm int) int { return wgConsumers(bm) }

// Shape is the gemm_bwd shape of the product, whose space's rules p
// must pass.
func (d DXGemm) Shape() Shape {
	return Shape{M: d.M, N: d.N, K: d.K, Grad: DX, LoRA: d.LoRA, DType: d.DType}
}

// Check says whether Emit writes p: a wgmma point of gemm_bwd's space at
// Shape; with a Producer also cluster=1, reduce=launch, bn a multiple of
// 64, B of whole 64×64 chunks, and the consumers' accumulators within
// what the producer warpgroup's prodProducerR registers leave them.
func (d DXGemm) Check(p Params) error {
	s := d.Shape()
	if p.MMA != WGMMA {
		return fmt.Errorf("mma=%s: the product on a named B takes mma=wgmma", p.MMA)
	}
	if err := checkRules(s, p); err != nil {
		return err
	}
	if d.Producer == nil {
		return nil
	}
	switch {
	case p.Cluster != 1 || p.Reduce != ReduceLaunch || p.BN%64 != 0:
		return fmt.Errorf("a produced B takes cluster=1, reduce=launch and bn a multiple of 64")
	case d.N%ChunkRows != 0 || d.K%ChunkCols != 0:
		return fmt.Errorf("a produced B of %d×%d: want whole chunks of %d×%d", d.N, d.K, ChunkRows, ChunkCols)
	case accRegs(p)+regOverhead > hopper.ConsumerBudget(prodProducerR, 0, p.Consumers):
		return fmt.Errorf("%d accumulator registers per consumer thread, more than a producing warpgroup leaves (%d)", accRegs(p), hopper.ConsumerBudget(prodProducerR, 0, p.Consumers))
	}
	return nil
}

// checkRules applies the rules of gemm_bwd's space at s to p.
func checkRules(s Shape, p Params) error {
	for _, r := range rulesAt(s) {
		if err := r.Check(p); err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
	}
	return nil
}

// spaceRules holds gemm_bwd's rules per shape for checkRules: a caller's
// space (nf4_gemm_bwd's dense paths) checks every one of its points
// against them, and building them is most of a check.
var spaceRules sync.Map // Shape → []variants.Rule[Params]

func rulesAt(s Shape) []variants.Rule[Params] {
	if r, ok := spaceRules.Load(s); ok {
		return r.([]variants.Rule[Params])
	}
	r, _ := spaceRules.LoadOrStore(s, (def{}).Space(s).Rules)
	return r.([]variants.Rule[Params])
}

// Emit writes the program of p (see Check): the GEMM launch, the split-K
// reduce's, and with a Producer its Scratch B and State.
func (d DXGemm) Emit(p Params) (kernels.Program, error) {
	if err := d.Check(p); err != nil {
		return kernels.Program{}, err
	}
	g := problemOf(d.Shape())
	g.b.buf = d.B
	return buildWgmma(wgBuild{entry: d.Entry, red: d.Entry + "_reduce", g: g, p: p, prod: d.Producer, waitPrior: d.WaitPrior, before: d.Before})
}
