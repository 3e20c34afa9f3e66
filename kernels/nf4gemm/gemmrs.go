package nf4gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The register-A path (mma=wgmma, dequant=consumer) computes dXᵀ =
// Wᵀ·dYᵀ so that the dequantized weight is wgmma's A operand, which may
// come from registers: the consumers dequantize their own fragments and
// nothing dequantized passes through shared memory. A CTA's tile is BM
// rows of dX (m: wgmma's N, up to 256) by BN columns (i, along K of W):
// consumer warpgroup c owns 64 of the columns (wgmma's M), one NF4 block
// of each W row, so that one scale covers a row of its fragment.
//
// A-row permutation: in the m64nNk16 fragment a thread holds A rows
// g = lane/4 and g+8 of its warp's 16; here they stand for W columns
// 16w+2g and 16w+2g+1, the two nibbles of one byte, so that a thread
// reads one byte per W row and the accumulator rows map to dX columns
// the same way (the epilogue stores the pair as one 32-bit word).
//
// Shared memory per slot (the ring is gemm_bwd's: full and empty
// mbarriers): dY's tile [BM rows][64 reduction] by TMA (128B swizzle,
// K-major B of the wgmma), the codes of each consumer's 64 columns for
// the k-tile's 64 W rows by TMA ({32 bytes, 64 rows}, 32B swizzle:
// conflict-free byte reads), and the 64 rows' scales per consumer, which
// warps 1..3 of the producer warpgroup load and store (scaleLoader), a
// copy per consumer warp (the interpreter's race check merges the
// readers of a word from several warps conservatively; a word that one
// warp reads is checked exactly).
type rsKernel struct {
	k         *ptx.Func
	s         GEMMShape
	w         weight
	p         GEMMParams
	cons      int  // consumer warpgroups, one per 64 columns
	stage     int  // bytes of a slot
	codesOff  int  // in a slot: the codes, 2 KB per consumer
	scalesOff int  // in a slot: 64 f32 scales per consumer warp
	bars      int  // the full barriers, then the empty ones
	d         *deq // the codebook in shared memory, the half-pair type
	bufs      map[string]ptx.Reg
	m         ptx.Reg // dX's rows, the launch argument
	tilesM    ptx.Reg // ⌈m/bm⌉, the tile rows
	tiles     ptx.Reg // the tiles: tilesM by the tile columns
	items     ptx.Reg // the work items: the tiles by the splits
}

const (
	rsCodes    = 64 * 32 // a consumer's codes per k-tile: 64 W rows × 64 nibbles
	rsScales   = 4 * 256 // a consumer's scales per k-tile: 64 f32, a copy per warp
	rsScaleLdr = 32      // the scale loader's threads (the full barrier's arrivals besides thread 0's)
	rsFragRegs = 64      // a consumer's registers besides the accumulators: fragments, addresses, temporaries
)

// rsProducerRegs is the producer warpgroup's registers: the scale
// loaders hold two sets of 2 scales per consumer (1 or, with double
// quantization, 3 registers each) besides their loop's 40.
func rsProducerRegs(cons int) int { return (40 + 12*cons + 7) &^ 7 }

// rsConsumerRegs is the consumers' registers: what the producer leaves.
func rsConsumerRegs(cons int) int { return rsSplit(cons).ConsumerRegs() }

// rsSplit is the warpgroups under the register split: the producer and
// cons consumers.
func rsSplit(cons int) hopper.Split {
	return hopper.Split{Producer: rsProducerRegs(cons), Consumers: cons}
}

// rsConsumers is the consumer warpgroups of tile width bn.
func rsConsumers(p GEMMParams) int { return p.BN / 64 }

func newRS(s GEMMShape, p GEMMParams) *rsKernel {
	rk := &rsKernel{s: s, w: s.weight(), p: p, cons: rsConsumers(p)}
	rk.codesOff = p.BM * 128
	rk.scalesOff = rk.codesOff + rk.cons*rsCodes
	rk.stage = (rk.scalesOff + rk.cons*rsScales + 1023) &^ 1023
	rk.bars = p.Stages * rk.stage
	return rk
}

// smem is the dynamic shared memory: the slots, their barriers and the
// 1024 bytes the base may need to round up.
func (rk *rsKernel) smem() int { return rk.bars + rk.ring().BarsBytes() + 1024 }

