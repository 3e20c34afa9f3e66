#!/usr/bin/env python3
"""Peer measurements for gradtune: PyTorch eager backward kernels on the same GPU.

Times each op with peerlib.bench, the tables' protocol (a 256 MB memset flushes L2
before every repetition, as gradtune's cold mode does; median returned) on
the shapes gradtune tunes, and writes one JSON object per line: {"kernel",
"shape", "dtype", "peer", "median_us", "gbps"}. Also measures a device-to-device copy as the bandwidth ceiling.

Usage: python3 bench/peers.py --out peers.jsonl [--kernels relu_bwd,gelu_bwd,silu_bwd] [--tokens 2048]
"""
import argparse

import torch

from peerlib import DT, bench, copy_row, finish, row
aten = torch.ops.aten

OPS = {
    "relu_bwd": lambda dy, x: aten.threshold_backward(dy, x, 0),
    "gelu_bwd": lambda dy, x: aten.gelu_backward(dy, x, approximate="tanh"),
    "silu_bwd": lambda dy, x: aten.silu_backward(dy, x),
}



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", default="relu_bwd,gelu_bwd,silu_bwd")
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--dtypes", default="f32,f16,bf16")
    a = ap.parse_args()
    rows = [copy_row()]
    g = torch.Generator(device="cuda").manual_seed(0)
    for k in a.kernels.split(","):
        op = OPS[k]
        for dt in a.dtypes.split(","):
            for cols in (8960, 1536):
                shape = (a.tokens, cols)
                x = (torch.rand(shape, device="cuda", generator=g) * 8 - 4).to(DT[dt])
                dy = (torch.rand(shape, device="cuda", generator=g) * 2 - 1).to(DT[dt])
                nbytes = 3 * x.numel() * x.element_size()
                rows.append(row(k, f"m={a.tokens},n={cols}", dt, "torch eager", bench(lambda: op(dy, x)), nbytes))
    finish(rows, a.out, kernel_width=10)


if __name__ == "__main__":
    main()
