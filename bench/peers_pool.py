#!/usr/bin/env python3
"""Peer measurements for gradtune's lp_pool1d_bwd: PyTorch eager's backward of
torch.nn.functional.lp_pool1d on the same GPU.

For each shape and dtype, builds x of [N, C, L] (uniform in [-2, 2], as
gradtune's inputs), runs the forward y = F.lp_pool1d(x, p, window, stride,
ceil_mode) once with autograd recording, and times the backward alone:
torch.autograd.grad(y, x, dy, retain_graph=True), which runs PyTorch's
pow/mul/relu/abs/avg_pool2d backward chain. Timing is
peerlib.bench, the tables' protocol (a 256 MB memset flushes L2 before every run,
as gradtune's cold mode does; median returned). Writes one JSON object per
line with the fields of bench/peers.py: {"kernel", "shape", "dtype", "peer",
"median_us", "gbps"}, where shape is gradtune's shape key without the dtype
(n=32,c=256,l=4096,window=4,stride=2,p=2[,ceil=1]) so that bench/compare.py
joins it with the tuned winners, and gbps counts the bytes gradtune's Cost
does (x, dy and y read once, dx written once). Also measures a
device-to-device copy as the bandwidth ceiling (--no-copy to skip).

Usage: python3 bench/peers_pool.py --out peers-pool.jsonl
           [--shapes "n=32,c=256,l=4096,window=4,stride=2,p=2;..."] [--dtypes f32,bf16,f16,f64]
"""
import argparse
import sys

import torch
import torch.nn.functional as F

from peerlib import DT, bench, copy_row, finish, row


def parse_shape(spec):
    """Parses n=..,c=..,l=..,window=..[,stride=..],p=..[,ceil=1] as gradtune does."""
    d = {}
    for part in spec.split(","):
        k, v = part.split("=")
        d[k.strip()] = v.strip()
    n, c, l, k = int(d["n"]), int(d["c"]), int(d["l"]), int(d["window"])
    s = int(d.get("stride", k))
    p = float(d["p"])
    ceil = d.get("ceil", "0") == "1"
    return n, c, l, k, s, p, ceil


def shape_key(n, c, l, k, s, p, ceil):
    """gradtune's Shape.Key without the dtype."""
    ps = str(int(p)) if p == int(p) else (f"{p:.3f}".rstrip("0"))
    key = f"n={n},c={c},l={l},window={k},stride={s},p={ps}"
    return key + (",ceil=1" if ceil else "")


def out_len(l, k, s, ceil):
    """PyTorch's pooling_output_shape with padding 0 and dilation 1."""
    o = (l - k + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= l:
        o -= 1
    return o


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default="n=32,c=256,l=4096,window=4,stride=2,p=2")
    ap.add_argument("--dtypes", default="f32,bf16,f16,f64")
    ap.add_argument("--no-copy", action="store_true")
    a = ap.parse_args()
    rows = []
    if not a.no_copy:
        rows.append(copy_row())
    g = torch.Generator(device="cuda").manual_seed(0)
    for spec in a.shapes.split(";"):
        if not spec.strip():
            continue
        n, c, l, k, s, p, ceil = parse_shape(spec)
        lout = out_len(l, k, s, ceil)
        for dt in a.dtypes.split(","):
            x = (torch.rand((n, c, l), device="cuda", generator=g) * 4 - 2).to(DT[dt]).requires_grad_()
            y = F.lp_pool1d(x, p, k, stride=s, ceil_mode=ceil)
            if tuple(y.shape) != (n, c, lout):
                sys.exit(f"lp_pool1d gave {tuple(y.shape)}, gradtune expects {(n, c, lout)}")
            dy = (torch.rand(y.shape, device="cuda", generator=g) * 2 - 1).to(DT[dt])
            dx, = torch.autograd.grad(y, x, dy, retain_graph=True)
            if not torch.isfinite(dx).all() and p == int(p) and int(p) % 2 == 0:
                print(f"warning: {spec} {dt}: non-finite dx from PyTorch", file=sys.stderr)
            nbytes = (2 * n * c * l + 2 * n * c * lout) * x.element_size()
            t = bench(lambda: torch.autograd.grad(y, x, dy, retain_graph=True))
            rows.append(row("lp_pool1d_bwd", shape_key(n, c, l, k, s, p, ceil), dt,
                            "torch eager (autograd.grad of F.lp_pool1d)", t, nbytes))
            del x, y, dy, dx
            torch.cuda.empty_cache()
    finish(rows, a.out, shape_width=48)


if __name__ == "__main__":
    main()
