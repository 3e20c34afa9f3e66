package lora

import (
	"errors"
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/variants"
)

// Families is lora_bwd.
func Families() []kernels.Family { return []kernels.Family{kernels.Define(family{})} }

// Dim is the runtime dim: the token count t.
const Dim = "t"

// Ranks are the adapter ranks a preset's shapes take.
var Ranks = []int{16, 64}

// The rank's limits: a multiple of 8 from 8 to 64.
const (
	minRank = 8
	maxRank = 64
)

// chunk is the columns of dY (dY kernel) and of x (x kernel) one ring
// slot holds: 64 16-bit elements, eight 16-byte chunks a row.
const chunk = 64

// waveSMs is the H200's SM count, for the rules on grid sizes.
const waveSMs = 132

// maxGroupRows bounds an x-kernel CTA's rows (rg·bt): dh's hi and lo
// tiles of them sit in shared memory, and the copy that splits them is
// unrolled over them (at 512 rows of rank 64 a warpgroup's copy spills);
// the TMA x kernel splits with two warpgroups, so it takes twice as many.
func maxGroupRows(xload string) int {
	if xload == "tma" {
		return 512
	}
	return 256
}

// Shape is one LoRA adapter's backward: t tokens, a base layer of in
// inputs and out outputs, rank r; dx=base leaves the adapter's dX to the
// base layer's GEMM (dx=here, the default, computes it).
type Shape struct {
	T     int    `dim:"t"`
	In    int    `dim:"in"`
	Out   int    `dim:"out"`
	R     int    `dim:"r"`
	DX    string `dim:"dx,optional=here" values:"here,base"`
	DType dtype.DType
}

// dx reports whether the adapter's dX is the family's to compute; with
// dx=base the base layer's dX GEMM adds it (gemm_bwd lora=r), so A is
// not read either.
func (s Shape) dx() bool { return s.DX != "base" }