// rsCheck says whether the register-A path emits p: bk 64, 64-column
// consumers (2 or 3), wgmma's N = bm within 256, the accumulators within
// the consumers' registers, the slots within shared memory, no deeper
// than a split's k-loop, the splits dividing the k-tiles into at least
// two each.
func rsCheck(s GEMMShape, p GEMMParams) error {
	cons := rsConsumers(p)
	budget := rsConsumerRegs(max(cons, 1))
	rk := newRS(s, p)
	switch kt := rk.kTiles(); {
	case p.SplitK > 1 && (kt%p.SplitK != 0 || kt/p.SplitK < 2):
		return fmt.Errorf("splitk=%d over %d k-tiles: want a divisor that leaves at least 2 a split", p.SplitK, kt)
	case p.SplitK > 1 && p.Persistent:
		return fmt.Errorf("splitk=%d takes persistent=0 (a split grid is under two waves)", p.SplitK)
	case p.BK != 64 || p.BN%64 != 0 || cons < 2 || cons > 3:
		return fmt.Errorf("dequant=consumer on wgmma takes bk=64 and bn 128 or 192 (a warpgroup per 64 columns)")
	case p.BM%64 != 0 || p.BM < 128 || p.BM > 256:
		return fmt.Errorf("bm=%d: wgmma's N, 128, 192 or 256", p.BM)
	case p.BM/2+rsFragRegs > budget:
		return fmt.Errorf("%d accumulator registers per consumer thread, more than %d allow", p.BM/2, budget-rsFragRegs)
	case p.Stages < 2 || p.Stages > max(rk.kCount(), 2):
		return fmt.Errorf("stages=%d over %d k-tiles a split", p.Stages, rk.kCount())
	}
	if n := rk.smem(); n > hopper.MaxCTAShared {
		return fmt.Errorf("%d bytes of shared memory, more than %d", n, hopper.MaxCTAShared)
	}
	return nil
}

func (rk *rsKernel) threads() int { return rsSplit(rk.cons).Threads() }

// tileCols is the tile columns (k is no runtime dim).
func (rk *rsKernel) tileCols() int { return gen.CeilDiv(rk.s.K, rk.p.BN) }

// tilesAt is the tiles at m rows, for the space's rules; gridTiles is
// the work items (the tiles by the splits) as an expression of m, for the
// launch (the kernel computes them into rk.items).
func (rk *rsKernel) tilesAt(m int) int { return gen.CeilDiv(m, rk.p.BM) * rk.tileCols() }
func (rk *rsKernel) gridTiles() configs.Expr {
	return configs.CeilDiv(tokens, configs.Int(rk.p.BM)).TimesInt(rk.tileCols() * rk.splits())
}

// splits is the reduction's splits (split-K): each work item is a tile's
// kCount k-tiles from split·kCount, its partial sums a slice of the
// workspace that a second launch adds up (gemm.SplitKReduce).
func (rk *rsKernel) splits() int { return max(rk.p.SplitK, 1) }
func (rk *rsKernel) kCount() int { return rk.kTiles() / rk.splits() }

// reduce is the split-K reduce into dX.
func (rk *rsKernel) reduce() gemm.SplitKReduce {
	return gemm.SplitKReduce{Cols: rk.s.K, Splits: rk.splits(), Out: "dx", OutType: rk.s.DType}
}

// out is the buffer the consumers store: dX, or the split-K workspace.
func (rk *rsKernel) out() string {
	if rk.splits() > 1 {
		return gemm.WorkspaceName
	}
	return "dx"
}

// emitRS writes the register-A path's program.
func emitRS(s GEMMShape, p GEMMParams) (kernels.Program, error) {
	if err := rsCheck(s, p); err != nil {
		return kernels.Program{}, err
	}
	entry := fmt.Sprintf("nf4_gemm_bwd_rs_%v", s.DType)
	m := ptx.NewModule()
	rk := newRS(s, p)
	rk.k = m.Func(entry)
	args := rk.body()
	l := kernels.Launch{Entry: entry, Grid: [3]configs.Expr{rk.gridTiles(), configs.Int(1), configs.Int(1)},
		Block: [3]int{rk.threads(), 1, 1}, SharedBytes: rk.smem(), Args: args}
	if p.Persistent {
		l.GridPerSM = 1
	}
	prog := kernels.Program{Launches: []kernels.Launch{l}, RuntimeDims: []string{tokenDim}}
	if rk.splits() > 1 {
		red := fmt.Sprintf("nf4_gemm_bwd_rs_reduce_%v", s.DType)
		rk.reduce().Emit(m.Func(red))
		prog.Launches = append(prog.Launches, rk.reduce().Launch(red))
		prog.Buffers = []kernels.Buffer{rk.reduce().Workspace()}
		rk.reduce().Bound(&prog, rk.p.BM, rk.p.BN)
	}
	mod, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	prog.PTX = mod.String()
	return prog, nil
}

