package nf4gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/variants"
)

// syncSmemMax is the dynamic shared memory per CTA the sync path allows
// (sm_80's 163 KB).
const syncSmemMax = 163 * 1024

// Space: every path's tiles, depths, lookups and, for the unfused and
// streamed paths, gemm_bwd's axes, under the rules. A rule lists the
// axes it reads where that lets the walk prune early (variants.Rule.Axes).
func (gemmDef) Space(s GEMMShape) variants.Typed[GEMMParams] {
	rule := func(name string, f func(GEMMShape, GEMMParams) error, axes ...string) variants.Rule[GEMMParams] {
		return variants.Rule[GEMMParams]{Name: name, Check: func(p GEMMParams) error { return f(s, p) }, Axes: axes}
	}
	return variants.Typed[GEMMParams]{Rules: []variants.Rule[GEMMParams]{
		rule("per-tile dequantization: tiles up to 192 columns, up to 5 stages", fusedTiles, "dequant", "bn", "stages"),
		rule("dequantized once: the wgmma path, bk=64, no per-tile axes, the lookup its kernel takes", denseFeatures,
			"mma", "bk", "dequant", "lookup", "codes", "cluster"),
		rule("path features", pathFeatures, "mma", "bm", "bn", "bk", "stages", "dequant", "lookup", "epilogue", "persistent", "codes", "cluster"),
		rule("tile columns within k", tileColumns, "bn", "dequant"),
		rule("shared memory fits", sharedFits, "mma", "bm", "bn", "bk", "stages", "dequant"),
		rule("pipeline no deeper than the k-loop", pipelineDepth, "mma", "bk", "stages", "dequant"),
		rule("per-tile dequantization: order=m, split-K on the register-A path alone", fusedAxes, "mma", "dequant", "splitk", "order"),
		rule("register-A split-K only below one wave, into at most two", registerASplit, "mma", "bm", "bn", "dequant", "splitk"),
		rule("dkernel, early: the unfused path's", unfusedKernel, "dequant", "dkernel", "early"),
		rule("96 and 160 columns only where their last wave is fuller", oddColumnsFill, "bm", "bn"),
		rule("dequantized once: gemm_bwd's dX point", denseAxes),
		rule("wgmma: what gemm_bwd's path emits, the deepest ring", wgmmaFits),
		rule("persistent only past one wave", persistence),
		rule("an adapter's dX: the shared-memory-B wgmma path and the dense paths", loraPath, "mma", "dequant"),
		{Name: searchSync, Check: func(p GEMMParams) error { return notSync(p) }, Axes: []string{"mma"}, Search: true},
		{Name: searchWarpgroups, Check: func(p GEMMParams) error { return notWarpgroups(p) }, Axes: []string{"dequant"}, Search: true},
		{Name: searchEarly, Check: func(p GEMMParams) error { return earlyOnSmall(s, p) }, Axes: []string{"early"}, Search: true},
	}}
}

// searchEarly is measured on an H100 only (the H200 has not timed
// early=1), against the committed winners' early=0 in one call.
const searchEarly = "search: early=1 at weights past 4M elements, 1.9–7.0% slower at 1536×8960 on an H100 (3.7% faster at 1536×1536, 512 tokens; testdata/nf4/early-1207-h100)"

// earlyWeight is the largest weight (N·K elements) the search tries
// early=1 at.
const earlyWeight = 4 << 20

func earlyOnSmall(s GEMMShape, p GEMMParams) error {
	if p.Early == 1 && s.N*s.K > earlyWeight {
		return fmt.Errorf("early=1 at a %d×%d weight is left out of the search (%s)", s.N, s.K, searchEarly)
	}
	return nil
}

// The search rules (variants.Rule.Search), each a measured fact: over
// every case of the run each one cites, the best variant of the path it
// names was at least that much slower than the case's best
// (internal/evidence's TestNF4SearchRules recomputes both bounds from that
// database). Each case's winner stays in the search. --params mma=sync or
// dequant=producer (dedicated) searches them again; docs/kernels/nf4.md
// gives the run and what the rules leave of the space.
const (
	searchSync       = "search: the sync path, at least 2.07× the best on the H200 (testdata/nf4/h200-nf4-22.db.gz)"
	searchWarpgroups = "search: per-tile dequantization by producer or dedicated warps, at least 1.13× the best on the H200 (testdata/nf4/h200-nf4-22.db.gz)"
)

