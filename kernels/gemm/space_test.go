package gemm

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/variants"
)

func presetShapes(t *testing.T) []Shape {
	t.Helper()
	pr, err := variants.LookupPreset("qwen1.5b", 0)
	if err != nil {
		t.Fatal(err)
	}
	return def{}.Shapes(pr, dtype.BF16)
}

// TestPresetShapes: four projections, dx then dw, W of [out×in].
func TestPresetShapes(t *testing.T) {
	var got []string
	for _, s := range presetShapes(t) {
		got = append(got, variants.ShapeOf(s).Key())
	}
	want := []string{
		"m=2048,n=1536,k=1536,grad=dx,dtype=bf16", "m=2048,n=1536,k=1536,grad=dw,dtype=bf16",
		"m=2048,n=256,k=1536,grad=dx,dtype=bf16", "m=2048,n=256,k=1536,grad=dw,dtype=bf16",
		"m=2048,n=8960,k=1536,grad=dx,dtype=bf16", "m=2048,n=8960,k=1536,grad=dw,dtype=bf16",
		"m=2048,n=1536,k=8960,grad=dx,dtype=bf16", "m=2048,n=1536,k=8960,grad=dw,dtype=bf16",
	}
	if !slices.Equal(got, want) {
		t.Errorf("shapes\n%v\nwant\n%v", got, want)
	}
}

// spacePoints is a shape and its space's points.
type spacePoints struct {
	shape  variants.Shape
	points []variants.Params
}

// presetPoints are the preset's shapes in bf16 and f16 and their spaces'
// points, enumerated once for the package's tests (each space walks 3.1 M
// combinations).
var presetPoints = sync.OnceValues(func() ([]spacePoints, error) {
	pr, err := variants.LookupPreset("qwen1.5b", 0)
	if err != nil {
		return nil, err
	}
	f := Families()[0]
	var out []spacePoints
	for _, vs := range f.Shapes(pr, []dtype.DType{dtype.BF16, dtype.F16}) {
		out = append(out, spacePoints{vs, f.Space(vs).Enumerate()})
	}
	return out, nil
})

func preset(t *testing.T) []spacePoints {
	t.Helper()
	sps, err := presetPoints()
	if err != nil {
		t.Fatal(err)
	}
	return sps
}

// TestSpaceSizes keeps the preset's space (bf16) within what tune times
// in three minutes on the H200 (about 800 modules, compiled by the helpers
// while the worker measures): per shape and in all, with both paths; and
// checks the sync path alone (the mma=sync points: the rules of a point do
// not depend on the other paths).
func TestSpaceSizes(t *testing.T) {
	for _, c := range []struct {
		path          MMA // "": both
		lo, hi, total int
	}{
		{"", 15, 200, 850},
		{Sync, 5, 40, 150},
	} {
		total := 0
		for _, sp := range preset(t) {
			if sp.shape.DType != dtype.BF16 {
				continue
			}
			n := 0
			for _, p := range sp.points {
				if c.path == "" || p["mma"] == string(c.path) {
					n++
				}
			}
			if n < c.lo || n > c.hi {
				t.Errorf("path %q: %s has %d variants, want %d..%d", c.path, sp.shape.Key(), n, c.lo, c.hi)
			}
			total += n
		}
		if total > c.total {
			t.Errorf("path %q: %d variants in all, more than %d", c.path, total, c.total)
		}
	}
}