// Params is one variant: the CTA's rows and warps and ring depth (both
// GEMM kernels) and each kernel's split of its columns. The x kernel's
// kind (mma, tparts) comes right after the warps: the rules that read it
// then prune the walk before the splits multiply it.
type Params struct {
	BT      int    `axis:"bt" values:"64,128,256" doc:"token rows per CTA of both GEMM kernels"`
	Warps   int    `axis:"warps" values:"4,8" doc:"warps per CTA of both GEMM kernels; each owns bt/warps rows (16 or 32)"`
	MMA     string `axis:"mma" values:"sync,wgmma" default:"sync" doc:"the x kernel's matrix instructions: mma.sync (sm_80 and up), or wgmma (sm_90a; one warpgroup whatever warps the dY kernel takes): dA's [64 × 64] chunk and dX's [64 × 64] blocks multiplied from shared memory, dh's hi and lo tiles padded to 64 columns"`
	TParts  int    `axis:"tparts" values:"0,1,2,4,6,8" default:"0" doc:"0: an x-kernel CTA takes rg row blocks of its chunks; n > 0 (mma=wgmma, rg=1, isplit=1): each x-kernel CTA takes one chunk of in over 1/n of the row blocks (counted at run time), dh32's rows streamed through the ring beside x and split into hi and lo as they arrive, so dA meets n partial sums a column by red.add instead of one a row group"`
	XLoad   string `axis:"xload" values:"cp,tma" default:"cp" doc:"how the wgmma x kernel over row groups (mma=wgmma, tparts=0) fills its ring: cp (every thread's cp.async, a CTA barrier a step) or tma (a producer warpgroup's thread issues TMA boxes on mbarriers, the consumer warpgroup releases each slot after its wgmma)"`
	DYLoad  string `axis:"dyload" values:"cp,tma" default:"cp" doc:"the dY kernel: cp (warps of mma.sync on cp.async tiles, a CTA barrier a chunk) or tma (sm_90a: a producer warpgroup's thread issues TMA boxes of dY, B and h on mbarriers; a consumer warpgroup multiplies each chunk by wgmma, dh held in registers, and releases the slot; the rank padded to 64)"`
	DBSplit int    `axis:"dbsplit" values:"0,1,2,4,8" default:"0" doc:"0: each dY-kernel CTA adds its rows' partial of dB; n > 0 (dyload=tma; at a shape, the n that give half a wave to two waves of dB CTAs, else 8 or 1): the dY kernel's launch also takes ⌈out/64⌉·n CTAs, each summing one 64-column chunk of dB over 1/n of the row blocks (dY and h tiles in its ring) before one red.add, and the dh CTAs compute dh alone: dY is read twice (the second mostly from L2) and dB meets n partials an element instead of one a row block"`
	Stages  int    `axis:"stages" values:"2,3,4" doc:"cp.async ring slots of 64-column tiles (dY and B; x and A)"`
	OSplit  int    `axis:"osplit" values:"1,2,4,8,12,16,24" doc:"CTAs per row block of the dY kernel, each a share of out's 64-column chunks; past 1, dh's partials meet by red.add in an f32 state buffer"`
	ISplit  int    `axis:"isplit" values:"1,2,4,8,12,16,24,28,33" doc:"CTAs per row group of the x kernel, each a share of in's 64-column chunks (with xload=tma and fold=0 an even share of the group's steps, a step a chunk of one row block: 33 fills 132 SMs with four row groups)"`
	RG      int    `axis:"rg" values:"1,2,4" default:"1" doc:"row blocks of bt an x-kernel CTA takes for each of its chunks, dA summed over them in registers before its red.add (dh's hi and lo tiles of all of them in shared memory)"`
	MaxNReg int    `axis:"maxnreg" values:"0,128" default:"0" doc:"registers per thread of the dY and x kernels (.maxnreg; 0: ptxas chooses); 128 lets two CTAs of 8 warps share an SM where their shared memory allows, at the cost of the held fragments"`
	Fold    bool   `axis:"fold" values:"0,1" default:"0" doc:"1 (xload=tma): no finalize launch; the x kernel rounds dB's accumulator into dB (each CTA a share, after it waits for the dY kernel), and the last row group's CTA to add into a chunk of dA (a ticket a chunk) rounds it into dA, as the last reader of a row group's dh32 zeroes it"`
	PDL     bool   `axis:"pdl" values:"0,1" default:"0" doc:"1: every launch after the first is a programmatic dependent launch: each kernel lets the next one launch at its start (griddepcontrol.launch_dependents) and waits (griddepcontrol.wait) before it reads what earlier launches wrote; the x kernel issues its first tiles of x before it waits"`
}

type family struct{}

func (family) Name() string { return "lora_bwd" }
func (family) Doc() string {
	return "LoRA adapter backward: dh = s·dY·B, dB = s·dYᵀ·h, dA = dhᵀ·x, dX_lora = dh·A (mma.sync, f32 accumulation)"
}
func (family) DTypes() []dtype.DType { return []dtype.DType{dtype.BF16, dtype.F16} }

// Shapes yields every projection [out×in] of the preset at ranks 16 and
// 64, at the preset's tokens, with the adapter's dX here and left to the
// base layer's GEMM (dx=base).
func (family) Shapes(p variants.Preset, dt dtype.DType) []Shape {
	if p.Tokens <= 0 {
		return nil
	}
	var out []Shape
	for _, nk := range p.Projections() {
		for _, r := range Ranks {
			for _, dx := range []string{"here", "base"} {
				out = append(out, Shape{T: p.Tokens, In: nk[1], Out: nk[0], R: r, DX: dx, DType: dt})
			}
		}
	}
	return out
}

// CheckShape: r a multiple of 8 in 8..64, in and out multiples of 8 (rows
// of whole 16-byte chunks), and every tensor's element indices in u32
// arithmetic at t (a program is correct at every t up to maxT(s)).
func (family) CheckShape(s Shape) error {
	switch {
	case s.R < minRank || s.R > maxRank || s.R%8 != 0:
		return fmt.Errorf("r=%d: the rank must be a multiple of 8 from %d to %d", s.R, minRank, maxRank)
	case s.In%8 != 0 || s.Out%8 != 0:
		return fmt.Errorf("in=%d, out=%d: both must be multiples of 8", s.In, s.Out)
	case s.T > maxT(s):
		return fmt.Errorf("t=%d: at most %d tokens at in=%d, out=%d", s.T, maxT(s), s.In, s.Out)
	}
	return gen.CheckIndexable([]string{"in", "out"}, s.In, s.Out)
}