// body declares the parameters (dy's and w4's tensor maps, dy's m rows
// long; the scale buffers; dx; m), sets up the codebook and barriers and
// splits the roles; it returns the launch arguments.
func (rk *rsKernel) body() []kernels.Arg {
	k, s, p := rk.k, rk.s, rk.p
	k.ReqNTid(rk.threads())
	rsSplit(rk.cons).Declare(k)
	tmY := k.TensorMapParam("dy")
	tmW := k.TensorMapParam("w4")
	args := []kernels.Arg{
		{TensorMap: &kernels.TensorMap{Buffer: "dy", DType: s.DType, Dims: []configs.Expr{configs.Int(s.N), tokens}, Strides: configs.Ints(2 * s.N), Box: []int{64, p.BM}, Swizzle: 128}},
		{TensorMap: &kernels.TensorMap{Buffer: "w4", DType: dtype.U8, Dims: configs.Ints(s.K/2, s.N), Strides: configs.Ints(s.K / 2), Box: []int{32, 64}, Swizzle: 32}},
	}
	rk.bufs = map[string]ptx.Reg{}
	args = append(args, bufferParams(k, rk.bufs, append(rk.w.scaleNames(), rk.out())...)...)
	var arg kernels.Arg
	rk.m, arg = tokensParam(k)
	args = append(args, arg)
	rk.tilesM = k.Div(ptx.U32, k.Add(ptx.U32, rk.m, ptx.Imm(p.BM-1)), ptx.Imm(p.BM))
	rk.tiles = k.Mul(ptx.U32, rk.tilesM, ptx.Imm(rk.tileCols()))
	rk.items = rk.tiles
	if rk.splits() > 1 {
		rk.items = k.Mul(ptx.U32, rk.tiles, ptx.Imm(rk.splits()))
	}
	base := hopper.AlignedBase(k)
	tid := k.Mov(ptx.U32, ptx.TidX)
	var code2 ptx.Reg
	if rk.w.dq {
		code2 = k.Mov(ptx.U32, k.SharedArray("code2", ptx.F32, 256, 16))
		k.If(k.Setp("lt", ptx.U32, tid, ptx.Imm(256)), func() {
			v := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, rk.bufs["code2"], k.MulWide(ptx.U32, tid, ptx.Imm(4))), 0), ptx.LdOpts{NC: true})
			k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, tid, ptx.Imm(4), code2), 0), v)
		})
	}
	rk.d = newDeq(k, LookupSmem, s.DType, tid)
	hopper.InitBarriers(k, tid, func() {
		for st := range p.Stages {
			rk.ring().InitSlot(k, base, st, 1+rsScaleLdr, 4*rk.cons)
		}
	})
	k.BarSync(0)
	wg := hopper.Warpgroup(k, tid)
	hopper.Roles(k, wg, func() {
		rsSplit(rk.cons).EnterProducer(k)
		warp := k.Shr(ptx.U32, tid, ptx.Imm(5))
		k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() { rk.issuer(base, k.TensorMapAddr(tmY), k.TensorMapAddr(tmW)) })
		k.If(k.Setp("ge", ptx.U32, warp, ptx.Imm(1)), func() {
			rk.scaleLoader(base, k.Sub(ptx.U32, warp, ptx.Imm(1)), k.And(ptx.U32, tid, ptx.Imm(31)), code2)
		})
	}, func() {
		rsSplit(rk.cons).EnterConsumer(k)
		rk.consumer(base, k.Sub(ptx.U32, wg, ptx.Imm(1)), k.And(ptx.U32, tid, ptx.Imm(127)))
	})
	return args
}

// rsTile is a CTA's work item: its tile's first dX row and column and,
// under split-K, its split and the split's first k-tile.
type rsTile struct{ m0, i0, split, kt0 ptx.Reg }

