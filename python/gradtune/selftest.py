"""The GPU self-test of gradtune.torch:

    PYTHONPATH=python python3 -m gradtune.selftest configs/h200 [--other-m 3001] [--samples 50]

For a few committed entries — an activation (silu_bwd), rmsnorm_bwd, the
wgmma gemm_bwd entries (tensor maps) and nf4_gemm_bwd (plain and double-
quantized scales) — it launches the entry through gradtune.torch at the
tuned m and at --other-m on outputs filled with NaN, compares every output
with a torch reference, and times both with the table's protocol (CUDA
events around one run, each after a write of twice the L2 when the table
says "flushed", the table's warm-up, the median). Then it checks the
autograd Functions' gradients against plain torch autograd.

An m the table has no entry for (an entry without runtime dims) is said
and not counted as a failure. Exit status: 0 when every launched output is
within its bound, 1 when one is not or a launch fails, 2 for bad usage.

Bounds, as a share of the reference's largest magnitude: 2^-7 for bf16
outputs, 2^-10 for f16, 1e-4 for f32 (dγ, column sums in f32).
"""

import argparse
import os
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m gradtune.selftest", description=__doc__.split("\n\n")[0])
    p.add_argument("tables", help="a directory of tables (configs/h200) or one table file")
    p.add_argument("--other-m", type=int, default=3001, help="the other token count (default 3001: odd, no tile's multiple)")
    p.add_argument("--samples", type=int, default=50, help="timed runs per case")
    a = p.parse_args(argv)
    if a.other_m < 1 or a.samples < 1:
        p.error("--other-m and --samples must be at least 1")
    if not os.path.exists(a.tables):
        p.error(f"{a.tables} does not exist")
    try:
        import torch
    except ImportError:
        print("gradtune.selftest: PyTorch is not installed (pip install torch)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gradtune.selftest: no CUDA device", file=sys.stderr)
        return 2
    from . import _selftest

    return _selftest.run(a.tables, a.other_m, a.samples)


if __name__ == "__main__":
    sys.exit(main())