// TestRules checks the rule names and that each rejects what it says.
func TestRules(t *testing.T) {
	defer func(old []string) { paths = old }(paths)
	paths = []string{string(WGMMA), string(Sync)}
	s := Shape{M: 2048, N: 256, K: 1536, Grad: DW, DType: dtype.BF16} // 256×1536, L = 2048
	sp := def{}.Space(s)
	var names []string
	for _, r := range sp.Rules {
		names = append(names, r.Name)
	}
	want := []string{
		"sync path has no cluster, multicast, persistent grid, TMA epilogue or register split",
		"tile shape the path supports; wgmma tiles under 128×128 only for skinny C or short reductions",
		"warp layout: wgmma two consumers (one on 64-row tiles, three on 192-row tiles) with a register split; sync 8 warps on 128×128 tiles",
		"multicast exactly with a cluster",
		"clusters pair tile rows",
		"accumulators fit in registers",
		"shared memory fits",
		"pipeline as deep as fits and the k-loop needs",
		"split-K only below one wave, each split at least two k-tiles",
		"split-K workspace within u32 indexing",
		"split-K partials are stored directly",
		"dsmem split-K: wgmma, a cluster of the splits (at most 8) on one wave, the partial within the ring",
		"tile order and persistence past one wave only; persistent grids grouped, sync grids m or n",
		"wgmma clusters on reductions past 8 k-tiles, order m or grouped, unsplit, TMA store",
		"stream-K on the wgmma path's persistent grids under two waves of tiles, unsplit, no cluster",
		"an adapter's dX on the wgmma path, no cluster, no stream-K",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("rules\n%q\nwant\n%q", names, want)
	}
	wg := Params{MMA: WGMMA, BM: 128, BN: 256, BK: 64, Stages: 4, Consumers: 2, Cluster: 1, SplitK: 8, Reduce: ReduceLaunch, Order: OrderM, Epilogue: Direct, RegSplit: true}
	sy := Params{MMA: Sync, BM: 128, BN: 128, BK: 32, Stages: 4, Consumers: 1, Cluster: 1, SplitK: 4, Reduce: ReduceLaunch, Order: OrderM, Epilogue: Direct}
	for _, c := range []struct {
		p    Params
		edit func(*Params)
		rule string
	}{
		{wg, func(p *Params) {}, ""},
		{sy, func(p *Params) {}, ""},
		{sy, func(p *Params) { p.Persistent = true }, want[0]},
		{wg, func(p *Params) { p.BN = 64 }, want[1]},
		{sy, func(p *Params) { p.BM = 256 }, want[1]},
		{wg, func(p *Params) { p.RegSplit = false }, want[2]},
		{wg, func(p *Params) { p.Cluster = 2 }, want[3]},
		{wg, func(p *Params) { p.BM, p.Stages, p.Cluster, p.Multicast = 256, 3, 2, true }, want[4]}, // one tile row
		{wg, func(p *Params) { p.BM, p.BN, p.Stages = 256, 256, 3 }, want[5]},
		{wg, func(p *Params) { p.Stages = 5 }, want[6]},
		{wg, func(p *Params) { p.Stages = 3 }, want[7]},
		{wg, func(p *Params) { p.SplitK = 16 }, "param splitk=16 not accepted"},
		{sy, func(p *Params) { p.BM, p.BN, p.SplitK = 64, 64, 3 }, want[8]}, // 96 tiles × 3: more than two waves
		{wg, func(p *Params) { p.Epilogue, p.Stages = TMAStore, 3 }, want[10]},
		{wg, func(p *Params) { p.Order = Grouped }, want[12]},
		{wg, func(p *Params) { p.Epilogue, p.Stages, p.SplitK = TMAStore, 3, 1 }, ""}, // the staging tile leaves 3 stages
		{wg, func(p *Params) { p.Cluster, p.Multicast = 2, true }, want[13]},
		{wg, func(p *Params) { // 96 tiles over 3072 k-tiles
			p.BM, p.BN, p.Consumers, p.Stages, p.SplitK, p.Order, p.Persistent = 64, 64, 1, 12, 1, StreamK, true
		}, ""},
		{wg, func(p *Params) { p.BM, p.BN, p.Consumers, p.Stages, p.SplitK = 192, 96, 3, 6, 4 }, ""},
		{wg, func(p *Params) { p.BM, p.BN, p.Stages, p.SplitK = 128, 96, 6, 4 }, want[1]},                 // 96 columns want 192 rows
		{wg, func(p *Params) { p.BM, p.BN, p.Consumers, p.Stages, p.SplitK = 192, 96, 2, 6, 4 }, want[1]}, // 96 rows per consumer
		{wg, func(p *Params) { p.BM, p.BN, p.Consumers, p.Stages, p.SplitK = 64, 64, 1, 6, 1 }, want[7]},  // 12 stages fit
		{wg, func(p *Params) { p.BM, p.BN, p.Stages, p.SplitK, p.Reduce = 128, 128, 6, 4, ReduceDSMEM }, ""},
		{wg, func(p *Params) { p.BM, p.BN, p.Stages, p.SplitK, p.Reduce = 128, 128, 6, 1, ReduceDSMEM }, want[11]},
		{wg, func(p *Params) { p.BM, p.BN, p.Stages, p.SplitK, p.Reduce = 128, 128, 4, 8, ReduceDSMEM }, want[11]}, // 192 CTAs
		{wg, func(p *Params) { p.SplitK, p.Order, p.Persistent = 1, StreamK, true }, want[14]},                     // 12 tiles: 11 partials of 128 KB
		{wg, func(p *Params) { p.SplitK, p.Order, p.Persistent = 2, StreamK, true }, want[14]},
		{wg, func(p *Params) { p.SplitK, p.Order = 1, StreamK }, want[14]},
		{sy, func(p *Params) { p.SplitK, p.Order = 1, StreamK }, want[14]},
	} {
		p := c.p
		c.edit(&p)
		err := sp.Space().Check(variants.Encode(p))
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s: %v", variants.Encode(p), err)
		case c.rule != "" && (err == nil || !strings.Contains(err.Error(), c.rule)):
			t.Errorf("%s: got %v, want a violation of %q", variants.Encode(p), err, c.rule)
		}
	}
}