// forTiles calls body with the CTA's work item, or in a persistent grid
// with items ctaid, ctaid + nctaid, ...; item i is tile i mod tiles of
// split i / tiles, and consecutive tiles go down dX's rows, so that
// neighbouring CTAs read the same codes.
func (rk *rsKernel) forTiles(body func(t rsTile)) {
	k := rk.k
	items := func() ptx.Operand { return rk.items }
	hopper.ForTiles(k, rk.p.Persistent, items, func(i ptx.Reg) {
		var t rsTile
		if rk.splits() > 1 {
			t.split = k.Div(ptx.U32, i, rk.tiles)
			t.kt0 = k.Mul(ptx.U32, t.split, ptx.Imm(rk.kCount()))
			i = k.Sub(ptx.U32, i, k.Mul(ptx.U32, t.split, rk.tiles))
		}
		r, c := hopper.DownRows(k, i, rk.tilesM)
		t.m0, t.i0 = k.Mul(ptx.U32, r, ptx.Imm(rk.p.BM)), k.Mul(ptx.U32, c, ptx.Imm(rk.p.BN))
		body(t)
	})
}

// kAbs is the item's k-tile kt (counted from its split's first) in the
// whole reduction.
func (rk *rsKernel) kAbs(t rsTile, kt ptx.Reg) ptx.Reg {
	if rk.splits() == 1 {
		return kt
	}
	return rk.k.Add(ptx.U32, kt, t.kt0)
}

// ring is the layout of the slots and their barriers.
func (rk *rsKernel) ring() hopper.Ring {
	return hopper.Ring{N: rk.p.Stages, Stride: rk.stage, Bars: rk.bars}
}

// kTiles is the reduction's k-tiles (N is a multiple of 64).
func (rk *rsKernel) kTiles() int { return rk.s.N / 64 }

// issuer (thread 0): per k-tile, wait for the slot, announce its bytes
// and load dY's tile and each consumer's codes by TMA.
func (rk *rsKernel) issuer(base, tmY, tmW ptx.Reg) {
	k := rk.k
	r := rk.ring().Cursor(k)
	rk.forTiles(func(t rsTile) {
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(rk.kCount()*64), ptx.Imm(64), func(kc ptx.Reg) {
			if rk.splits() > 1 {
				kc = k.Add(ptx.U32, kc, k.Shl(ptx.U32, t.kt0, ptx.Imm(6)))
			}
			r.WaitEmpty(base)
			full, dst := r.Full(base), r.Data(base)
			k.MbarArriveExpectTx(full, ptx.Imm(rk.codesOff+rk.cons*rsCodes))
			k.TmaLoad(ptx.At(dst, 0), tmY, []ptx.Operand{kc, t.m0}, full)
			col := k.Shr(ptx.U32, t.i0, ptx.Imm(1))
			for c := range rk.cons {
				k.TmaLoad(ptx.At(dst, int64(rk.codesOff+c*rsCodes)), tmW, []ptx.Operand{k.Add(ptx.U32, col, ptx.Imm(32*c)), kc}, full)
			}
			r.Next()
		})
	})
}

// The scale loaders (warps 1..3 of the producer warpgroup) take the
// k-tiles in turn, k-tile j to warp j mod 3, counting across a
// persistent CTA's tiles. Lane l fetches the scales of W rows l and l+32
// for each consumer's block into registers, stores them into the slot (a
// copy per consumer warp) once it is free and arrives on its full
// barrier. Each warp keeps two register sets and fetches its next k-tile
// into one while it stores the other: a global load's latency then
// overlaps three k-tiles of the consumers' math instead of stalling
// every k-tile. With double quantization the loads are absmax_q's word
// and absmax2; the 8-bit code is decoded at store time through code2,
// copied into shared memory at the start.

// scaleSet is a lane's fetched scales of one k-tile: per scale the f32
// absmax, or absmax_q's word, absmax2 and the block index.
type scaleSet [][3]ptx.Reg

func (rk *rsKernel) newScaleSet() scaleSet {
	set := make(scaleSet, 2*rk.cons)
	for i := range set {
		set[i] = [3]ptx.Reg{rk.k.Reg(ptx.U32), rk.k.Reg(ptx.F32), rk.k.Reg(ptx.U32)}
		if !rk.w.dq {
			set[i][0] = rk.k.Reg(ptx.F32)
		}
	}
	return set
}

