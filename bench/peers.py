#!/usr/bin/env python3
"""Peer measurements for gradtune: PyTorch eager backward kernels on the same GPU.

Times each op with triton.testing.do_bench (a 256 MB memset flushes L2
before every repetition, as gradtune's cold mode does; median returned) on
the shapes gradtune tunes, and writes one JSON object per line: {"kernel",
"shape", "dtype", "peer", "median_us", "gbps"}. Also measures a device-to-device copy as the bandwidth ceiling.

Usage: python3 bench/peers.py --out peers.jsonl [--kernels relu_bwd,gelu_bwd,silu_bwd] [--tokens 2048]
"""
import argparse
import json
import sys

import torch
from triton.testing import do_bench

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
aten = torch.ops.aten

OPS = {
    "relu_bwd": lambda dy, x: aten.threshold_backward(dy, x, 0),
    "gelu_bwd": lambda dy, x: aten.gelu_backward(dy, x, approximate="tanh"),
    "silu_bwd": lambda dy, x: aten.silu_backward(dy, x),
}


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3  # µs



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", default="relu_bwd,gelu_bwd,silu_bwd")
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--dtypes", default="f32,f16,bf16")
    a = ap.parse_args()
    rows = []
    n = 1 << 28  # 1 GiB of f32
    src = torch.empty(n, device="cuda").uniform_()
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src))
    rows.append({"kernel": "copy", "shape": f"n={n}", "dtype": "f32", "peer": "torch.copy_",
                 "median_us": t, "gbps": 2 * n * 4 / (t * 1e-6) / 1e9})
    del src, dst
    g = torch.Generator(device="cuda").manual_seed(0)
    for k in a.kernels.split(","):
        op = OPS[k]
        for dt in a.dtypes.split(","):
            for cols in (8960, 1536):
                shape = (a.tokens, cols)
                x = (torch.rand(shape, device="cuda", generator=g) * 8 - 4).to(DT[dt])
                dy = (torch.rand(shape, device="cuda", generator=g) * 2 - 1).to(DT[dt])
                nbytes = 3 * x.numel() * x.element_size()
                t = bench(lambda: op(dy, x))
                rows.append({"kernel": k, "shape": f"m={a.tokens},n={cols}", "dtype": dt, "peer": "torch eager",
                             "median_us": t, "gbps": nbytes / (t * 1e-6) / 1e9})
    with open(a.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"{'kernel':10} {'shape':16} {'dtype':5} {'median µs':>10} {'GB/s':>8}")
    for r in rows:
        print(f"{r['kernel']:10} {r['shape']:16} {r['dtype']:5} {r['median_us']:10.2f} {r['gbps']:8.0f}")
    print(torch.cuda.get_device_name(), "torch", torch.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
