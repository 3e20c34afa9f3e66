// Command rsprobe writes three timing-only PTX kernels that separate the
// costs of nf4_gemm_bwd's register-A path (docs/kernels/nf4.md): 132 CTAs
// of two warpgroups, each running kt k-tiles of four m64n192k16 wgmma on
// garbage shared memory, with A from a shared-memory descriptor (ss), from
// constant registers (rs), or from registers dequantized per k-tile as the
// path does (rsdeq: code words and a 16-entry f32 table in shared memory,
// two fragment sets). Their results are meaningless; rsprobe.py times them.
//
//	go run ./bench/research/rsprobe DIR
package main
