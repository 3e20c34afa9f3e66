"""gradtune on PyTorch tensors (imports torch lazily: importing this module
does not; the first use of any name below does, and raises ImportError
naming what to install when torch is absent).

  Tuned(tables)             tables and per-device drivers and caches
  Tuned.run(kernel, dtype, shape, tensors)
                            launch an entry on tensors, on torch's current
                            stream; returns the output buffers by name
  relu, gelu_tanh, silu     activations whose backward runs relu_bwd,
                            gelu_bwd, silu_bwd
  swiglu                    silu(gate)*up whose backward runs swiglu_bwd
  rope                      rotary embeddings (rotate-half, token-major
                            q and k) whose backward runs rope_bwd
  rms_norm                  RMSNorm (Qwen2/Llama) whose backward runs
                            rmsnorm_bwd from the forward's per-row rstd
  linear                    a dense bf16/f16 linear whose backward runs
                            gemm_bwd (grad=dx and grad=dw)
  linear_cross_entropy      the LM head and the mean cross-entropy (label
                            smoothing, z-loss) without the logits stored:
                            linear_cross_entropy_bwd
  NF4Weight, nf4_lora_linear, nf4_gemm_dx, NF4LoRALinear
                            an NF4 (bitsandbytes layout) base weight with a
                            LoRA adapter: dX from nf4_gemm_bwd, the
                            adapter's dA, dB and dX in torch

A shape or GPU with no entry falls back to the torch path and warns once
per kernel and reason. See gradtune/_torch.py for the rules.
"""

_NAMES = ("Tuned", "default", "set_default", "relu", "gelu_tanh", "silu", "swiglu", "rope", "rms_norm", "linear", "linear_cross_entropy", "NF4Weight",
          "nf4_lora_linear", "nf4_gemm_dx", "NF4LoRALinear", "BadTensor", "TORCH_DTYPES")


def __getattr__(name):
    if name not in _NAMES:
        raise AttributeError(f"module 'gradtune.torch' has no attribute {name!r}")
    try:
        from . import _torch
    except ImportError as e:
        if getattr(e, "name", None) == "torch":
            raise ImportError("gradtune.torch needs PyTorch (pip install torch)") from e
        raise
    return getattr(_torch, name)


def __dir__():
    return sorted(_NAMES)
