package xent

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/rows"
	"github.com/gradtune/gradtune/variants"
)

// Families is cross_entropy_bwd.
func Families() []kernels.Family { return []kernels.Family{kernels.Define(family{})} }

// Dim is the runtime dim: the token count t. No kernel reads it; the
// grids and the buffers are expressions of it.
const Dim = "t"

// IgnoreIndex is the label of a row that has no loss (PyTorch's default
// ignore_index).
const IgnoreIndex = -100

// MaxV bounds the vocabulary: a row's byte offsets fit u32 arithmetic.
const MaxV = 1 << 24

// maxT bounds the token count: the grid, t·split CTAs, fits %ctaid.x's
// u32 arithmetic below 2³¹ with split ≤ 16.
const maxT = (1<<31 - 1) / 16

// Shape is the logits [t tokens × v classes] of one cross-entropy, with
// label smoothing ε (smooth, optional: 0), the labels' storage type
// (labels, optional: i32; i64 as PyTorch keeps them) and z-loss (zloss,
// optional: 0; 1 adds λ·lse² to each row's loss, λ the run-time input
// zloss_scale) and where the gradient goes (inplace, optional: 0, a new
// buffer dlogits; 1, over the logits).
type Shape struct {
	T       int            `dim:"t"`
	V       int            `dim:"v"`
	Smooth  variants.Milli `dim:"smooth,optional"`
	Labels  string         `dim:"labels,optional=i32" values:"i32,i64"`
	ZLoss   int            `dim:"zloss,optional=0"`
	InPlace int            `dim:"inplace,optional=0"`
	DType   dtype.DType
}

// grad is the buffer the gradient is written to: dlogits, or with
// inplace=1 the logits themselves.
func (s Shape) grad() string {
	if s.InPlace == 1 {
		return "logits"
	}
	return "dlogits"
}

// eps is the label smoothing ε.
func (s Shape) eps() float64 { return s.Smooth.Float() }

// labelType is the labels' storage type.
func (s Shape) labelType() dtype.DType {
	if s.Labels == "i64" {
		return dtype.I64
	}
	return dtype.I32
}

// zloss reports whether the loss has PaLM's z-loss term λ·lse².
func (s Shape) zloss() bool { return s.ZLoss == 1 }

// Params is one variant: the vector width, the CTA, the loads in flight,
// the CTAs per row and the gradient kernel's row order.
type Params struct {
	Vec     int    `axis:"vec" doc:"elements per vector access: the widest width dividing v (at most 16 bytes) or half that"`
	Block   int    `axis:"block" values:"128,256,512,1024" doc:"threads per CTA, both kernels"`
	VPT     int    `axis:"vpt" values:"1,2,4" doc:"vectors per thread per loop iteration, loaded before any arithmetic"`
	Split   int    `axis:"split" values:"1,2,4,8,16" doc:"CTAs per row, both kernels: each takes ⌈v/vec/split⌉ vectors of its row; the gradient kernel merges the statistics kernel's split partial (max, sum-exp) pairs"`
	Reverse bool   `axis:"reverse" values:"0,1" doc:"1: the gradient kernel takes the rows last to first, starting on those the statistics kernel read last (still in L2)"`
	Pass    string `axis:"pass" values:"two,one" doc:"two: a statistics kernel, then a gradient kernel that reads the logits again; one: a cluster of split CTAs a row keeps its part in shared memory and merges the statistics over distributed shared memory, reading the logits once"`
	Copy    string `axis:"copy" values:"ld,in,inout,stream" default:"ld" doc:"pass=one: ld, the threads load the part and copy it into shared memory; in, one bulk copy (cp.async.bulk) brings the part in; inout, and the gradient, written over that copy, goes out by one bulk store; stream, one bulk copy per loop step, each on its own mbarrier, so the threads absorb a step while the later ones are in flight (16-byte vectors)"`
	Regs    string `axis:"regs" values:"free,smem" default:"free" doc:"free: .maxnreg lets one CTA fill the register file; smem (pass=one, where it caps lower): .maxnreg lets as many CTAs share an SM as their shared memory does, unless the held values need more (1.5·vec·vpt + 16)"`
}

