package crosscheck

import (
	"regexp"
	"slices"
	"strings"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/smallshapes"
	"github.com/gradtune/gradtune/variants"
)

// Case is one (family, shape, variant) and what each backend made of it.
type Case struct {
	F       kernels.Family
	S       variants.Shape
	P       variants.Params
	Prog    kernels.Program
	EmitErr error
	Inexact string // why the math is not exactly rounded ("" when it is)
	GPU     Side
	Sim     Side
}

var floatAtomicRE = regexp.MustCompile(`(?m)\b(atom|red)\.[^\s]*\.(f32|f64|f16|bf16|f16x2|bf16x2)\s`)

// InexactReason says why a program's results may legitimately differ
// between the GPU and the interpreter in the last bits, or "".
func InexactReason(ptx string) string {
	var r []string
	if strings.Contains(ptx, ".approx") {
		r = append(r, "approximate instructions")
	}
	if floatAtomicRE.MatchString(ptx) {
		r = append(r, "float atomics (order)")
	}
	if strings.Contains(ptx, "mma.sync") || strings.Contains(ptx, "wgmma.mma_async") {
		r = append(r, "tensor-core sums")
	}
	return strings.Join(r, ", ")
}

// Pick returns at least n cases (when the spaces hold that many) spread
// over fams, their dtypes among dts (nil: all), their small shapes and
// their variants. The same arguments give the same cases.
func Pick(fams []kernels.Family, dts []dtype.DType, n int, seed uint64) []*Case {
	var out []*Case
	quota := (n + len(fams) - 1) / len(fams)
	for _, f := range fams {
		var shapes []variants.Shape
		for _, dt := range f.DTypes() {
			if dts == nil || slices.Contains(dts, dt) {
				shapes = append(shapes, smallshapes.Of(f, dt)...)
			}
		}
		out = append(out, pickFamily(f, shapes, quota, seed)...)
	}
	return out
}

// pickFamily takes quota cases of f round robin over its shapes; the j-th
// pick of a shape walks its space with a prime stride from a
// seed-dependent start, so picks spread over the space and differ from
// shape to shape.
func pickFamily(f kernels.Family, shapes []variants.Shape, quota int, seed uint64) []*Case {
	var out []*Case
	spaces := make([][]variants.Params, len(shapes)) // enumerated on first use
	seen := make([]map[int]bool, len(shapes))
	for j := 0; len(out) < quota; j++ {
		progress := false
		for i, s := range shapes {
			if len(out) == quota {
				break
			}
			if seen[i] == nil {
				spaces[i], seen[i] = f.Space(s).Enumerate(), map[int]bool{}
			}
			all := spaces[i]
			if j >= len(all) {
				continue
			}
			k := (int(seed%uint64(len(all))) + 7*i + j*7919) % len(all)
			for seen[i][k] {
				k = (k + 1) % len(all)
			}
			seen[i][k] = true
			c := &Case{F: f, S: s, P: all[k]}
			c.Prog, c.EmitErr = f.Emit(s, all[k])
			if c.EmitErr == nil {
				c.Inexact = InexactReason(c.Prog.PTX)
			}
			out = append(out, c)
			progress = true
		}
		if !progress {
			break
		}
	}
	return out
}