// maxT bounds the token count: t·max(in, out) elements fit u32 indices.
func maxT(s Shape) int { return gen.MaxElems / max(s.In, s.Out, 1) }

// Buffers are the shape's data; the f32 accumulators are the program's.
func (family) Buffers(s Shape) []kernels.Buffer {
	t := configs.Var(Dim)
	buf := func(name string, e configs.Expr, role kernels.Role) kernels.Buffer {
		return kernels.Buffer{Name: name, DType: s.DType, Elems: e, Role: role}
	}
	b := []kernels.Buffer{
		buf("dy", t.TimesInt(s.Out), kernels.Input),
		buf("x", t.TimesInt(s.In), kernels.Input),
		buf("h", t.TimesInt(s.R), kernels.Input),
		buf("b", configs.Int(s.Out*s.R), kernels.Input),
		{Name: "scale", DType: dtype.F32, Elems: configs.Int(1), Role: kernels.Input},
		buf("dh", t.TimesInt(s.R), kernels.Output),
		buf("db", configs.Int(s.Out*s.R), kernels.Output),
		buf("da", configs.Int(s.R*s.In), kernels.Output),
	}
	if s.dx() {
		b = append(b, buf("a", configs.Int(s.R*s.In), kernels.Input), buf("dx", t.TimesInt(s.In), kernels.Output))
	}
	return b
}

// Cost: dY, x, h, A and B read once, dh, dB, dA and dX written once (the
// scale's 4 bytes too); 2·t·r·(2·out + 2·in) flops; with dx=base no A,
// no dX and 2·t·r·(2·out + in).
func (family) Cost(s Shape) kernels.Cost {
	t, in, out, r := int64(s.T), int64(s.In), int64(s.Out), int64(s.R)
	elems := t*out + t*in + t*r + out*r + // read
		t*r + out*r + r*in // written
	flops := 2 * t * r * (2*out + in)
	if s.dx() {
		elems += r*in + t*in // A read, dX written
		flops += 2 * t * r * in
	}
	return kernels.Cost{Bytes: elems*int64(s.DType.Size()) + 4, Flops: flops}
}

// chunks is ⌈n/64⌉, the 64-column chunks of a row of n.
func chunks(n int) int { return gen.CeilDiv(n, chunk) }