type family struct{}

func (family) Name() string { return "cross_entropy_bwd" }
func (family) Doc() string {
	return "mean cross-entropy backward: dlogits from logits and labels (i32 or i64, ignore_index −100), label smoothing and z-loss, with the rows' log-sum-exp and loss"
}
func (family) DTypes() []dtype.DType { return rows.DTypes() }

// Shapes yields the LM head's logits [Tokens × Vocab], no smoothing.
func (family) Shapes(p variants.Preset, dt dtype.DType) []Shape {
	if p.Tokens <= 0 || p.Vocab <= 0 {
		return nil
	}
	return []Shape{{T: p.Tokens, V: p.Vocab, DType: dt}}
}

// CheckShape: v ≤ MaxV, t ≤ maxT, ε < 1, zloss 0 or 1.
func (family) CheckShape(s Shape) error {
	switch {
	case s.ZLoss > 1:
		return fmt.Errorf("zloss=%d: want 0 or 1", s.ZLoss)
	case s.InPlace > 1:
		return fmt.Errorf("inplace=%d: want 0 (the gradient in a new buffer dlogits) or 1 (over the logits)", s.InPlace)
	case s.V > MaxV:
		return fmt.Errorf("v=%d: at most %d classes", s.V, MaxV)
	case s.T > maxT:
		return fmt.Errorf("t=%d: at most %d tokens", s.T, maxT)
	case s.Smooth >= 1000:
		return fmt.Errorf("smooth=%v: label smoothing must be below 1", s.eps())
	}
	return nil
}

// Buffers are the shape's data (zloss_scale only with zloss=1); the
// partials are the program's.
func (family) Buffers(s Shape) []kernels.Buffer {
	t, tv, one := configs.Var(Dim), configs.Var(Dim).TimesInt(s.V), configs.Int(1)
	logits := kernels.Input
	if s.grad() == "logits" {
		logits = kernels.InOut
	}
	b := []kernels.Buffer{
		{Name: "logits", DType: s.DType, Elems: tv, Role: logits},
		{Name: "labels", DType: s.labelType(), Elems: t, Role: kernels.Input},
		{Name: "dloss", DType: dtype.F32, Elems: one, Role: kernels.Input},
		{Name: "n_valid", DType: dtype.F32, Elems: one, Role: kernels.Input},
	}
	if s.zloss() {
		b = append(b, kernels.Buffer{Name: "zloss_scale", DType: dtype.F32, Elems: one, Role: kernels.Input})
	}
	if s.grad() == "dlogits" {
		b = append(b, kernels.Buffer{Name: "dlogits", DType: s.DType, Elems: tv, Role: kernels.Output})
	}
	return append(b,
		kernels.Buffer{Name: "lse", DType: dtype.F32, Elems: t, Role: kernels.Output},
		kernels.Buffer{Name: "loss", DType: dtype.F32, Elems: t, Role: kernels.Output})
}

// Cost: the logits read once and the gradient written (the floor, which
// the one-pass kernel reaches; the two-pass kernels read the logits
// twice), the labels read and lse and loss written; per element the
// statistics' max, fma, ex2 and add and the gradient's fma, ex2 and fma
// (z-loss scales the gradient's per-row coefficient: nothing per
// element).
func (family) Cost(s Shape) kernels.Cost {
	t, tv := int64(s.T), int64(s.T)*int64(s.V)
	return kernels.Cost{Bytes: 2*tv*int64(s.DType.Size()) + (8+int64(s.labelType().Size()))*t, Flops: 7 * tv}
}

