package linxent

import (
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// EmitBuggy emits variant p of shape s with a planted bug: noRescale
// stores each chunk's P·w over the accumulator instead of rescaling and
// adding (ref=fixed: instead of adding); labelOff takes z[label] one class late; noOneHot leaves −g at
// the label out of the dW pass's gradient; noWSum leaves label
// smoothing's Σ_c w_c out of dx; noZFactor z-loss's factor. With
// softmax=epilogue, lowClamp (not a bug) clamps probabilities half a bit
// over their reference, so that most rows go through the repair kernel,
// and lowClampNoFlag does so without flagging them.
func EmitBuggy(s variants.Shape, p variants.Params, bug string) (kernels.Program, error) {
	sh, pv, err := kernels.DecodeVariant[Shape, Params](s, p)
	if err != nil {
		return kernels.Program{}, err
	}
	b := map[string]bugs{"noRescale": {noRescale: true}, "labelOff": {labelOff: true}, "noOneHot": {noOneHot: true},
		"noWSum": {noWSum: true}, "noZFactor": {noZFactor: true},
		"lowClamp": {clamp: 0.5}, "lowClampNoFlag": {clamp: 0.5, noFlag: true}}[bug]
	return emit(sh, pv, b)
}

// EmitPasses emits variant p of shape s with passes over blocks of tblock
// rows (any count, past the axis's values, so that the interpreter's
// shapes have several); samePassRows plants the bug of every pass's
// gradient adding into the first pass's rows.
func EmitPasses(s variants.Shape, p variants.Params, tblock int, samePassRows bool) (kernels.Program, error) {
	sh, pv, err := kernels.DecodeVariant[Shape, Params](s, p)
	if err != nil {
		return kernels.Program{}, err
	}
	pv.TBlock = tblock
	return emit(sh, pv, bugs{samePassRows: samePassRows})
}
