package gemm

import (
	"fmt"
	"slices"

	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/variants"
)

// Limits the rules enforce.
const (
	numSMs        = 132                 // H200 multiprocessors: what "one wave" means in the rules
	smemMax       = hopper.MaxCTAShared // dynamic shared memory per CTA on sm_90 (sm_80: 163 KB, see syncSmemMax)
	syncSmemMax   = 163 * 1024          // on sm_80, which the sync path also targets
	smemSlack     = 1024                // to round the dynamic shared base up to 1024 bytes (128B swizzle)
	regOverhead   = 48                  // registers besides the accumulators (addresses, counters, descriptors)
	groupRows     = 8                   // tile rows per group of the grouped order
	smallTileMaxK = 8                   // wgmma tiles under 128×128 also for reductions this short (k-tiles)
	skFixupMax    = 256 << 10           // bytes of partials a stream-K owner may add (about)
)

// splitKs are the split-K factors.
var splitKs = variants.Ints(1, 2, 3, 4, 6, 8)

// paths lists the MMA paths the family emits.
var paths = []string{string(Sync), string(WGMMA)}

// Space: the paths the family emits and the split-K factors, under the
// rules the package doc lists.
func (def) Space(s Shape) variants.Typed[Params] {
	g := problemOf(s)
	// A rule lists the axes it reads where that lets the walk prune early
	// (variants.Rule.Axes).
	rule := func(name string, f func(problem, Params) error, axes ...string) variants.Rule[Params] {
		return variants.Rule[Params]{Name: name, Check: func(p Params) error { return f(g, p) }, Axes: axes}
	}
	return variants.Typed[Params]{
		Values: map[string][]string{"mma": paths, "splitk": splitKs},
		Rules: []variants.Rule[Params]{
			rule("sync path has no cluster, multicast, persistent grid, TMA epilogue or register split", syncFeatures),
			rule("tile shape the path supports; wgmma tiles under 128×128 only for skinny C or short reductions", tileShape, "mma", "bm", "bn", "bk", "consumers", "cluster", "splitk"),
			rule("warp layout: wgmma two consumers (one on 64-row tiles, three on 192-row tiles) with a register split; sync 8 warps on 128×128 tiles", warpLayout),
			rule("multicast exactly with a cluster", multicast, "cluster", "multicast"),
			rule("clusters pair tile rows", clusterRows, "bm", "cluster"),
			rule("accumulators fit in registers", registers),
			rule("shared memory fits", sharedFits),
			rule("pipeline as deep as fits and the k-loop needs", pipelineDepth),
			rule("split-K only below one wave, each split at least two k-tiles", splitK, "bm", "bn", "bk", "splitk"),
			rule("split-K workspace within u32 indexing", workspaceSize, "splitk"),
			rule("split-K partials are stored directly", splitEpilogue),
			rule("dsmem split-K: wgmma, a cluster of the splits (at most 8) on one wave, the partial within the ring", dsmemReduce),
			rule("tile order and persistence past one wave only; persistent grids grouped, sync grids m or n", tileOrder, "mma", "bm", "bn", "splitk", "order", "persistent"),
			rule("wgmma clusters on reductions past 8 k-tiles, order m or grouped, unsplit, TMA store", wgmmaFeatures),
			rule("stream-K on the wgmma path's persistent grids under two waves of tiles, unsplit, no cluster", streamK, "mma", "bm", "bn", "bk", "cluster", "splitk", "order", "persistent"),
			rule("an adapter's dX on the wgmma path, no cluster, no stream-K", loraPath, "mma", "cluster", "order"),
		},
	}
}

// geometry of a variant on a problem.
func tilesR(g problem, p Params) int { return gen.CeilDiv(g.r, p.BM) }
func tilesC(g problem, p Params) int { return gen.CeilDiv(g.c, p.BN) }
func tiles(g problem, p Params) int  { return tilesR(g, p) * tilesC(g, p) }
func kTiles(g problem, p Params) int { return gen.CeilDiv(g.l, p.BK) + g.loraTiles(p.BK) }

// WaveSlots is the CTA slots of the waves that t CTAs take: t rounded up
// to whole waves of Wave.
func WaveSlots(t int) int { return gen.CeilDiv(t, Wave) * Wave }

func syncFeatures(_ problem, p Params) error {
	if p.MMA != Sync {
		return nil
	}
	if p.Cluster != 1 || p.Multicast || p.Persistent || p.Epilogue != Direct || p.RegSplit {
		return fmt.Errorf("mma=sync takes cluster=1 multicast=0 persistent=0 epilogue=direct regsplit=0")
	}
	return nil
}