// fetch issues the loads of k-tile kt's scales of tile t into set (block
// 0's where kt is past the reduction or a column past K).
func (rk *rsKernel) fetch(set scaleSet, t rsTile, kt, l ptx.Reg) {
	k := rk.k
	nc := ptx.LdOpts{NC: true}
	in := k.Setp("lt", ptx.U32, kt, ptx.Imm(rk.kCount()))
	kt = rk.kAbs(t, kt)
	for c := range rk.cons {
		col := k.Add(ptx.U32, t.i0, ptx.Imm(64*c))
		ok := k.And(ptx.Pred, in, k.Setp("lt", ptx.U32, col, ptx.Imm(rk.s.K)))
		for h := range 2 {
			row := k.Add(ptx.U32, k.Shl(ptx.U32, kt, ptx.Imm(6)), k.Add(ptx.U32, l, ptx.Imm(32*h)))
			b := k.Mad(ptx.U32, row, ptx.Imm(rk.s.K/rk.w.block), k.Div(ptx.U32, col, ptx.Imm(rk.w.block)))
			b = scaleBlock(k, k.Selp(ptx.U32, b, ptx.Imm(0), ok))
			r := set[2*c+h]
			if !rk.w.dq {
				k.LdTo(ptx.Global, ptx.F32, r[:1], elemAt(k, rk.bufs["absmax"], b, 4), nc)
				continue
			}
			k.LdTo(ptx.Global, ptx.U32, r[:1], elemAt(k, rk.bufs["absmax_q"], k.Shr(ptx.U32, b, ptx.Imm(2)), 4), nc)
			k.LdTo(ptx.Global, ptx.F32, r[1:2], elemAt(k, rk.bufs["absmax2"], k.Shr(ptx.U32, b, ptx.Imm(8)), 4), nc)
			k.MovTo(r[2], b)
		}
	}
}

// put waits until the slot of global k-tile j is free, stores set into
// it and arrives on its full barrier (dq: scale = code2[q]·absmax2 +
// offset, as loadScale).
func (rk *rsKernel) put(base ptx.Reg, set scaleSet, j, l, code2, offset ptx.Reg) {
	k, p := rk.k, rk.p
	slot := rem(k, j, p.Stages)
	phase := k.And(ptx.U32, k.Div(ptx.U32, j, ptx.Imm(p.Stages)), ptx.Imm(1))
	ring := rk.ring()
	k.MbarWait(ring.EmptyAt(k, base, slot), k.Xor(ptx.U32, phase, ptx.Imm(1)))
	at := k.Add(ptx.U32, ring.DataAt(k, base, slot), k.Add(ptx.U32, k.Shl(ptx.U32, scalePos(k, l), ptx.Imm(2)), ptx.Imm(rk.scalesOff)))
	for i, r := range set {
		v := r[0]
		if rk.w.dq {
			c2 := k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, scaleCode(k, r[0], r[2]), ptx.Imm(4), code2), 0))[0]
			v = k.Fma(ptx.F32, c2, r[1], offset)
		}
		for w := range 4 {
			k.St(ptx.Shared, ptx.F32, ptx.At(at, int64(rsScales*(i/2)+256*w+128*(i%2))), []ptx.Reg{v})
		}
	}
	k.MbarArriveDrop(ring.FullAt(k, base, slot))
}

// scaleLoader is scale loader q's (u32 0..2) loop, lane l.
func (rk *rsKernel) scaleLoader(base, q, l, code2 ptx.Reg) {
	k := rk.k
	var offset ptx.Reg
	if rk.w.dq {
		offset = k.Ld(ptx.Global, ptx.F32, 1, ptx.At(rk.bufs["dq_offset"], 0), ptx.LdOpts{NC: true})[0]
	}
	a, b := rk.newScaleSet(), rk.newScaleSet()
	first := k.Mov(ptx.U32, ptx.Imm(0)) // the tile's first global k-tile
	rk.forTiles(func(t rsTile) {
		kt0 := rem(k, k.Sub(ptx.U32, k.Add(ptx.U32, q, ptx.Imm(3)), rem(k, first, 3)), 3)
		rk.fetch(a, t, kt0, l)
		k.For(ptx.U32, kt0, ptx.Imm(rk.kCount()), ptx.Imm(6), func(kt ptx.Reg) {
			kb := k.Add(ptx.U32, kt, ptx.Imm(3))
			rk.fetch(b, t, kb, l)
			rk.put(base, a, k.Add(ptx.U32, first, kt), l, code2, offset)
			k.If(k.Setp("lt", ptx.U32, kb, ptx.Imm(rk.kCount())), func() {
				rk.fetch(a, t, k.Add(ptx.U32, kt, ptx.Imm(6)), l)
				rk.put(base, b, k.Add(ptx.U32, first, kb), l, code2, offset)
			})
		})
		k.MovTo(first, k.Add(ptx.U32, first, ptx.Imm(rk.kCount())))
	})
}