// Space: bt/warps rows per warp of 16 or 32; eight warps only where the
// rank's n8 blocks halve; splits that leave no CTA empty and are wanted
// (at half the split the grid would be under two waves); the ring no
// deeper than the longer kernel's chunks per CTA; shared memory within sm_90's.
func (family) Space(s Shape) variants.Typed[Params] {
	return variants.Typed[Params]{Values: map[string][]string{"dbsplit": variants.Ints(dbSplits(s.Out)...)}, Rules: []variants.Rule[Params]{
		{Name: "rows per warp", Axes: []string{"bt", "warps"}, Check: func(p Params) error {
			if w := p.BT / p.Warps; w != 16 && w != 32 {
				return fmt.Errorf("bt/warps = %d rows per warp (want 16 or 32)", w)
			}
			if p.Warps == 8 && s.R%16 != 0 {
				return fmt.Errorf("8 warps split dB's %d n8 blocks in two: r must be a multiple of 16", s.R/8)
			}
			return nil
		}},
		{Name: "rows for the CTA", Axes: []string{"bt"}, Check: func(p Params) error {
			if p.BT > 64 && p.BT >= 2*gen.Pow2Ceil(s.T) {
				return fmt.Errorf("bt=%d for t=%d", p.BT, s.T)
			}
			return nil
		}},
		{Name: "dY split", Axes: []string{"bt", "osplit"}, Check: func(p Params) error {
			return splitOK("osplit", p.OSplit, chunks(s.Out), gen.CeilDiv(s.T, p.BT), false)
		}},
		{Name: "row groups", Axes: []string{"bt", "rg", "xload"}, Check: func(p Params) error {
			switch {
			case p.RG > 1 && 2*p.RG > gen.CeilDiv(s.T, p.BT):
				return fmt.Errorf("rg=%d over %d row blocks leaves fewer than two groups", p.RG, gen.CeilDiv(s.T, p.BT))
			case p.RG*p.BT > maxGroupRows(p.XLoad):
				return fmt.Errorf("rg·bt = %d rows of dh a CTA splits and holds (at most %d with xload=%s)", p.RG*p.BT, maxGroupRows(p.XLoad), p.XLoad)
			}
			return nil
		}},
		{Name: "streamed rows", Axes: []string{"bt", "rg", "isplit", "mma", "tparts"}, Check: func(p Params) error {
			switch {
			case p.TParts == 0:
				return nil
			case p.MMA != "wgmma" || p.RG != 1 || p.ISplit != 1:
				return fmt.Errorf("tparts=%d streams dh32 into the wgmma x kernel: mma=wgmma, rg=1 and isplit=1 (a CTA a chunk)", p.TParts)
			}
			return nil
		}},
		{Name: "parts", Axes: []string{"bt", "tparts"}, Search: true, Check: func(p Params) error {
			// A program is correct with empty parts (t is taken at run
			// time); searching them at the shape's t is not wanted.
			if p.TParts > 1 && p.TParts > gen.CeilDiv(s.T, p.BT) {
				return fmt.Errorf("tparts=%d over %d row blocks leaves a part empty", p.TParts, gen.CeilDiv(s.T, p.BT))
			}
			return nil
		}},
		{Name: "tma", Axes: []string{"mma", "tparts", "xload"}, Check: func(p Params) error {
			if p.XLoad == "tma" && (p.MMA != "wgmma" || p.TParts != 0) {
				return fmt.Errorf("xload=tma feeds the wgmma x kernel over row groups: mma=wgmma and tparts=0")
			}
			return nil
		}},
		{Name: "x split", Axes: []string{"bt", "rg", "isplit", "xload", "fold"}, Check: func(p Params) error {
			// (streaming, isplit = 1 passes)
			units, even := p.xUnits(s)
			return splitOK("isplit", p.ISplit, units, gen.CeilDiv(gen.CeilDiv(s.T, p.BT), p.RG), even)
		}},
		{Name: "x fill", Axes: []string{"bt", "rg", "isplit", "tparts", "xload", "fold"}, Search: true, Check: func(p Params) error {
			if p.TParts > 0 {
				return fills("tparts", p.TParts, gen.CeilDiv(s.T, p.BT), chunks(s.In))
			}
			units, _ := p.xUnits(s)
			return fills("isplit", p.ISplit, units, gen.CeilDiv(gen.CeilDiv(s.T, p.BT), p.RG))
		}},
		{Name: searchWGMMARows, Axes: []string{"mma", "tparts", "xload"}, Search: true, Check: func(p Params) error {
			if p.MMA == "wgmma" && p.TParts == 0 && p.XLoad != "tma" {
				return errors.New("mma=wgmma with row groups and cp.async (left to --params mma=wgmma,tparts=0,xload=cp)")
			}
			return nil
		}},
		{Name: "fold", Axes: []string{"xload", "fold"}, Check: func(p Params) error {
			if p.Fold && p.XLoad != "tma" {
				return errors.New("fold=1 ends in the TMA x kernel: xload=tma")
			}
			return nil
		}},
		{Name: searchUnwon, Axes: []string{"dyload", "dbsplit", "xload", "fold"}, Search: true, Check: func(p Params) error {
			switch {
			case p.DYLoad == "tma" && (p.DBSplit == 0 || p.XLoad != "tma"):
				return errors.New("dyload=tma with dbsplit=0 or beside an x kernel other than xload=tma")
			case p.Fold:
				return errors.New("fold=1")
			}
			return nil
		}},
		{Name: "dB CTAs", Axes: []string{"dyload", "dbsplit"}, Check: func(p Params) error {
			if p.DBSplit > 0 && p.DYLoad != "tma" {
				return fmt.Errorf("dbsplit=%d gives dB its own CTAs in the TMA dY kernel: dyload=tma", p.DBSplit)
			}
			return nil
		}},
		{Name: "dB parts", Axes: []string{"bt", "dbsplit"}, Search: true, Check: func(p Params) error {
			// A program is correct with empty parts (t is taken at run
			// time); searching them at the shape's t is not wanted.
			if nb := gen.CeilDiv(s.T, p.BT); p.DBSplit > 1 && gen.CeilDiv(nb, p.DBSplit)*(p.DBSplit-1) >= nb {
				return fmt.Errorf("dbsplit=%d over %d row blocks leaves a part empty", p.DBSplit, nb)
			}
			return nil
		}},
		{Name: "dY tma", Axes: []string{"dyload", "maxnreg"}, Check: func(p Params) error {
			if p.DYLoad == "tma" && p.MaxNReg != 0 {
				return fmt.Errorf("dyload=tma with maxnreg=%d: the TMA dY kernel's consumer holds dh's accumulators (up to 160 registers)", p.MaxNReg)
			}
			return nil
		}},
		{Name: searchPDL, Axes: []string{"pdl"}, Search: true, Check: func(p Params) error {
			if !p.PDL {
				return errors.New("pdl=0 (left to --params pdl=0)")
			}
			return nil
		}},
		{Name: "ring depth", Axes: []string{"bt", "stages", "osplit", "isplit", "rg", "tparts", "dbsplit", "xload", "fold"}, Check: func(p Params) error {
			units, even := p.xUnits(s)
			xSteps := gen.CeilDiv(units, p.ISplit)
			if !even {
				xSteps *= p.RG
			}
			if p.TParts > 0 {
				xSteps = gen.CeilDiv(gen.CeilDiv(s.T, p.BT), p.TParts)
			}
			most := max(gen.CeilDiv(chunks(s.Out), p.OSplit), xSteps)
			if p.DBSplit > 0 {
				most = max(most, gen.CeilDiv(gen.CeilDiv(s.T, p.BT), p.DBSplit))
			}
			if p.Stages > 2 && p.Stages-1 > most {
				return fmt.Errorf("stages=%d for at most %d chunks per CTA", p.Stages, most)
			}
			return nil
		}},
		{Name: "shared memory", Axes: []string{"bt", "stages", "isplit", "rg", "mma", "tparts", "xload", "dyload", "fold", "dbsplit"}, Check: func(p Params) error {
			g := newGeom(s, p)
			if b := g.smem(); b > hopper.MaxCTAShared {
				return fmt.Errorf("%d bytes of shared memory (at most %d)", b, hopper.MaxCTAShared)
			}
			return nil
		}},
		{Name: "register cap", Axes: []string{"bt", "warps", "stages", "isplit", "rg", "mma", "tparts", "xload", "dyload", "fold", "dbsplit", "maxnreg"}, Check: func(p Params) error {
			if p.MaxNReg == 0 {
				return nil
			}
			g := newGeom(s, p)
			if p.Warps != 8 {
				return fmt.Errorf("maxnreg=%d with %d warps: two CTAs of 4 warps fit an SM at 255 registers", p.MaxNReg, p.Warps)
			}
			if b := g.smem(); hopper.CTAsByShared(b) < 2 {
				return fmt.Errorf("maxnreg=%d: %d bytes of shared memory a CTA leave no room for a second", p.MaxNReg, b)
			}
			return nil
		}},
	}}
}