// wgmmaFeatures: a cluster of two CTAs on consecutive tile rows of one
// tile column shares B by TMA multicast, halving the B tile's L2 reads,
// which pays where L2 bandwidth bounds the run: long loops over big
// tiles, and small tiles in deep rings (cuBLAS multicasts its 64×64 tiles
// on dW k·v; docs/kernels/gemm.md has the H200 reads behind this).
// Its two CTAs take consecutive tile indices, which share a column in
// order m and grouped (tile rows in even groups), not in order n;
// reductions of more than smallTileMaxK k-tiles (short loops are
// latency-bound), the TMA store and no split keep the points few.
func wgmmaFeatures(g problem, p Params) error {
	if p.MMA != WGMMA || p.Cluster == 1 {
		return nil
	}
	switch {
	case kTiles(g, p) <= smallTileMaxK:
		return fmt.Errorf("cluster=%d on a reduction of %d k-tiles (latency-bound)", p.Cluster, kTiles(g, p))
	case p.Order == OrderN || p.SplitK > 1 || p.Epilogue != TMAStore:
		return fmt.Errorf("cluster=%d takes order m or grouped, splitk=1, epilogue=tma", p.Cluster)
	}
	return nil
}

// tileShape: sync tiles are at most 128×128 with bk=32 (warp tiles of
// 16-multiples); wgmma tiles are one or two m64 rows of wgmma per consumer,
// columns in 64-element atoms (B is MN-major: a 128-byte swizzled TMA box
// is 64 elements wide) and bk=64 (one 128-byte swizzle row of a K-major
// A). Tiles under 128×128 (small-N wgmma runs below peak) only where
// latency, not MMA throughput, bounds the run: when 128×128 tiles leave
// SMs idle (skinny C: more, smaller tiles and deeper split-K) or the
// reduction is at most smallTileMaxK k-tiles (each tile's prologue and
// epilogue dominate; smaller tiles spread them over more SMs). Such a
// tile is smaller than 128×128 in area (64×256 and 256×64 make as many
// tiles as 128×128 with less reuse), and with split-K its CTAs stay
// within one wave (past it, a larger tile runs the same split in the
// same waves with less traffic).
func tileShape(g problem, p Params) error {
	switch p.MMA {
	case Sync:
		if p.BM > 128 || p.BN > 128 || p.BN%64 != 0 || p.BK != 32 {
			return fmt.Errorf("mma=sync tiles are at most 128×128 with bk=32, not %d×%d×%d", p.BM, p.BN, p.BK)
		}
	case WGMMA:
		rows := p.BM / p.Consumers
		if p.BK != 64 || rows != 64 && rows != 128 || p.BN%32 != 0 {
			return fmt.Errorf("mma=wgmma needs bk=64, 64 or 128 rows per consumer, bn a multiple of 32 (bm=%d consumers=%d bn=%d bk=%d)", p.BM, p.Consumers, p.BN, p.BK)
		}
		if p.BN%64 != 0 {
			return oddColumns(p)
		}
		t128 := gen.CeilDiv(g.r, 128) * gen.CeilDiv(g.c, 128)
		if small := p.BM < 128 || p.BN < 128; small {
			switch {
			case t128 >= numSMs && kTiles(g, p) > smallTileMaxK:
				return fmt.Errorf("mma=wgmma %d×%d tiles: 128×128 tiles already fill a wave (%d) over %d k-tiles", p.BM, p.BN, t128, kTiles(g, p))
			case p.BM*p.BN >= 128*128:
				return fmt.Errorf("mma=wgmma %d×%d tiles: no smaller than 128×128", p.BM, p.BN)
			case p.SplitK > 1 && tiles(g, p)*p.SplitK > numSMs:
				return fmt.Errorf("mma=wgmma %d×%d tiles with splitk=%d: %d CTAs, past one wave", p.BM, p.BN, p.SplitK, tiles(g, p)*p.SplitK)
			}
		}
	}
	return nil
}

// oddColumns: 96- and 160-column tiles (B in 64B-swizzled atoms of 32
// columns) exist for wave quantization, not for latency: 192×96 makes
// 128 tiles of a 1536×1536 C where 128×192 makes 96 (cuBLAS's choice for
// dW q·o), 128×160 makes 120: those two shapes only, with no cluster (the
// multicast halves 128-byte k-rows).
func oddColumns(p Params) error {
	if !(p.BM == 192 && p.BN == 96 || p.BM == 128 && p.BN == 160) || p.Cluster > 1 {
		return fmt.Errorf("mma=wgmma bn=%d (64B-swizzled B) takes 192×96 or 128×160 tiles and cluster=1 (bm=%d cluster=%d)", p.BN, p.BM, p.Cluster)
	}
	return nil
}

