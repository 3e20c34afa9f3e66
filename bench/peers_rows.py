#!/usr/bin/env python3
"""Peer measurements for gradtune's row families: PyTorch eager's backward of
softmax, RMSNorm and LayerNorm on the same GPU, on the qwen1.5b shapes.

  softmax_bwd   aten._softmax_backward_data(dy, y, -1, dtype)      [tokens/512*12*512 x 512]
  layernorm_bwd aten.native_layer_norm_backward (dx, dgamma, dbeta) [tokens x 1536]
  rmsnorm_bwd   autograd of F.rms_norm: grad(y, (x, w), dy)          [tokens x 1536]

Inputs follow gradtune's: y the softmax of logits uniform in [-2, 2], dy
uniform in [-1, 1], gamma uniform in [0.5, 1.5], eps 1e-6 (RMSNorm) and 1e-5
(LayerNorm). Timing is peerlib.bench, the tables' protocol (a 256 MB memset flushes L2
before every repetition, as gradtune's cold mode does; median returned).
Writes one JSON object per line with bench/peers.py's fields {"kernel",
"shape", "dtype", "peer", "median_us", "gbps"}; shape is gradtune's shape key
without the dtype, and gbps counts the bytes gradtune's Cost does. Also
measures a device-to-device copy as the bandwidth ceiling (--no-copy skips).

Usage: python3 bench/peers_rows.py --out peers-rows.jsonl [--kernels softmax_bwd,rmsnorm_bwd,layernorm_bwd]
           [--tokens 2048] [--dtypes f32,bf16,f16]
"""
import argparse

import torch
import torch.nn.functional as F

from peerlib import DT, bench, copy_row, finish, row

aten = torch.ops.aten
HIDDEN, HEADS, SEQ = 1536, 12, 512  # qwen1.5b


def uniform(shape, lo, hi, g):
    return torch.rand(shape, device="cuda", generator=g) * (hi - lo) + lo


def case(kernel, tokens, dt, g):
    """Returns (m, n, fn, bytes) for one kernel and dtype."""
    t, sz = DT[dt], DT[dt].itemsize
    if kernel == "softmax_bwd":
        seq = min(SEQ, tokens)
        m, n = tokens // seq * HEADS * seq, seq
        y = torch.softmax(uniform((m, n), -2, 2, g), -1).to(t)
        dy = uniform((m, n), -1, 1, g).to(t)
        return m, n, lambda: aten._softmax_backward_data(dy, y, -1, t), 3 * m * n * sz
    m, n = tokens, HIDDEN
    x = uniform((m, n), -2, 2, g).to(t)
    w = uniform((n,), 0.5, 1.5, g).to(t)
    dy = uniform((m, n), -1, 1, g).to(t)
    if kernel == "layernorm_bwd":
        b = torch.zeros(n, device="cuda", dtype=t)
        _, mean, rstd = aten.native_layer_norm(x, [n], w, b, 1e-5)
        fn = lambda: aten.native_layer_norm_backward(dy, x, [n], mean, rstd, w, b, [True, True, True])
        return m, n, fn, 3 * m * n * sz + n * sz + 8 * m + 8 * n
    x.requires_grad_(True)
    w.requires_grad_(True)
    y = F.rms_norm(x, (n,), w, eps=1e-6)
    fn = lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True)
    return m, n, fn, 3 * m * n * sz + n * sz + 4 * m + 4 * n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", default="softmax_bwd,rmsnorm_bwd,layernorm_bwd")
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--dtypes", default="f32,bf16,f16")
    ap.add_argument("--no-copy", action="store_true")
    a = ap.parse_args()
    rows = []
    if not a.no_copy:
        rows.append(copy_row())
    g = torch.Generator(device="cuda").manual_seed(0)
    for k in a.kernels.split(","):
        for dt in a.dtypes.split(","):
            m, n, fn, nbytes = case(k, a.tokens, dt, g)
            rows.append(row(k, f"m={m},n={n}", dt, "torch eager", bench(fn), nbytes))
            torch.cuda.empty_cache()
    finish(rows, a.out)


if __name__ == "__main__":
    main()
