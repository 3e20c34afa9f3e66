"""One Qwen2.5-1.5B decoder layer, QLoRA style, forward and backward two
ways, on one GPU:

  tuned  gradtune.torch's Functions: RMSNorm (backward rmsnorm_bwd), the
         NF4 base weights with LoRA adapters (dX from nf4_gemm_bwd, the
         forward's W from nf4_dequant), the gated MLP's silu(gate)·up
         (backward swiglu_bwd), RoPE on q and k (backward rope_bwd);
  torch  plain PyTorch, the NF4 linear as bitsandbytes computes it: W
         dequantized, then multiplied, in the forward and again in the
         backward (bitsandbytes' MatMul4Bit keeps no W).

Both run the same NF4 weights (double-quantized scales, blocks of 64) and
the same LoRA adapters (rank 16, alpha 32, on q, k, v, o, gate, up and
down; B drawn small rather than PEFT's zeros, so that every gradient is
nonzero). Attention is torch's scaled_dot_product_attention in both.

Checks: each gradient (the layer input's, and dA and dB of the seven
adapters) of each path is compared with the same layer computed in f32
from the same bf16 weights; the tuned path's relative error
||g − g32|| / ||g32|| must be at most 2× the torch path's plus 2⁻⁹
(0.2%): the tuned kernels may round differently, not worse.

Prints each path's backward time (median of --iters, CUDA events, L2
flushed before each, as the tables' protocol says), the speedup, the
per-kernel split of one backward of each (torch.profiler, CUDA time),
and, last, the times with the step captured in CUDA graphs (forward,
forward and backward, and their difference: the backward without the
host's launch cost, which bounds eager mode at a few thousand tokens).

    PYTHONPATH=python python3 examples/pytorch/qwen_layer.py [--tokens 2048] [--iters 20]

Exit status 1 when a gradient is outside its bound.
"""

import argparse
import statistics
import sys
import warnings

import torch
import torch.nn.functional as F

import gradtune.torch as gt


HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 1536, 12, 2, 128, 8960
EPS, THETA, RANK, ALPHA = 1e-6, 1e6, 16, 32
PROJECTIONS = {  # name: (out, in, bias)
    "q": (HEADS * HEAD_DIM, HIDDEN, True), "k": (KV_HEADS * HEAD_DIM, HIDDEN, True), "v": (KV_HEADS * HEAD_DIM, HIDDEN, True),
    "o": (HIDDEN, HEADS * HEAD_DIM, False), "gate": (FFN, HIDDEN, False), "up": (FFN, HIDDEN, False), "down": (HIDDEN, FFN, False),
}


class Layer:
    """The layer's frozen weights (NF4 projections, biases, norm weights) and
    its trainable LoRA adapters."""

    def __init__(self, device):
        g = torch.Generator(device=device).manual_seed(0)
        self.nf4, self.bias, self.a, self.b = {}, {}, {}, {}
        for name, (n, k, bias) in PROJECTIONS.items():
            w = torch.randn(n, k, generator=g, device=device) * k ** -0.5
            self.nf4[name] = gt.NF4Weight.quantize(w, 64, double_quant=True)
            self.bias[name] = (torch.randn(n, generator=g, device=device) * 0.02).bfloat16() if bias else None
            self.a[name] = (torch.rand(RANK, k, generator=g, device=device) * 2 - 1).mul(k ** -0.5).bfloat16()
            self.b[name] = (torch.randn(n, RANK, generator=g, device=device) * 0.01).bfloat16()
        self.norm1 = (1 + 0.1 * torch.randn(HIDDEN, generator=g, device=device)).bfloat16()
        self.norm2 = (1 + 0.1 * torch.randn(HIDDEN, generator=g, device=device)).bfloat16()

    def params(self, dtype=torch.bfloat16):
        """Fresh leaves of the adapters, for one backward."""
        return {n: (self.a[n].to(dtype).clone().requires_grad_(True), self.b[n].to(dtype).clone().requires_grad_(True))
                for n in PROJECTIONS}


def rope(t, cos, sin):
    """t [T, H, D] rotated by the tables cos, sin [T, D] (rotate-half)."""
    half = t.shape[-1] // 2
    rotated = torch.cat((-t[..., half:], t[..., :half]), -1)
    return t * cos[:, None, :] + rotated * sin[:, None, :]


