package nf4gemm

import "github.com/gradtune/gradtune/kernels"

// Families lists nf4_dequant and nf4_gemm_bwd.
func Families() []kernels.Family {
	return []kernels.Family{kernels.Define(dequantDef{}), kernels.Define(gemmDef{})}
}