// consumer is consumer warpgroup c's part (l: its thread, 0..127): per
// tile, the k-loop, then the epilogue.
func (rk *rsKernel) consumer(base, c, l ptx.Reg) {
	k := rk.k
	lane := k.And(ptx.U32, l, ptx.Imm(31))
	w, g, t := k.Shr(ptx.U32, l, ptx.Imm(5)), k.Shr(ptx.U32, lane, ptx.Imm(2)), k.And(ptx.U32, lane, ptx.Imm(3))
	// The thread's byte of a W row: 8w+g of the consumer's 32, whose
	// 16-byte half the 32B swizzle flips on rows with bit 2 set (the
	// thread's rows 2t, 2t+1 mod 8 have it when t ≥ 2).
	byteCol := k.Xor(ptx.U32, k.Mad(ptx.U32, w, ptx.Imm(8), g), k.Shl(ptx.U32, k.Shr(ptx.U32, t, ptx.Imm(1)), ptx.Imm(4)))
	codes := k.Add(ptx.U32, k.Mad(ptx.U32, c, ptx.Imm(rsCodes), k.Shl(ptx.U32, t, ptx.Imm(6))), k.And(ptx.U32, byteCol, ptx.Imm(-4)))
	codes = k.Add(ptx.U32, codes, ptx.Imm(rk.codesOff))
	// the shift that brings the thread's byte of a word to bits 0..7
	shift := k.Shl(ptx.U32, k.And(ptx.U32, byteCol, ptx.Imm(3)), ptx.Imm(3))
	scales := k.Add(ptx.U32, k.Mad(ptx.U32, c, ptx.Imm(rsScales), k.Mad(ptx.U32, w, ptx.Imm(256), k.Shl(ptx.U32, t, ptx.Imm(4)))), ptx.Imm(rk.scalesOff))
	acc := k.WgmmaAcc(rk.p.BM)
	r := rk.ring().Cursor(k)
	rk.forTiles(func(tl rsTile) {
		// Zeroed, never undefined: ptxas serializes the wgmma (C7515)
		// when the first one's scale-d may read undefined accumulators.
		for _, a := range acc {
			k.MovTo(a, ptx.F32Imm(0))
		}
		rk.kLoop(base, r, codes, shift, scales, acc)
		rk.epilogue(tl, c, w, g, t, acc)
	})
}