// warpLayout: wgmma runs a producer and two consumer warpgroups, whose
// 384 threads hold large accumulators only with the register split (the
// ladder's step 5), one consumer on a 64-row tile (one m64 block) or
// three on a 192-row tile (one m64 block each: 2048 rows make 11 tile
// rows, 132 tiles of 192×128 on a 1536-column C, cuBLAS's choice there);
// sync runs 8 warps only on 128×128 tiles (warp tiles of 64×32), 4 warps
// otherwise.
func warpLayout(_ problem, p Params) error {
	switch {
	case p.MMA == WGMMA && (p.Consumers != wgConsumersAt(p.BM, p.CTAs()) || !p.RegSplit):
		return fmt.Errorf("mma=wgmma takes regsplit=1 and consumers=2, or consumers=1 with bm=64, 3 with bm=192 (with two CTAs an SM, one per 128 rows)")
	case p.MMA == Sync && p.Consumers > 2:
		return fmt.Errorf("mma=sync takes 4 or 8 warps (consumers 1 or 2)")
	case p.MMA == Sync && p.Consumers == 2 && (p.BM != 128 || p.BN != 128):
		return fmt.Errorf("mma=sync takes consumers=2 only with 128×128 tiles")
	}
	return nil
}

// wgConsumersAt is the consumer warpgroups of a bm-row wgmma tile of
// which an SM holds ctas CTAs: wgConsumers for one; for more, one
// warpgroup per 128 rows (two m64 blocks each), since four warpgroups of
// two CTAs already keep the tensor cores fed and each warpgroup more
// takes registers from the accumulators.
func wgConsumersAt(bm, ctas int) int {
	if ctas > 1 {
		return max(1, bm/128)
	}
	return wgConsumers(bm)
}

// wgConsumers is the consumer warpgroups of a bm-row wgmma tile: one
// m64 block each, or two on 256-row tiles.
func wgConsumers(bm int) int {
	if bm == 256 {
		return 2
	}
	return bm / 64
}

// multicast: a cluster exists to share the B tile.
func multicast(_ problem, p Params) error {
	if p.Multicast != (p.Cluster == 2) {
		return fmt.Errorf("multicast=1 exactly with cluster=2")
	}
	return nil
}

func clusterRows(g problem, p Params) error {
	if tr := tilesR(g, p); tr%p.Cluster != 0 {
		return fmt.Errorf("cluster=%d does not divide the %d tile rows", p.Cluster, tr)
	}
	return nil
}

// accRegs is the f32 accumulator registers per math thread.
func accRegs(p Params) int {
	if p.MMA == Sync {
		wm, wn := syncWarps(p)
		return (p.BM / wm) * (p.BN / wn) / 32
	}
	return p.BM / p.Consumers * p.BN / 128
}

// regCap is the registers a math thread may use: what setmaxnreg.inc
// gives a consumer (consumerRegs: 232 with two consumers, whose 192
// accumulators of a 256×192 tile spilled 1.6 KB per thread on the H200),
// else the register file shared by the CTA's threads (at most 255).
func regCap(p Params) int {
	if p.RegSplit {
		return consumerRegs(p)
	}
	threads := 128 * p.Consumers
	if p.MMA == WGMMA {
		threads += 128 // the producer warpgroup
	}
	return hopper.RegsFor(threads, p.CTAs())
}

func registers(_ problem, p Params) error {
	need := accRegs(p) + regOverhead
	if p.MMA == Sync {
		wm, wn := syncWarps(p)
		need += p.BM/wm/16*4 + p.BN/wn/8*2 // A and B fragments of a k16 step
	}
	if c := regCap(p); need > c {
		return fmt.Errorf("%d accumulator registers need %d per thread, more than %d", accRegs(p), need, c)
	}
	return nil
}

// smemBytes is the dynamic shared memory of a variant.
func smemBytes(g problem, p Params, stages int) int {
	n := stages * (p.BM + p.BN) * p.BK * g.in.Size()
	if p.MMA == WGMMA {
		n += smemSlack + 2*8*stages // and the full and empty barriers
		if p.Epilogue == TMAStore {
			n += p.BM * p.BN * g.od.Size()
		}
	}
	return n
}