def rope_tables(tokens, device, dtype):
    inv = 1.0 / THETA ** (torch.arange(0, HEAD_DIM, 2, device=device).float() / HEAD_DIM)
    freqs = torch.outer(torch.arange(tokens, device=device).float(), inv)
    emb = torch.cat((freqs, freqs), -1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def forward(layer, x, adapters, ops):
    """The decoder layer: x + attn(norm1(x)), then + mlp(norm2(·)); ops
    supplies norm(x, w), proj(name, x, a, b), rope(q, k, cos, sin) and
    swiglu(gate, up)."""
    T = x.shape[0]
    cos, sin = rope_tables(T, x.device, x.dtype)

    def proj(name, h):
        return ops.proj(layer, name, h, *adapters[name])

    h = ops.norm(x, layer.norm1)
    q, k = ops.rope(proj("q", h).view(T, HEADS, HEAD_DIM), proj("k", h).view(T, KV_HEADS, HEAD_DIM), cos, sin)
    v = proj("v", h).view(T, KV_HEADS, HEAD_DIM)
    k, v = (t.repeat_interleave(HEADS // KV_HEADS, 1) for t in (k, v))
    att = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], is_causal=True)
    x = x + proj("o", att[0].transpose(0, 1).reshape(T, HEADS * HEAD_DIM))
    h = ops.norm(x, layer.norm2)
    return x + proj("down", ops.swiglu(proj("gate", h), proj("up", h)))


class Tuned:
    """gradtune.torch's Functions."""

    @staticmethod
    def norm(x, w):
        return gt.rms_norm(x, w, EPS)

    @staticmethod
    def proj(layer, name, h, a, b):
        return gt.nf4_lora_linear(h, layer.nf4[name], a, b, ALPHA / RANK, layer.bias[name])

    swiglu = staticmethod(gt.swiglu)
    rope = staticmethod(gt.rope)


class _BnbNF4(torch.autograd.Function):
    """bitsandbytes' MatMul4Bit: W dequantized in the forward, and again in
    the backward for dX."""

    @staticmethod
    def forward(ctx, x, weight):
        ctx.weight = weight
        return x @ weight.dequantize(x.dtype).t()

    @staticmethod
    def backward(ctx, dy):
        return dy @ ctx.weight.dequantize(dy.dtype), None


class Torch:
    """Plain PyTorch."""

    @staticmethod
    def norm(x, w):
        x32 = x.float()
        return w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype)

    @staticmethod
    def proj(layer, name, h, a, b):
        y = _BnbNF4.apply(h, layer.nf4[name]) + (ALPHA / RANK) * ((h @ a.t()) @ b.t())
        return y if layer.bias[name] is None else y + layer.bias[name]

    @staticmethod
    def swiglu(gate, up):
        return F.silu(gate) * up

    @staticmethod
    def rope(q, k, cos, sin):
        return rope(q, cos, sin), rope(k, cos, sin)


class Float32(Torch):
    """The reference: the same layer in f32, from the bf16 weights."""

    @staticmethod
    def norm(x, w):
        return w.float() * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS))

    @staticmethod
    def proj(layer, name, h, a, b):
        w = layer.nf4[name].dequantize(torch.bfloat16).float()
        y = h @ w.t() + (ALPHA / RANK) * ((h @ a.t()) @ b.t())
        return y if layer.bias[name] is None else y + layer.bias[name].float()


def gradients(layer, x, dy, ops, dtype=torch.bfloat16):
    """The gradients of the input and of every adapter's A and B."""
    xs = x.to(dtype).clone().requires_grad_(True)
    adapters = layer.params(dtype)
    forward(layer, xs, adapters, ops).backward(dy.to(dtype))
    out = {"dx": xs.grad}
    for n, (a, b) in adapters.items():
        out[f"dA {n}"], out[f"dB {n}"] = a.grad, b.grad
    return out


def median_us(timed, iters, scrub, before=lambda: None):
    """Median in µs of timed() over iters runs after 3 untimed ones: each
    run's before() untimed, the L2 flushed, then timed() between two
    events."""
    times = []
    for i in range(iters + 3):
        before()
        scrub.fill_(i & 255)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        timed()
        end.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def backward_time(layer, x, dy, ops, iters, scrub):
    """Median backward time in µs: each iteration's forward untimed, the
    L2 flushed, then the backward between two events."""
    outputs = []

    def run_forward():
        outputs.append(forward(layer, x.clone().requires_grad_(True), layer.params(), ops))

    return median_us(lambda: outputs.pop().backward(dy), iters, scrub, run_forward)


