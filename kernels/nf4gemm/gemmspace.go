package nf4gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/variants"
)

// syncSmemMax is the dynamic shared memory per CTA the sync path allows
// (sm_80's 163 KB).
const syncSmemMax = 163 * 1024

// Space: the sync path's tiles, depths and lookups under the rules.
func (gemmDef) Space(s GEMMShape) variants.Typed[GEMMParams] {
	rule := func(name string, f func(GEMMShape, GEMMParams) error) variants.Rule[GEMMParams] {
		return variants.Rule[GEMMParams]{Name: name, Check: func(p GEMMParams) error { return f(s, p) }}
	}
	return variants.Typed[GEMMParams]{Rules: []variants.Rule[GEMMParams]{
		rule("tile columns within k", tileColumns),
		rule("shared memory fits", sharedFits),
		rule("pipeline no deeper than the k-loop", pipelineDepth),
	}}
}

func tileColumns(s GEMMShape, p GEMMParams) error {
	if p.BN > 64 && s.K < p.BN {
		return fmt.Errorf("bn=%d is wider than k=%d", p.BN, s.K)
	}
	return nil
}

// smemBytes is a variant's dynamic shared memory: stages of a dY tile and
// a dequantized W tile.
func smemBytes(p GEMMParams) int { return p.Stages * (p.BM + p.BN) * p.BK * 2 }

func sharedFits(_ GEMMShape, p GEMMParams) error {
	if n := smemBytes(p); n > syncSmemMax {
		return fmt.Errorf("%d bytes of shared memory, more than %d", n, syncSmemMax)
	}
	return nil
}

func pipelineDepth(s GEMMShape, p GEMMParams) error {
	if kt := s.N / p.BK; p.Stages > max(kt, 2) {
		return fmt.Errorf("stages=%d over %d k-tiles", p.Stages, kt)
	}
	return nil
}
