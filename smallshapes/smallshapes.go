package smallshapes

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// MaxElems bounds the buffer elements of the shapes Of returns, so a
// variant runs on the interpreter in milliseconds.
const MaxElems = 1 << 17

// genericSpecs are tried as they are for every family: flat and
// row-shaped tensors with a single element, a single row or column, and
// extents that divide no tile or vector width.
var genericSpecs = [][]variants.Dim{
	{{Name: "n", Value: 1}},
	{{Name: "n", Value: 7}},
	{{Name: "m", Value: 1}, {Name: "n", Value: 1}},
	{{Name: "m", Value: 1}, {Name: "n", Value: 7}},
	{{Name: "m", Value: 7}, {Name: "n", Value: 1}},
	{{Name: "m", Value: 7}, {Name: "n", Value: 1001}},
	{{Name: "m", Value: 3}, {Name: "n", Value: 1536}},
	{{Name: "m", Value: 33}, {Name: "n", Value: 513}},
	// Blocked formats (NF4: n and k multiples of 64) accept no shrunk
	// extent: a row tail over two blocks of n and three of k, and a single
	// row over one block of k.
	{{Name: "m", Value: 37}, {Name: "n", Value: 128}, {Name: "k", Value: 192}},
	{{Name: "m", Value: 1}, {Name: "n", Value: 256}, {Name: "k", Value: 64}},
}

// Candidates an extent of a preset shape is shrunk to, smallest first.
var (
	tinyValues = []int{1, 2, 3, 4, 8, 16, 32}
	tailValues = []int{7, 33, 100, 257, 1001}
	// wide: the largest extent becomes a long odd row, the others small.
	wideLong  = []int{257, 1001, 1536}
	wideShort = []int{3, 7}
)

// Of returns shapes of family f in dtype dt that the interpreter runs
// quickly: every generic spec the family accepts (n=1, m=1,n=7,
// m=7,n=1001, ...), and the family's preset shapes (qwen1.5b, 64 tokens)
// shrunk three times, extent by extent in the family's order, to the
// smallest accepted value of {1, 2, 3, 4, 8, 16, 32} (tiny), of
// {7, 33, 100, 257, 1001} (tails that divide no tile), and of {3, 7} with
// the largest extent of {257, 1001, 1536} (a few long odd rows). Shapes
// whose buffers hold more than MaxElems elements are left out; the result
// is deterministic and deduplicated.
func Of(f kernels.Family, dt dtype.DType) []variants.Shape {
	var out []variants.Shape
	seen := map[string]bool{}
	add := func(s variants.Shape) {
		if seen[s.Key()] {
			return
		}
		elems := 0
		for _, b := range f.Buffers(s) {
			elems += kernels.Elems(b, s)
		}
		if elems > MaxElems {
			return
		}
		seen[s.Key()] = true
		out = append(out, s)
	}
	for _, dims := range genericSpecs {
		if s, err := f.Shape(variants.Spec{Dims: dims}, dt); err == nil {
			add(s)
		}
	}
	p, err := variants.LookupPreset("qwen1.5b", 64)
	if err != nil {
		return out
	}
	for _, ps := range f.Shapes(p, []dtype.DType{dt}) {
		longest := 0
		for i, d := range ps.Dims {
			if d.Value > ps.Dims[longest].Value {
				longest = i
			}
		}
		for k, cands := range [][]int{tinyValues, tailValues, wideShort} {
			dims := append([]variants.Dim(nil), ps.Dims...)
			for i := range dims {
				if k == 2 && i == longest {
					cands = wideLong
				} else if k == 2 {
					cands = wideShort
				}
				for _, v := range cands {
					if v >= dims[i].Value && dims[i].Milli == 0 {
						break
					}
					old := dims[i]
					dims[i] = variants.Dim{Name: old.Name, Value: v}
					if _, err := f.Shape(variants.Spec{Dims: dims}, dt); err == nil {
						break
					}
					dims[i] = old
				}
			}
			if s, err := f.Shape(variants.Spec{Dims: dims}, dt); err == nil {
				add(s)
			}
		}
	}
	return out
}