// kLoop accumulates the tile: per k-tile, wait for the slot, dequantize
// all four k16 steps' fragments, fence, issue the four wgmma as one
// group, then wait until only that group is pending and release the
// previous k-tile's slot. The dequantization of a k-tile thus overlaps
// the previous k-tile's wgmma; the two alternate between two fragment
// sets (the loop is unrolled twice), since a wgmma reads its A registers
// until it completes. At the end, wait for all and release the last slot.
func (rk *rsKernel) kLoop(base ptx.Reg, r *hopper.Cursor, codes, shift, scales ptx.Reg, acc []ptx.Reg) {
	k := rk.k
	ab := gen.HalfType(rk.s.DType)
	lane0 := k.Setp("eq", ptx.U32, k.And(ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(31)), ptx.Imm(0))
	rel := hopper.NewReleaser(k, 1)
	var sets [2][4][4]ptx.Reg
	for i := range sets {
		for s := range sets[i] {
			for j := range sets[i][s] {
				sets[i][s][j] = k.Reg(rk.d.pt)
			}
		}
	}
	step := func(it ptx.Reg, frags [4][4]ptx.Reg) {
		r.WaitFull(base)
		slot := r.Data(base)
		cs, ss := k.Add(ptx.U32, slot, codes), k.Add(ptx.U32, slot, scales)
		for s := range frags {
			rk.fragment(frags[s], cs, ss, shift, s)
		}
		desc := k.WgmmaDesc(slot, 16, 1024, ptx.Swizzle128B)
		k.WgmmaFence()
		for s := range frags {
			b := desc
			if s > 0 {
				b = k.WgmmaDescAdd(desc, 32*s)
			}
			k.WgmmaRegA(ab, acc, frags[s], b, ptx.WgmmaOpts{})
		}
		k.WgmmaCommit()
		k.WgmmaWait(1)
		rel.Step(k.And(ptx.Pred, lane0, k.Setp("ne", ptx.U32, it, ptx.Imm(0))), r, base)
	}
	// An odd k-tile first, then pairs: the set a half writes is
	// never the one the pending group reads, on every path (ptxas
	// serializes the wgmma where it cannot tell, C7513).
	kt, first := rk.kCount(), 0
	if kt%2 == 1 {
		step(k.Mov(ptx.U32, ptx.Imm(0)), sets[1])
		first = 1
	}
	k.For(ptx.U32, ptx.Imm(first), ptx.Imm(kt), ptx.Imm(2), func(it ptx.Reg) {
		step(it, sets[0])
		step(k.Add(ptx.U32, it, ptx.Imm(1)), sets[1])
	})
	k.WgmmaWait(0)
	rel.Last(lane0)
}

// fragment dequantizes k16 step s's A fragment into f: W rows
// 16s+2t+{0,1} (f[0], f[1]) and 16s+2t+{8,9} (f[2], f[3]) of the
// thread's byte, high nibbles (even columns: A row g) into f[0], f[2],
// low nibbles (odd columns: A row g+8) into f[1], f[3]; a pair of W rows
// in the low then the high half. The step's four scales are one 16-byte
// load (the scale loaders store them in that order, scalePos).
func (rk *rsKernel) fragment(f [4]ptx.Reg, cs, ss, shift ptx.Reg, s int) {
	k := rk.k
	sc := k.Ld(ptx.Shared, ptx.F32, 4, ptx.At(ss, int64(4*16*s)))
	for h := range 2 {
		row := 16*s + 8*h // + 2t, + 1
		w0 := k.Ld(ptx.Shared, ptx.B32, 1, ptx.At(cs, int64(32*row)))[0]
		w1 := k.Ld(ptx.Shared, ptx.B32, 1, ptx.At(cs, int64(32*(row+1))))[0]
		// the codebook values of rows r and r+1: odd, even column each
		lut := func(b ptx.Reg, lo bool) ptx.Reg {
			at := k.Shr(ptx.B32, b, ptx.Imm(2))
			if lo {
				at = k.Shl(ptx.B32, b, ptx.Imm(2))
			}
			return k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Or(ptx.B32, k.And(ptx.B32, at, ptx.Imm(0x3C)), rk.d.lut), 0))[0]
		}
		b0, b1 := k.Shr(ptx.B32, w0, shift), k.Shr(ptx.B32, w1, shift)
		v := [4]ptx.Reg{lut(b0, true), lut(b0, false), lut(b1, true), lut(b1, false)}
		s0, s1 := sc[2*h], sc[2*h+1]
		k.MovTo(f[2*h], k.PackHalf2(rk.d.pt, k.Mul(ptx.F32, v[3], s1), k.Mul(ptx.F32, v[1], s0)))
		k.MovTo(f[2*h+1], k.PackHalf2(rk.d.pt, k.Mul(ptx.F32, v[2], s1), k.Mul(ptx.F32, v[0], s0)))
	}
}

// scalePos is where the scale loaders store W row r's scale among a
// k-tile's 64: thread t of a consumer reads k16 step s's rows 16s+2t,
// 16s+2t+1, 16s+2t+8 and 16s+2t+9 as one 16-byte word at 16s+4t.
func scalePos(k *ptx.Func, r ptx.Reg) ptx.Reg {
	step := k.And(ptx.U32, r, ptx.Imm(^15))
	t := k.Shl(ptx.U32, k.And(ptx.U32, k.Shr(ptx.U32, r, ptx.Imm(1)), ptx.Imm(3)), ptx.Imm(2))
	h := k.Shl(ptx.U32, k.And(ptx.U32, k.Shr(ptx.U32, r, ptx.Imm(3)), ptx.Imm(1)), ptx.Imm(1))
	return k.Or(ptx.U32, k.Or(ptx.U32, step, t), k.Or(ptx.U32, h, k.And(ptx.U32, r, ptx.Imm(1))))
}

