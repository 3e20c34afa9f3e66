"""Shared pieces of gradtune's peer scripts (peers.py, peers_rows.py,
peers_pool.py): the timing protocol, the copy-bandwidth ceiling, and the
JSON lines and table they write.

Timing is triton.testing.do_bench: a 256 MB memset flushes L2 before every
repetition, as gradtune's cold mode does, and the median is returned.
"""
import json
import sys

import torch
from triton.testing import do_bench

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}


def bench(fn):
    """Median time of fn in µs, after one untimed call."""
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3


def graphed(fn):
    """fn captured in a CUDA graph, returned as a function that replays it:
    a peer of several launches timed without Python's launch overhead, which
    on a slow host exceeds the GPU's time for kernels of tens of µs (the
    GPU then waits for the host inside the timed region). fn's outputs are
    the graph's: they are rewritten at every replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g.replay


def row(kernel, shape, dtype, peer, median_us, nbytes):
    """One result; gbps counts nbytes (gradtune's Cost) over the median."""
    return {"kernel": kernel, "shape": shape, "dtype": dtype, "peer": peer,
            "median_us": median_us, "gbps": nbytes / (median_us * 1e-6) / 1e9}


def copy_row():
    """A 1 GiB device-to-device copy: the bandwidth ceiling."""
    n = 1 << 28  # f32 elements
    src = torch.empty(n, device="cuda").uniform_()
    dst = torch.empty_like(src)
    r = row("copy", f"n={n}", "f32", "torch.copy_", bench(lambda: dst.copy_(src)), 2 * n * 4)
    del src, dst
    torch.cuda.empty_cache()
    return r


def finish(rows, out, kernel_width=14, shape_width=16):
    """Writes rows as JSON lines to out and prints them as a table."""
    with open(out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"{'kernel':{kernel_width}} {'shape':{shape_width}} {'dtype':5} {'median µs':>10} {'GB/s':>8}")
    for r in rows:
        print(f"{r['kernel']:{kernel_width}} {r['shape']:{shape_width}} {r['dtype']:5} "
              f"{r['median_us']:10.2f} {r['gbps']:8.0f}")
    print(torch.cuda.get_device_name(), "torch", torch.__version__, file=sys.stderr)