def graph_times(layer, x, dy, ops, iters, scrub):
    """Median replay times in µs of the layer's forward, and of its forward
    and backward, each captured in one CUDA graph (as a trainer that
    captures its step runs it: no host cost per launch), L2 flushed before
    each replay; their difference is the backward's GPU time."""
    xs = x.clone().requires_grad_(True)
    params = layer.params()

    def step(backward):
        y = forward(layer, xs, params, ops)
        if backward:
            y.backward(dy)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(True)
    torch.cuda.current_stream().wait_stream(side)
    # The captured backward then writes fresh gradients, as the eager
    # timing's fresh leaves get them, rather than adding to the warm-up's.
    for t in [xs, *(w for pair in params.values() for w in pair)]:
        t.grad = None
    out = {}
    for name, backward in (("forward", False), ("forward+backward", True)):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step(backward)
        out[name] = median_us(g.replay, iters, scrub)
    return out


def kernel_split(layer, x, dy, ops):
    """(kernel, µs) of one backward, largest first (torch.profiler)."""
    xs = x.clone().requires_grad_(True)
    y = forward(layer, xs, layer.params(), ops)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        y.backward(dy)
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None)
        if us is None:
            us = getattr(e, "cuda_time_total", 0)
        if us > 0 and getattr(e, "device_type", None) != torch.autograd.DeviceType.CPU:
            rows.append((e.key, us, e.count))
    return sorted(rows, key=lambda r: -r[1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--top", type=int, default=12, help="kernels listed per path")
    a = p.parse_args()
    if a.tokens < 1 or a.iters < 1:
        p.error("--tokens and --iters must be at least 1")
    if not torch.cuda.is_available():
        print("qwen_layer: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(1)
    layer = Layer(dev)
    x = torch.randn(a.tokens, HIDDEN, device=dev).bfloat16()
    dy = torch.randn(a.tokens, HIDDEN, device=dev).bfloat16()

    with warnings.catch_warnings(record=True) as fell:
        warnings.simplefilter("always")
        tuned = gradients(layer, x, dy, Tuned)
    for w in fell:
        print(f"fallback: {w.message}")
    plain = gradients(layer, x, dy, Torch)
    ref = gradients(layer, x.float(), dy, Float32, torch.float32)

    bad = 0
    print(f"gradients vs the f32 layer (relative Frobenius error; bound: tuned ≤ 2·torch + 2^-9), {a.tokens} tokens")
    for name, g32 in ref.items():
        norm = g32.norm().item()
        e_tuned = (tuned[name].float() - g32).norm().item() / norm
        e_torch = (plain[name].float() - g32).norm().item() / norm
        ok = e_tuned <= 2 * e_torch + 2 ** -9
        bad += not ok
        print(f"  {name:8s} tuned {e_tuned:.2e}  torch {e_torch:.2e}  {'ok' if ok else 'OUT OF BOUND'}")

    l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 64 << 20)
    scrub = torch.empty(max(2 * l2, 128 << 20), dtype=torch.uint8, device=dev)
    t_tuned = backward_time(layer, x, dy, Tuned, a.iters, scrub)
    t_torch = backward_time(layer, x, dy, Torch, a.iters, scrub)
    print(f"backward: tuned {t_tuned:.0f} µs, torch + dequantize {t_torch:.0f} µs ({t_torch / t_tuned:.2f}×)")
    for label, ops in (("tuned", Tuned), ("torch", Torch)):
        rows = kernel_split(layer, x, dy, ops)
        total = sum(r[1] for r in rows)
        print(f"per-kernel split of one {label} backward ({total:.0f} µs of kernels):")
        for key, us, count in rows[: a.top]:
            print(f"  {us:8.1f} µs {100 * us / total:5.1f}%  ×{count:<3d} {key[:90]}")
    graphs = {}
    for label, ops in (("tuned", Tuned), ("torch", Torch)):
        try:
            graphs[label] = graph_times(layer, x, dy, ops, a.iters, scrub)
        except Exception as e:  # a path that cannot be captured is reported, not fatal
            print(f"CUDA graph, {label}: not captured ({type(e).__name__}: {e})")
    if len(graphs) == 2:
        g_tuned, g_torch = graphs["tuned"], graphs["torch"]
        for name in g_tuned:
            print(f"CUDA graph, {name}: tuned {g_tuned[name]:.0f} µs, torch + dequantize {g_torch[name]:.0f} µs "
                  f"({g_torch[name] / g_tuned[name]:.2f}×)")
        b_tuned = g_tuned["forward+backward"] - g_tuned["forward"]
        b_torch = g_torch["forward+backward"] - g_torch["forward"]
        print(f"CUDA graph, backward (the difference): tuned {b_tuned:.0f} µs, torch + dequantize {b_torch:.0f} µs "
              f"({b_torch / b_tuned:.2f}×)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