// epilogue stores the accumulators: A row g (h 0) and g+8 (h 1) of warp
// w are dX columns i0 + 64c + 16w + 2g + h, accumulator column 8j + 2t + e
// is dX row m0 + 8j + 2t + e; the two columns of a row go as one word
// (under split-K as two f32, into the split's slice of the workspace).
// Rows past m (the tile's tail, whose dY rows TMA filled with zeros) and
// columns past k are not stored.
func (rk *rsKernel) epilogue(tl rsTile, c, w, g, t ptx.Reg, acc []ptx.Reg) {
	k, s := rk.k, rk.s
	pt := rk.d.pt
	col := k.Add(ptx.U32, k.Mad(ptx.U32, c, ptx.Imm(64), tl.i0), k.Mad(ptx.U32, w, ptx.Imm(16), k.Shl(ptx.U32, g, ptx.Imm(1))))
	row := k.Add(ptx.U32, tl.m0, k.Shl(ptx.U32, t, ptx.Imm(1)))
	colOK := k.Setp("lt", ptx.U32, col, ptx.Imm(s.K))
	left := k.Sub(ptx.S32, rk.m, row) // rows from the thread's first to m's end
	elem := k.Mad(ptx.U32, row, ptx.Imm(s.K), col)
	if rk.splits() > 1 {
		rk.partials(tl, elem, colOK, left, acc)
		return
	}
	ptr := k.Add(ptx.U64, rk.bufs["dx"], k.MulWide(ptx.U32, elem, ptx.Imm(2)))
	for j := range rk.p.BM / 8 {
		for e := range 2 {
			dr := 8*j + e
			ok := k.And(ptx.Pred, colOK, k.Setp("gt", ptx.S32, left, ptx.Imm(dr)))
			v := k.PackHalf2(pt, acc[4*j+2+e], acc[4*j+e])
			k.St(ptx.Global, ptx.B32, ptx.At(ptr, int64(2*dr*s.K)), []ptx.Reg{k.Mov(ptx.B32, v)})
			k.Guard(ok, false)
		}
	}
}

// partials stores the accumulators as the epilogue does, unrounded, into
// split tl.split's slice of the workspace (m·k f32 from split·m·k; the
// slices may pass 2³² bytes, an element index within one may not).
func (rk *rsKernel) partials(tl rsTile, elem, colOK, left ptx.Reg, acc []ptx.Reg) {
	k, s := rk.k, rk.s
	slice := k.MulWide(ptx.U32, tl.split, k.Mul(ptx.U32, rk.m, ptx.Imm(s.K)))
	at := k.Add(ptx.U64, k.Shl(ptx.U64, slice, ptx.Imm(2)), k.MulWide(ptx.U32, elem, ptx.Imm(4)))
	ptr := k.Add(ptx.U64, rk.bufs[gemm.WorkspaceName], at)
	if plantedDropPartial {
		colOK = k.And(ptx.Pred, colOK, k.Setp("ne", ptx.U32, tl.split, ptx.Imm(rk.splits()-1)))
	}
	for j := range rk.p.BM / 8 {
		for e := range 2 {
			dr := 8*j + e
			ok := k.And(ptx.Pred, colOK, k.Setp("gt", ptx.S32, left, ptx.Imm(dr)))
			k.St(ptx.Global, ptx.F32, ptx.At(ptr, int64(4*dr*s.K)), []ptx.Reg{acc[4*j+e], acc[4*j+2+e]})
			k.Guard(ok, false)
		}
	}
}

// plantedDropPartial makes the register-A kernels emitted while it is
// set leave the last split's partial sums unstored: the dropped-partial
// bug this package's tests plant (export_test.go). It is false in every
// other build.
var plantedDropPartial bool

// rem is a mod n (u32).
func rem(k *ptx.Func, a ptx.Reg, n int) ptx.Reg {
	return k.Sub(ptx.U32, a, k.Mul(ptx.U32, k.Div(ptx.U32, a, ptx.Imm(n)), ptx.Imm(n)))
}