func notSync(p GEMMParams) error {
	if p.MMA == "sync" {
		return fmt.Errorf("mma=sync is left out of the search (%s)", searchSync)
	}
	return nil
}

func notWarpgroups(p GEMMParams) error {
	if p.Dequant == Producers || p.Dequant == Dedicated {
		return fmt.Errorf("dequant=%s is left out of the search (%s)", p.Dequant, searchWarpgroups)
	}
	return nil
}

// loraPath: an adapter's k-tile (lora=r) is dense, dh and A loaded as
// they are. The shared-memory-B wgmma path's producer thread loads it by
// TMA into a slot its fillers leave alone, and the unfused and streamed
// paths are gemm_bwd's kernel, which takes lora=r (gemm_bwd's own rule
// then keeps stream-K out). The sync path's math warps write every W
// tile themselves between their MMAs, so the adapter's tile would take
// a second copy of its loads and stores; the register-A path's
// consumers build their A operand (Wᵀ) in registers from codes, so the
// adapter's Aᵀ would take fragment loads from shared memory of their
// own: neither takes it.
func loraPath(s GEMMShape, p GEMMParams) error {
	if s.LoRA > 0 && (p.MMA == "sync" || p.Dequant == Consumers) {
		return fmt.Errorf("lora=%d takes mma=wgmma with dequant producer, dedicated, unfused or streamed", s.LoRA)
	}
	return nil
}

// fusedTiles: the paths that dequantize per tile take tiles up to 192
// columns and rings up to 5 stages (deeper ones do not fit their slots).
func fusedTiles(_ GEMMShape, p GEMMParams) error {
	if p.Dequant.fused() && (p.BN > 192 || p.Stages > 5) {
		return fmt.Errorf("dequant=%s takes bn up to 192 and stages up to 5", p.Dequant)
	}
	return nil
}

// fusedAxes: the paths that dequantize per tile take order=m (they have
// no stream-K) and splitk=1, but for the register-A path (registerASplit).
func fusedAxes(_ GEMMShape, p GEMMParams) error {
	if !p.Dequant.fused() {
		return nil
	}
	if p.Order != gemm.OrderM {
		return fmt.Errorf("dequant=%s takes order=m", p.Dequant)
	}
	if p.SplitK != 1 && (p.MMA != "wgmma" || p.Dequant != Consumers) {
		return fmt.Errorf("dequant=%s on mma=%s takes splitk=1 (split-K: the register-A path)", p.Dequant, p.MMA)
	}
	return nil
}

// registerASplit: the register-A path splits the reduction (split-K) only
// where its tiles fill less than one wave, into at most two waves of
// work items, as gemm_bwd's rule for its own split-K (a slice of the
// workspace is m×k, within u32 indexing by the shape's own bound; the
// grid is not persistent, which rsCheck requires).
func registerASplit(s GEMMShape, p GEMMParams) error {
	if p.SplitK == 1 || p.Dequant != Consumers || p.MMA != "wgmma" {
		return nil
	}
	switch t := newRS(s, p).tilesAt(s.M); {
	case t >= numSMs:
		return fmt.Errorf("splitk=%d with %d tiles, already a wave", p.SplitK, t)
	case t*p.SplitK > 2*numSMs:
		return fmt.Errorf("splitk=%d makes %d work items, more than two waves", p.SplitK, t*p.SplitK)
	}
	return nil
}

// unfusedKernel: only the unfused path runs a dequantization kernel of
// its own; the others take dkernel's and early's defaults. The unfused path tunes it
// because neither of its kernels wins at every weight, lookup and scale
// format (docs/kernels/nf4.md gives nf4_dequant's H200 figures).
func unfusedKernel(_ GEMMShape, p GEMMParams) error {
	if p.Dequant != Unfused && (p.DKernel != "8x256" || p.Early != 0) {
		return fmt.Errorf("dequant=%s takes dkernel=8x256 and early=0 (only the unfused path runs that kernel)", p.Dequant)
	}
	return nil
}