func smemLimit(p Params) int {
	if p.MMA == Sync {
		return syncSmemMax
	}
	if p.CTAs() > 1 {
		return hopper.SharedPerSM/p.CTAs() - hopper.CTASharedReserved
	}
	return smemMax
}

func sharedFits(g problem, p Params) error {
	if n := smemBytes(g, p, p.Stages); n > smemLimit(p) {
		return fmt.Errorf("%d bytes of shared memory, more than %d", n, smemLimit(p))
	}
	return nil
}

// wgStages are the ring depths the wgmma path takes: small tiles run
// deep rings (cuBLAS runs 13 stages of 64×64 on dW k·v), where the
// k-tile rate is bound by the loads in flight.
var wgStages = []int{2, 3, 4, 5, 6, 8, 12}

// maxStages is the deepest pipeline that fits (sync: at most 4; wgmma:
// the deepest of wgStages).
func maxStages(g problem, p Params) int {
	if p.MMA == Sync {
		n := 4
		for n > 2 && smemBytes(g, p, n) > smemLimit(p) {
			n--
		}
		return n
	}
	i := len(wgStages) - 1
	for i > 0 && smemBytes(g, p, wgStages[i]) > smemLimit(p) {
		i--
	}
	return wgStages[i]
}

// pipelineDepth: the deepest ring that fits, but no more stages than a
// split has k-tiles (also in persistent grids, where the ring runs on
// into the next tile: deeper rings did not pay there on the H200).
func pipelineDepth(g problem, p Params) error {
	if want := ringDepth(g, p); p.Stages != want {
		return fmt.Errorf("stages=%d: want %d (%d fit in shared memory, %d k-tiles per split)", p.Stages, want, maxStages(g, p), max(kTiles(g, p)/p.SplitK, 2))
	}
	return nil
}

// ringDepth is the stages pipelineDepth wants.
func ringDepth(g problem, p Params) int {
	want := min(maxStages(g, p), max(kTiles(g, p)/p.SplitK, 2))
	if p.MMA == WGMMA {
		for !slices.Contains(wgStages, want) {
			want--
		}
	}
	return want
}

func splitK(g problem, p Params) error {
	switch t := tiles(g, p); {
	case p.SplitK == 1:
	case t >= numSMs:
		return fmt.Errorf("splitk=%d with %d tiles, already a wave", p.SplitK, t)
	case kTiles(g, p) < 2*p.SplitK:
		return fmt.Errorf("splitk=%d over %d k-tiles", p.SplitK, kTiles(g, p))
	case t*p.SplitK > 2*numSMs:
		return fmt.Errorf("splitk=%d makes %d CTAs, more than two waves", p.SplitK, t*p.SplitK)
	}
	return nil
}

func workspaceSize(g problem, p Params) error {
	if p.SplitK > 1 && p.SplitK*g.r*g.c > gen.MaxElems {
		return fmt.Errorf("splitk=%d: a workspace of %d×%d×%d f32", p.SplitK, p.SplitK, g.r, g.c)
	}
	return nil
}

// dsmemReduce: reduce=dsmem only where there are splits (splitk=1 takes
// launch), on the wgmma path without a B-multicast cluster, persistent
// grid or written B, with at most 8 splits (a portable cluster) and its
// CTAs within one wave (a cluster waits for its whole SM group), at most
// dsmemAccMax accumulators per thread, and the f32 partial tile (BM·BN·4
// bytes) fits in the ring it reuses.
// dsmemAccMax bounds reduce=dsmem's accumulators per thread: the sum
// after the CTA-wide cluster barrier runs outside the consumers'
// setmaxnreg region, and ptxas 12.4 spilled 128×160 and 128×192 tiles
// (80 and 96 accumulators) there.
const dsmemAccMax = 64

func dsmemReduce(g problem, p Params) error {
	if p.Reduce != ReduceDSMEM {
		return nil
	}
	switch {
	case p.SplitK == 1:
		return fmt.Errorf("reduce=dsmem without splits: splitk=1 takes reduce=launch")
	case p.MMA != WGMMA || p.Cluster != 1 || p.Persistent || p.SplitK > 8:
		return fmt.Errorf("reduce=dsmem takes mma=wgmma cluster=1 persistent=0 and splitk <= 8")
	case tiles(g, p)*p.SplitK > numSMs:
		return fmt.Errorf("reduce=dsmem with %d CTAs: more than one wave of clusters", tiles(g, p)*p.SplitK)
	case accRegs(p) > dsmemAccMax:
		return fmt.Errorf("reduce=dsmem: %d accumulator registers, more than %d", accRegs(p), dsmemAccMax)
	case p.BM*p.BN*4 > p.Stages*(p.BM+p.BN)*p.BK*g.in.Size():
		return fmt.Errorf("reduce=dsmem: a %d KB partial does not fit the %d-stage ring", p.BM*p.BN*4>>10, p.Stages)
	}
	return nil
}