// Space: vec is the widest width dividing v or half that; the rules keep
// the held values few, a CTA no larger than its share of a row needs and
// a row split into no more CTAs than it has vectors.
func (family) Space(s Shape) variants.Typed[Params] {
	w := rows.WidestVec(s.DType, s.V)
	vecs := []int{w}
	if w > 1 {
		vecs = []int{w / 2, w}
	}
	return variants.Typed[Params]{
		Values: map[string][]string{"vec": variants.Ints(vecs...)},
		Rules: []variants.Rule[Params]{
			{Name: "values held", Axes: []string{"vec", "vpt"}, Check: func(p Params) error {
				if p.Vec*p.VPT > maxHeld {
					return fmt.Errorf("vec·vpt = %d values per thread held at once (at most %d)", p.Vec*p.VPT, maxHeld)
				}
				return nil
			}},
			{Name: "CTAs per row", Axes: []string{"vec", "split"}, Check: func(p Params) error {
				if nv := s.V / p.Vec; p.Split > nv {
					return fmt.Errorf("split=%d CTAs for a row of %d vectors", p.Split, nv)
				}
				return nil
			}},
			{Name: "one pass: a portable cluster holding its row", Axes: []string{"vec", "block", "vpt", "split", "reverse", "pass", "copy"}, Check: func(p Params) error {
				if p.Pass != "one" {
					return nil
				}
				switch b := newGeom(s, p).onePassShared(); {
				case p.Reverse:
					return fmt.Errorf("pass=one takes reverse=0 (one kernel)")
				case p.Split > 8:
					return fmt.Errorf("pass=one, split=%d: a cluster of at most 8 CTAs (portable)", p.Split)
				case b > hopper.MaxCTAShared:
					return fmt.Errorf("pass=one, split=%d: %d bytes of shared memory a CTA, its part of a row among them (at most %d)", p.Split, b, hopper.MaxCTAShared)
				}
				return nil
			}},
			{Name: "bulk copies: one pass, 16-byte vectors", Axes: []string{"vec", "pass", "copy"}, Check: func(p Params) error {
				switch {
				case p.Copy == "ld":
					return nil
				case p.Pass != "one":
					return fmt.Errorf("copy=%s copies a one-pass CTA's part (pass=one)", p.Copy)
				case p.Vec*s.DType.Size() != 16:
					return fmt.Errorf("copy=%s needs 16-byte vectors (vec=%d of %v is %d bytes): every part's offset and size a multiple of 16", p.Copy, p.Vec, s.DType, p.Vec*s.DType.Size())
				}
				return nil
			}},
			{Name: "registers by shared memory: one pass, a lower cap", Axes: []string{"vec", "block", "vpt", "split", "pass", "copy", "regs"}, Check: func(p Params) error {
				switch {
				case p.Regs != "smem":
					return nil
				case p.Pass != "one":
					return fmt.Errorf("regs=smem caps a one-pass CTA's registers by its shared memory (pass=one)")
				}
				if g := newGeom(s, p); g.maxnreg == regCap(g, "free") {
					return fmt.Errorf("regs=smem: the cap is regs=free's %d registers (shared memory or the held values allow no fewer)", g.maxnreg)
				}
				return nil
			}},
			{Name: "a stream of steps", Axes: []string{"vec", "block", "vpt", "split", "copy"}, Check: func(p Params) error {
				if g := newGeom(s, p); g.stream && g.cv < 2*g.step() {
					return fmt.Errorf("copy=stream: %d vectors a part make fewer than two steps of %d (copy=in brings them in at once)", g.cv, g.step())
				}
				return nil
			}},
			{Name: "block fits the part", Axes: []string{"vec", "block", "vpt", "split"}, Check: func(p Params) error {
				cv := gen.CeilDiv(s.V/p.Vec, p.Split)
				if need := max(minBlock, gen.Pow2Ceil(gen.CeilDiv(cv, p.VPT))); p.Block > need {
					return fmt.Errorf("block=%d for %d vectors per CTA, %d per thread (%d threads suffice)", p.Block, cv, p.VPT, need)
				}
				return nil
			}},
		},
	}
}

// maxHeld bounds the values a thread loads per iteration; minBlock is
// the smallest CTA.
const (
	maxHeld  = 32
	minBlock = 128
)
