// Package dtype names the element types gradtune kernels read and write
// (f32, f16, bf16, f64; u8 for packed bytes and i32 for class indices)
// and converts between them and float64.
//
// Conversions to the narrow types round to nearest, ties to even, exactly as
// the GPU's cvt.rn instructions do, so host-side inputs, references and the
// values a kernel reads agree bit for bit.
package dtype
