package nf4gemm

import "github.com/gradtune/gradtune/kernels"

// Families lists nf4_dequant.
func Families() []kernels.Family {
	return []kernels.Family{kernels.Define(dequantDef{})}
}
