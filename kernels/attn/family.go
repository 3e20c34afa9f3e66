package attn

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/variants"
)

// Families is flash_attn_bwd.
func Families() []kernels.Family { return []kernels.Family{kernels.Define(family{})} }

// maxAccRegs bounds a thread's f32 accumulators in the main kernel: Sᵀ
// and dPᵀ of its m16 key block ([16 × bm] each) and dK, dV ([16 × d]
// each), 2·(bm + d)/2·… per thread = bm + d.
const maxAccRegs = 192

// pad is the padding of a head's row of the per-query scratch (log-sum-exp
// in base 2 and D): a multiple of every bm.
const pad = 128

// Shape is one attention layer's backward: b sequences of s tokens, hq
// query heads sharing hk key/value heads (hq a multiple of hk), head dim
// d, causal or not.
type Shape struct {
	B      int `dim:"b,optional=1"`
	S      int `dim:"s"`
	HQ     int `dim:"hq"`
	HK     int `dim:"hk"`
	D      int `dim:"d"`
	Causal int `dim:"causal,optional=0"`
	DType  dtype.DType
}

// The main kernel's instructions (Params.MMA).
const (
	Sync  = "sync"  // mma.sync from ldmatrix fragments, a cp.async ring
	WGMMA = "wgmma" // wgmma (sm_90a), a TMA ring, a producer warpgroup
)

// Params is one variant of the main kernel.
type Params struct {
	MMA    string `axis:"mma" values:"sync,wgmma" doc:"the main kernel's matrix instructions: mma.sync (16 keys a warp) or wgmma (64 keys a consumer warpgroup, fed by a TMA producer warpgroup)"`
	BM     int    `axis:"bm" values:"64,128" doc:"query rows per block of the main kernel's loop (a ring slot holds their Q, dO, log-sum-exp and D)"`
	BN     int    `axis:"bn" values:"64,128" doc:"keys per CTA of the main kernel: its dK and dV accumulators, 16 rows a warp (sync) or 64 a consumer warpgroup (wgmma)"`
	Warps  int    `axis:"warps" values:"4,8,12" doc:"warps per CTA of the main kernel: bn/16 (sync), or 4 for the producer and 4 per consumer warpgroup (wgmma)"`
	Stages int    `axis:"stages" values:"2,3" doc:"ring slots of query blocks"`
	Heads  int    `axis:"heads" values:"0,1,2,3" doc:"query heads per CTA of the main kernel: 0 all of its KV head's group, or a divisor of the group, whose CTAs then add their dK and dV into f32 scratch (wgmma)"`
	DQ     string `axis:"dq" values:"red,tma" doc:"how a block's dQ partial reaches the f32 accumulator: red.add by every thread, or staged in shared memory and added by TMA (cp.reduce.async.bulk.tensor, wgmma)"`
}

type family struct{}

func (family) Name() string { return "flash_attn_bwd" }
func (family) Doc() string {
	return "FlashAttention backward: dQ, dK, dV from Q, K, V, O, dO and the log-sum-exp; GQA, causal (mma.sync or wgmma, f32 accumulation, dQ by red.add)"
}
func (family) DTypes() []dtype.DType { return []dtype.DType{dtype.BF16, dtype.F16} }

// Shapes: the preset's attention at its tokens as one sequence, causal,
// where its head dim is one the family takes.
func (family) Shapes(p variants.Preset, dt dtype.DType) []Shape {
	if p.Tokens <= 0 || p.Heads <= 0 || p.KVHeads <= 0 || p.Heads%p.KVHeads != 0 || (p.HeadDim != 64 && p.HeadDim != 128) {
		return nil
	}
	return []Shape{{B: 1, S: p.Tokens, HQ: p.Heads, HK: p.KVHeads, D: p.HeadDim, Causal: 1, DType: dt}}
}

// CheckShape: d 64 or 128, hq a multiple of hk, causal 0 or 1, and every
// buffer's element indices (the padded scratch's too) in u32 arithmetic.
func (family) CheckShape(s Shape) error {
	switch {
	case s.D != 64 && s.D != 128:
		return fmt.Errorf("d=%d: the head dim must be 64 or 128", s.D)
	case s.HK < 1 || s.HQ%s.HK != 0:
		return fmt.Errorf("hq=%d, hk=%d: hq must be a multiple of hk", s.HQ, s.HK)
	case s.Causal != 0 && s.Causal != 1:
		return fmt.Errorf("causal=%d: 0 or 1", s.Causal)
	case s.B > 65535:
		return fmt.Errorf("b=%d: at most 65535 sequences (a grid dimension)", s.B)
	}
	if err := gen.CheckIndexable([]string{"b", "s", "hq", "d"}, s.B, gen.CeilDiv(s.S, pad)*pad, s.HQ, s.D); err != nil {
		return err
	}
	return nil
}