// oddColumnsFill: gemm_bwd's 96- and 160-column tiles (192×96, 128×160)
// exist for wave quantization, so they are tried only where their tiles
// fill the last wave of gemm.Wave CTAs better than every tile of 128, 192
// or 256 rows by 128, 192 or 256 columns: 512 tokens through down's
// 1536×8960 weight make 224 tiles of 128×160 (85% of two waves) where
// 128×192 makes 188 and 128×128 makes 280 (71% of two and three).
func oddColumnsFill(s GEMMShape, p GEMMParams) error {
	if p.BN != 96 && p.BN != 160 {
		return nil
	}
	best := 0.0
	for _, bm := range []int{128, 192, 256} {
		for _, bn := range []int{128, 192, 256} {
			best = max(best, waveFill(s, bm, bn))
		}
	}
	if f := waveFill(s, p.BM, p.BN); f <= best {
		return fmt.Errorf("bn=%d: %d×%d tiles fill %.0f%% of their waves, no more than the 128-, 192- and 256-column tiles' best %.0f%%", p.BN, p.BM, p.BN, 100*f, 100*best)
	}
	return nil
}

// waveFill is the share of its waves' CTA slots that s's dX tiles of
// bm×bn fill.
func waveFill(s GEMMShape, bm, bn int) float64 {
	t := gen.CeilDiv(s.M, bm) * gen.CeilDiv(s.K, bn)
	return float64(t) / float64(gemm.WaveSlots(t))
}

// denseFeatures: the unfused and streamed paths are gemm_bwd's dX kernel
// on the wgmma path (bk=64), the per-tile axes at their defaults (codes
// tma, cluster 1); the streamed path's chunks use the shared-memory
// codebook, the unfused path's kernel smem or prmt.
func denseFeatures(_ GEMMShape, p GEMMParams) error {
	if p.Dequant.fused() {
		return nil
	}
	switch {
	case p.MMA != "wgmma" || p.BK != 64 || p.Codes != "tma" || p.Cluster != 1:
		return fmt.Errorf("dequant=%s takes mma=wgmma, bk=64, codes=tma, cluster=1", p.Dequant)
	case p.Lookup == LookupSel || p.Dequant == Streamed && p.Lookup != LookupSmem:
		return fmt.Errorf("dequant=%s takes lookup=smem%s", p.Dequant, map[bool]string{true: " or prmt"}[p.Dequant == Unfused])
	}
	return nil
}

// denseAxes: the unfused and streamed paths take a point of gemm_bwd's
// space at the dense shape, which DXGemm.Check applies (a streamed
// variant's consumers within what the producing warps leave).
func denseAxes(s GEMMShape, p GEMMParams) error {
	if p.Dequant.fused() {
		return nil
	}
	return s.dxGemm(p).Check(p.gemmParams())
}

// pathFeatures: the sync path takes bk=32, its math warps dequantizing,
// direct stores, no persistence, tiles up to 128×128 (64 or 128 columns), at most 4
// stages; the wgmma path bk=64, tiles of 128 or 256 rows by 128 or 192
// columns (within the consumers' registers: gemm.WrittenB.Check), the
// producer's warps (or those and a dedicated warpgroup) dequantizing with
// a table lookup (the selp tree's 15
// selp per code would outweigh the MMAs). A B tile's dequantization costs
// the same for 128 and 256 rows, the MMAs twice as much for 256.
func pathFeatures(_ GEMMShape, p GEMMParams) error {
	if !p.Dequant.fused() {
		return nil // denseAxes
	}
	if p.MMA == "sync" {
		if p.BK != 32 || p.Dequant != Consumers || p.Epilogue != gemm.Direct || p.Persistent || p.BM > 128 || p.BN > 128 || p.BN%64 != 0 || p.Stages > 4 || p.Codes != "tma" || p.Cluster != 1 {
			return fmt.Errorf("mma=sync takes bk=32, dequant=consumer, epilogue=direct, persistent=0, tiles up to 128×128 of 64 or 128 columns, stages <= 4, codes=tma, cluster=1 (the codes and cluster axes are the wgmma path's)")
		}
		return nil
	}
	if p.Dequant == Consumers {
		// lookup=prmt needs the f32 codebook as four byte planes here (21
		// prmt per 4 codes): slower on the H200 than the shared table's
		// loads (docs/kernels/nf4.md)
		if p.Lookup != LookupSmem || p.Codes != "tma" || p.Cluster != 1 || p.Epilogue != gemm.Direct {
			return fmt.Errorf("mma=wgmma dequant=consumer takes lookup=smem, codes=tma, cluster=1, epilogue=direct")
		}
		return nil
	}
	if p.BK != 64 || p.BM < 128 || p.BN != 128 && p.BN != 192 && p.BN != 256 || p.Lookup == LookupSel {
		return fmt.Errorf("mma=wgmma takes bk=64, bm 128 or 256, bn 128 or 192, lookup smem or prmt")
	}
	return nil
}

