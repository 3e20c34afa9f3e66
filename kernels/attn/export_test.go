package attn

import (
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// EmitBuggy emits variant p of shape s with a planted bug: "maskEdge"
// (a key visible to queries past it only, j < i), "dropDQ" (key block
// 0's dQ partials not added), "noDSBar" (no barrier between dSᵀ's store
// and dQ's reads of it).
func EmitBuggy(s variants.Shape, p variants.Params, bug string) (kernels.Program, error) {
	sh, pv, err := kernels.DecodeVariant[Shape, Params](s, p)
	if err != nil {
		return kernels.Program{}, err
	}
	b := map[string]bugs{"maskEdge": {maskEdge: true}, "dropDQ": {dropDQ: true}, "noDSBar": {noDSBar: true}}[bug]
	return emit(sh, pv, b)
}

//