// searchUnwon is the search rule that leaves out what no GPU run has
// picked: the TMA dY kernel with dB in its dh CTAs (dbsplit=0) or beside
// another x kernel than the TMA one, and fold=1. The runs it rests on are
// in docs/kernels/lora.md. --params naming any of its axes searches them
// all.
const searchUnwon = "search: dyload=tma with dbsplit=0 or another x kernel than xload=tma, and fold=1, never a winner on an H100 (testdata/issue27/lora-1206g-h100)"

// searchPDL is the search rule that leaves out pdl=0: over the 16
// qwen1.5b shapes of testdata/issue27/step-1206c-h100 (an H100) its best
// variant was slower than pdl=1's on every one (internal/evidence's
// TestLoraSearchRules recomputes the bound).
const searchPDL = "search: pdl=0, at least 1.03× the best pdl=1 on an H100 (testdata/issue27/step-1206c-h100/step.db.gz)"

// searchWGMMARows is the search rule that leaves out the wgmma x kernel
// over row groups (tparts=0): its best variant was never faster than
// mma.sync's over the 16 qwen1.5b shapes of
// testdata/issue27/lora-1206d-h100/wg.db.gz (beside a 4-warp dY kernel)
// nor the four rank-64 shapes of w8.db.gz there (beside 4 or 8 warps),
// H100 runs that internal/evidence recomputes the bound from; the
// streaming kernel (tparts > 0) stays in the search.
const searchWGMMARows = "search: mma=wgmma with tparts=0 and xload=cp, at least 1.00× the best mma=sync on an H100 (testdata/issue27/lora-1206d-h100/wg.db.gz, w8.db.gz)"