// wgmmaFits: the wgmma path emits the point (gemm.WrittenB.Check, or
// rsCheck for the register-A path) with the deepest ring that fits (at
// most 5 stages).
func wgmmaFits(s GEMMShape, p GEMMParams) error {
	if !p.Dequant.fused() {
		return nil // denseAxes
	}
	if p.MMA != "wgmma" {
		return nil
	}
	if p.Dequant == Consumers {
		return deepest(p, func(q GEMMParams) error { return rsCheck(s, q) })
	}
	w, src := p.writtenB(s), &wgSource{s: s, w: s.weight(), p: p}
	return deepest(p, func(q GEMMParams) error { return w.Check(wgParams(q), src) })
}

// persistence: a persistent grid only where the tiles pass one wave of
// the H200's 132 SMs (within a wave it runs the same CTAs).
func persistence(s GEMMShape, p GEMMParams) error {
	if !p.Dequant.fused() {
		return nil // denseAxes
	}
	tiles := s.writtenB().Tiles(wgParams(p))
	if p.Dequant == Consumers {
		tiles = newRS(s, p).tilesAt(s.M)
	}
	if p.Persistent && tiles <= numSMs {
		return fmt.Errorf("persistent=1 with %d tiles, one wave", tiles)
	}
	return nil
}

// deepest: check passes p, and a deeper ring fails it or passes 5 stages.
func deepest(p GEMMParams, check func(GEMMParams) error) error {
	if err := check(p); err != nil {
		return err
	}
	deeper := p
	deeper.Stages++
	if p.Stages < 5 && check(deeper) == nil {
		return fmt.Errorf("stages=%d: %d fit", p.Stages, deeper.Stages)
	}
	return nil
}

// numSMs is the H200's multiprocessors, for the persistence rule.
const numSMs = 132

func tileColumns(s GEMMShape, p GEMMParams) error {
	if !p.Dequant.fused() {
		return nil // denseAxes
	}
	if p.BN > 64 && s.K < p.BN {
		return fmt.Errorf("bn=%d is wider than k=%d", p.BN, s.K)
	}
	return nil
}

// smemBytes is a variant's dynamic shared memory: stages of a dY tile and
// a dequantized W tile.
func smemBytes(p GEMMParams) int { return p.Stages * (p.BM + p.BN) * p.BK * 2 }

func sharedFits(_ GEMMShape, p GEMMParams) error {
	if !p.Dequant.fused() {
		return nil // denseAxes
	}
	if n := smemBytes(p); p.MMA == "sync" && n > syncSmemMax {
		return fmt.Errorf("%d bytes of shared memory, more than %d", n, syncSmemMax)
	}
	return nil
}

func pipelineDepth(s GEMMShape, p GEMMParams) error {
	if !p.Dequant.fused() {
		return nil // denseAxes
	}
	if kt := s.N / p.BK; p.MMA == "sync" && p.Stages > max(kt, 2) {
		return fmt.Errorf("stages=%d over %d k-tiles", p.Stages, kt)
	}
	return nil
}