// Buffers: q, o, do [b·s, hq, d], k, v [b·s, hk, d] and lse [b, hq, s]
// (f32) in; dq, dk, dv out.
func (family) Buffers(s Shape) []kernels.Buffer {
	buf := func(name string, heads int, role kernels.Role) kernels.Buffer {
		return kernels.Buffer{Name: name, DType: s.DType, Elems: configs.Int(s.B * s.S * heads * s.D), Role: role}
	}
	return []kernels.Buffer{
		buf("q", s.HQ, kernels.Input), buf("k", s.HK, kernels.Input), buf("v", s.HK, kernels.Input),
		buf("o", s.HQ, kernels.Input), buf("do", s.HQ, kernels.Input),
		{Name: "lse", DType: dtype.F32, Elems: configs.Int(s.B * s.HQ * s.S), Role: kernels.Input},
		buf("dq", s.HQ, kernels.Output), buf("dk", s.HK, kernels.Output), buf("dv", s.HK, kernels.Output),
	}
}

// Cost: FlashAttention's count, 2.5 × 4·s²·d·hq·b (the forward's two
// GEMMs, 2.5 times over), halved for causal; every input read once and
// every output written once.
func (family) Cost(s Shape) kernels.Cost {
	b, n, hq, hk, d := int64(s.B), int64(s.S), int64(s.HQ), int64(s.HK), int64(s.D)
	fl := 10 * n * n * d * hq * b
	if s.Causal == 1 {
		fl /= 2
	}
	elems := 2*b*n*(3*hq+2*hk)*d + b*n*(hq+2*hk)*d
	return kernels.Cost{Bytes: elems*int64(s.DType.Size()) + 4*b*hq*n, Flops: fl}
}

// Space: 16 keys a warp; accumulators within maxAccRegs; shared memory
// within sm_90's.
func (family) Space(s Shape) variants.Typed[Params] {
	return variants.Typed[Params]{Rules: []variants.Rule[Params]{
		{Name: "keys per warp", Axes: []string{"mma", "bn", "warps"}, Check: func(p Params) error {
			switch {
			case p.MMA == Sync && p.BN != 16*p.Warps:
				return fmt.Errorf("bn=%d over %d warps (want 16 keys a warp)", p.BN, p.Warps)
			case p.MMA == WGMMA && p.Warps != 4+p.BN/16:
				return fmt.Errorf("mma=wgmma, bn=%d: warps=%d (want a producer warpgroup and one per 64 keys)", p.BN, p.Warps)
			}
			return nil
		}},
		{Name: "registers", Axes: []string{"mma", "bm"}, Check: func(p Params) error {
			if r := p.BM + s.D; p.MMA == Sync && r > maxAccRegs {
				return fmt.Errorf("bm=%d at d=%d: %d accumulator registers a thread (at most %d)", p.BM, s.D, r, maxAccRegs)
			}
			return nil
		}},
		{Name: "wgmma blocks", Axes: []string{"mma", "bm", "bn"}, Check: func(p Params) error {
			switch {
			case p.MMA == WGMMA && p.BM != 64:
				return fmt.Errorf("mma=wgmma takes bm=64 (Sᵀ's N and the RS GEMMs' K; dK, dV, Sᵀ, dPᵀ and dQ take d + 96 registers a thread)")
			case p.MMA == WGMMA && p.BN > s.D:
				return fmt.Errorf("mma=wgmma, bn=%d at d=%d: a consumer warpgroup per 64 columns of dQ at most", p.BN, s.D)
			}
			return nil
		}},
		{Name: "heads per CTA and dQ's path", Axes: []string{"mma", "heads", "dq"}, Check: func(p Params) error {
			g := s.HQ / s.HK
			switch {
			case p.Heads != 0 && p.MMA == Sync:
				return fmt.Errorf("mma=sync takes heads=0 (a CTA loops over its KV head's group)")
			case p.DQ != "red" && p.MMA == Sync:
				return fmt.Errorf("mma=sync takes dq=red")
			case p.Heads != 0 && (p.Heads >= g || g%p.Heads != 0):
				return fmt.Errorf("heads=%d: want a divisor of the group of %d below it, or 0 (all)", p.Heads, g)
			}
			return nil
		}},
		{Name: "shared memory", Axes: []string{"mma", "bm", "bn", "stages", "dq"}, Check: func(p Params) error {
			if b := newGeom(s, p).smemOf(p.MMA); b > hopper.MaxCTAShared {
				return fmt.Errorf("%d bytes of shared memory (at most %d)", b, hopper.MaxCTAShared)
			}
			return nil
		}},
	}}
}
