package elementwise

import (
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// RopeSwappedSinHalves emits rope_bwd at shape s with params p, but with
// dx_lo taking sin_lo where it must take sin_hi: wrong wherever a table's
// halves differ.
func RopeSwappedSinHalves(s variants.Shape, p variants.Params) (kernels.Program, error) {
	rs, err := variants.DecodeShape[RopeShape](s.Dims, s.DType)
	if err != nil {
		return kernels.Program{}, err
	}
	pv, err := variants.Decode[RopeParams](p)
	if err != nil {
		return kernels.Program{}, err
	}
	return ropeBwd.emitWith(rs, pv, func(k *ptx.Func, in []ptx.Reg) []ptx.Reg {
		in = append([]ptx.Reg(nil), in...)
		in[5] = in[4]
		return ropeLane(k, in)
	})
}
