// Package main is the rsprobe command: it writes timing-only PTX kernels
// that separate the costs of nf4_gemm_bwd's register-A path (docs/kernels/nf4.md): 132 CTAs of two
// warpgroups, each running kt k-tiles of four m64n192k16 wgmma on garbage
// shared memory, with A from a shared-memory descriptor (ss), from constant
// registers (rs), or from registers dequantized per k-tile (the rs* modes,
// listed with the modes variable: the path's own instructions, variants
// without its table loads, and prmt lookups of a bf16 codebook), and the
// file DIR/modes that lists them in order. Their results are meaningless;
// rsprobe.py times them.
//
//	go run ./bench/research/rsprobe DIR
package main