func splitEpilogue(_ problem, p Params) error {
	if p.SplitK > 1 && p.Epilogue != Direct {
		return fmt.Errorf("splitk=%d takes epilogue=direct", p.SplitK)
	}
	return nil
}

// tileOrder: with every CTA resident at once the order of tiles and a
// persistent loop change nothing, so such points would repeat others:
// order=m there. Past a wave, a persistent grid walks grouped tiles
// (its producer loads the next tile while the consumers store this one);
// other grids take order m or n, and on the wgmma path grouped too (a
// wave of 132 CTAs then covers about a square of tiles, whose A rows and
// B columns are read by several CTAs at once while they sit in L2, where
// m or n reads a whole row or column of tiles; docs/kernels/gemm.md has
// the H200 figures).
func tileOrder(g problem, p Params) error {
	ctas := tiles(g, p) * p.SplitK
	switch {
	case p.Order == StreamK: // its own rule
	case ctas <= numSMs && (p.Order != OrderM || p.Persistent):
		return fmt.Errorf("%d CTAs fit one wave: order=m persistent=0", ctas)
	case ctas > numSMs && p.Persistent && p.Order != Grouped:
		return fmt.Errorf("persistent=1 takes order=grouped")
	case ctas > numSMs && p.MMA == Sync && p.Order == Grouped:
		return fmt.Errorf("mma=sync takes order m or n")
	}
	return nil
}

// syncWarps is the warp grid of the sync path: 2×2 warps, or 2×4 (4×2
// when the tile is taller than wide) with two warpgroups.
func syncWarps(p Params) (wm, wn int) {
	switch {
	case p.Consumers == 1:
		return 2, 2
	case p.BM > p.BN:
		return 4, 2
	}
	return 2, 4
}

// streamK: a stream-K grid keeps every SM busy where whole tiles cannot:
// under two waves of tiles (past them, the last wave's idle SMs are a
// small part of the run) that fill less than 90% of their waves (128
// tiles on 132 SMs gain too little to pay for the partials), a
// persistent grid of one CTA per SM on the wgmma path, each CTA at least
// two k-tiles on the H200's 132 SMs; no split-K (stream-K replaces it)
// and no cluster (a tile's k-tiles are spread over CTAs that are not
// neighbours). A tile's owner adds up to ⌈132/tiles⌉ partials of BM·BN
// f32 from L2 on one SM, at the end of the run: at most skFixupMax bytes
// (k·v dW: 128×128 tiles would add 6 of 64 KB; 64×64 adds 2 of 16 KB),
// which also keeps a tile's partials within the validation bound's 16.
func streamK(g problem, p Params) error {
	if p.Order != StreamK {
		return nil
	}
	t := tiles(g, p)
	n := t * kTiles(g, p)
	switch {
	case p.MMA != WGMMA || !p.Persistent || p.SplitK != 1 || p.Cluster != 1:
		return fmt.Errorf("order=streamk takes mma=wgmma persistent=1 splitk=1 cluster=1")
	case t >= 2*numSMs:
		return fmt.Errorf("order=streamk with %d tiles: two waves or more", t)
	case 10*t >= 9*WaveSlots(t):
		return fmt.Errorf("order=streamk with %d tiles: whole tiles fill 90%% of their waves", t)
	case n < 2*numSMs:
		return fmt.Errorf("order=streamk over %d k-tiles: fewer than two per SM", n)
	case gen.CeilDiv(numSMs, t)*p.BM*p.BN*4 > skFixupMax:
		return fmt.Errorf("order=streamk with %d tiles of %d×%d: an owner adds %d partials of %d KB", t, p.BM, p.BN, gen.CeilDiv(numSMs, t), p.BM*p.BN*4>>10)
	}
	return nil
}

// loraPath: the adapter's k-tiles are loaded by the wgmma path's
// producer from their own tensor maps, without a cluster's multicast of
// B and outside stream-K's segments.
func loraPath(g problem, p Params) error {
	if g.lora > 0 && (p.MMA != WGMMA || p.Cluster != 1 || p.Order == StreamK) {
		return fmt.Errorf("lora=%d takes mma=wgmma, cluster=1 and no stream-K", g.lora)
	}
	return nil
}
