// Package step lists the kernels of one model's QLoRA backward step and
// how many times each runs, so that a report can weigh each tuned kernel
// by its launches: tuned time × launches per step, summed.
//
// Rules:
//   - The step is the backward of a decoder LM fine-tuned with QLoRA at
//     Preset.Tokens tokens: frozen NF4 base weights (nf4_gemm_bwd, dX
//     only), one LoRA adapter of rank Rank on every projection
//     (lora_bwd), two RMSNorms per layer and the final one
//     (rmsnorm_bwd), the gated MLP (swiglu_bwd), rotary embeddings on q
//     and k (rope_bwd), causal attention (flash_attn_bwd), the LM head's dX through a frozen bf16 head or
//     tied embedding (gemm_bwd grad=dx) and the loss (cross_entropy_bwd).
//   - Projections count as they occur: q and o are two launches of one
//     shape when Heads·HeadDim = Hidden, k and v two, gate and up two (a
//     fused gate_up or qkv one), down one; every per-layer kernel runs
//     Layers times.
//   - Attention's backward (flash_attn_bwd) is one causal sequence of the
//     step's tokens per layer, the model's heads and head dim; a family
//     missing from the catalog is reported as missing, never silently
//     dropped.
package step
