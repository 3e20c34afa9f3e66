// Package dtype names the element types gradtune kernels read and write
// (f32, f16, bf16, f64; u8 for packed bytes, i32 and i64 for class
// indices) and converts between them and float64.
//
// The element types are part of the launch contract (every buffer of a
// tuned table has one), so their definition lives in package configs,
// which trainers import alone. This package gives the harness, the kernel
// families and their tests the short names they read best: dtype.BF16,
// dtype.Parse. Each name here is an alias of configs' definition, not a
// second one.
package dtype
