"""Shared pieces of gradtune's peer scripts (peers.py, peers_rows.py,
peers_pool.py): the timing protocol, the copy-bandwidth ceiling, and the
JSON lines and table they write.

Timing is gradtune's table protocol (docs/architecture.md), so that a peer
and a table entry are timed alike: a 256 MB memset flushes L2 before every
run, CUDA events around each run, batches of 10 runs with the GPU idle 2 ms
between batches, the median. Not triton.testing.do_bench: its repetitions
run back to back, which holds a tensor-core GEMM at the board's power cap
(docs/architecture.md), unlike the table entries it is compared with.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from gradtune._selftest import protocol_median  # noqa: E402

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}


SAMPLES, WARMUP = 100, 25
_flush = None


def bench(fn, samples=SAMPLES):
    """Median time of fn in µs by the tables' protocol
    (gradtune._selftest.protocol_median: a fixed SAMPLES samples where the
    harness samples until the median converges, each after a 256 MB
    write), after WARMUP untimed calls."""
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    return protocol_median(fn, samples, WARMUP, _flush)


def graphed(fn, name):
    """fn captured in a CUDA graph, returned as a function that replays it:
    a peer of several launches timed without Python's launch overhead, which
    on a slow host exceeds the GPU's time for kernels of tens of µs (the
    GPU then waits for the host inside the timed region). fn's outputs are
    the graph's: they are rewritten at every replay. A function that cannot
    be captured (one that copies from the host or synchronizes) is returned
    as it is, and stderr says so."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            fn()
    except RuntimeError as e:
        torch.cuda.synchronize()
        print(f"peerlib: {name} cannot be captured in a CUDA graph ({e}): timed eagerly", file=sys.stderr)
        return fn
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
