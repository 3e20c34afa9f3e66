// Package nf4 is the NF4 weight format of QLoRA as bitsandbytes stores it,
// in pure Go: quantization, dequantization, double quantization of the
// scales, and the two nibble orders. The kernel families nf4_dequant and
// nf4_gemm_bwd (package nf4gemm) read what this package writes; their
// references are computed from Tensor.Dequantize.
//
// # Layout
//
// A weight W of [N×K] (nn.Linear: N out-features, K in-features) is
// flattened row-major and cut into blocks of Block consecutive elements
// along K (Block divides K; bitsandbytes' default and QLoRA's is 64).
// Block b = n·K/Block + k/Block has one f32 scale, its absmax: the largest
// |w| of the block. Each element is the 4-bit index c of the nearest value
// of Codebook to w/absmax, and dequantizes to
//
//	w' = fl32(Codebook[c] · absmax)
//
// one f32 multiply, as bitsandbytes' kDequantizeBlockwise does before
// rounding once to bf16 or f16. Two codes share a byte: element i of the
// flattened tensor is in byte i/2. Order says which nibble:
//
//   - HighFirst (bitsandbytes, what QLoRA checkpoints hold): element 2j in
//     the high nibble of byte j, element 2j+1 in the low one.
//   - LowFirst (the seed kernel, trueno's nf4_cpu.rs): the opposite.
//
// Tensor.WithOrder converts between them; nothing converts implicitly.
//
// # Double quantization
//
// With double quantization (bitsandbytes' compress_statistics, QLoRA's
// "double quant") the scales are themselves quantized: offset is the mean
// of the absmaxes; blocks of NestedBlock = 256 scales share a second-level
// f32 scale absmax2 (the largest |absmax − offset| among them); each scale
// is an 8-bit index into the 256-entry table Code (bitsandbytes' signed
// dynamic map, DynamicMap). Block b's scale is then
//
//	absmax(b) = fma32(Code[codes[b]], absmax2[b/256], offset)
//
// one f32 fused multiply-add, as bitsandbytes' CUDA code compiles
// (nvcc contracts a·b + c). The table is data: a tensor carries the table
// it was quantized with.
//
// # Zero blocks
//
// A block of zeros has absmax 0; its codes are all 7 (the exact zero of
// the codebook), so it dequantizes to zeros (bitsandbytes would divide by
// zero there).
package nf4