// dbSplits are a shape's dbsplit values: 0, and the n in 1, 2, 4, 8
// that give ⌈out/64⌉·n dB CTAs from half a wave to two waves; where none
// does, 8 under half a wave and 1 past two waves.
func dbSplits(out int) []int {
	nc, vals := chunks(out), []int{0}
	for _, n := range []int{1, 2, 4, 8} {
		if c := nc * n; c >= waveSMs/2 && c <= 2*waveSMs {
			vals = append(vals, n)
		}
	}
	switch {
	case len(vals) > 1:
	case nc*8 < waveSMs/2:
		vals = append(vals, 8)
	default:
		vals = append(vals, 1)
	}
	return vals
}

// fills (the x kernel's search rule): a kernel of rowBlocks·split CTAs
// fills at least half a wave of the GPU, unless no split of nc chunks
// could; no x kernel under it won in the H100 runs of testdata/issue27,
// and they ran 50-130% slower. (The dY kernel has none: a split there
// costs a launch and dh's atomics, and k·v's winners took osplit = 1.)
func fills(axis string, split, nc, rowBlocks int) error {
	if rowBlocks*split < waveSMs/2 && rowBlocks*nc >= waveSMs/2 {
		return fmt.Errorf("%s=%d: %d CTAs, under half a wave", axis, split, rowBlocks*split)
	}
	return nil
}

// xUnits are what the x kernel's isplit CTAs of a row group share: its
// steps (a chunk of one row block), split evenly, with xload=tma and
// fold=0 (xKernel.steps); else in's chunks, rg steps each.
func (p Params) xUnits(s Shape) (units int, even bool) {
	if p.XLoad == "tma" && !p.Fold {
		return chunks(s.In) * p.RG, true
	}
	return chunks(s.In), false
}

// splitOK: split CTAs per row block over nc chunks (steps, split evenly
// where even holds) leave none empty, and a split past 1 is wanted only
// while half of it would put fewer than two waves of CTAs on the GPU.
func splitOK(axis string, split, nc, rowBlocks int, even bool) error {
	switch {
	case even && split > nc:
		return fmt.Errorf("%s=%d over %d steps leaves a CTA without one", axis, split, nc)
	case !even && gen.CeilDiv(nc, split)*(split-1) >= nc:
		return fmt.Errorf("%s=%d over %d chunks leaves a CTA without one", axis, split, nc)
	case split > 1 && rowBlocks*split/2 >= 2*waveSMs:
		return fmt.Errorf("%s=%d: %d row blocks fill two waves at half of it", axis, split, rowBlocks)
	}
	return nil
}
