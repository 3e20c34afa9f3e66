"""The NF4 input gradient as QLoRA trainers run it, on the GPU host:
dX = dY·dequant(W) by bitsandbytes' path (a one-pass dequantize kernel
to bf16, then the GEMM through torch: cuBLAS), and the GEMM alone on the
already dequantized weight (the dense floor), for nf4_gemm_bwd's shapes.

The weight is quantized as bitsandbytes does it (gradtune's NF4Weight,
python/gradtune), f32 scales or double-quantized; the dequantize kernel is
a Triton one-pass kernel in bitsandbytes' layout (element 2i in the high
nibble of byte i, a scale per 64 elements along k); where Triton fails it
falls back to torch's ops and says so. Every peer's dX is checked against
dY·W dequantized by the torch path before it is timed. Each peer is timed
as a CUDA graph replay (peerlib.graphed), so that Python's launch overhead
is not in the time.

Usage: python3 bench/peers_nf4.py OUT.jsonl SHAPE [SHAPE ...]
with SHAPE like m=2048,n=8960,k=1536 or m=2048,n=8960,k=1536,scales=dq
(bf16). Writes JSON lines {kernel, shape, dtype, peer, median_us, gbps}.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradtune._torch import NF4_CODEBOOK, NF4Weight  # noqa: E402
from peerlib import bench, finish, graphed, row  # noqa: E402

try:
    import triton
    import triton.language as tl

    @triton.jit
    def _dequant(w4, absmax, absmax_q, code2, absmax2, offset, book, out, nbytes,
                 NESTED: tl.constexpr, QBLOCK: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < nbytes
        b = tl.load(w4 + offs, mask=mask, other=0).to(tl.int32)
        blk = (2 * offs) // QBLOCK
        if NESTED:
            q = tl.load(absmax_q + blk, mask=mask, other=0).to(tl.int32)
            s = tl.load(code2 + q, mask=mask, other=0.0) * tl.load(absmax2 + blk // 256, mask=mask, other=0.0) + tl.load(offset)
        else:
            s = tl.load(absmax + blk, mask=mask, other=0.0)
        hi = tl.load(book + ((b >> 4) & 15), mask=mask, other=0.0) * s
        lo = tl.load(book + (b & 15), mask=mask, other=0.0) * s
        vals = tl.interleave(hi, lo).to(out.dtype.element_ty)
        o2 = 2 * tl.program_id(0) * BLOCK + tl.arange(0, 2 * BLOCK)
        tl.store(out + o2, vals, mask=o2 < 2 * nbytes)

    HAVE_TRITON = True
except Exception as e:  # noqa: BLE001
    print(f"peers_nf4: no Triton ({e}): the torch dequantization only", file=sys.stderr)
    HAVE_TRITON = False


def triton_dequant(w, out, book):
    nbytes = w.n * w.k // 2
    bufs = w.buffers()
    dummy = bufs["w4"]
    args = (bufs["w4"], bufs.get("absmax", dummy), bufs.get("absmax_q", dummy), bufs.get("code2", dummy),
            bufs.get("absmax2", dummy), bufs.get("dq_offset", dummy), book, out, nbytes)
    block = 1024
    _dequant[(triton.cdiv(nbytes, block),)](*args, NESTED=w.nested, QBLOCK=w.block, BLOCK=block)
    return out


def parse(spec):
    d = dict(kv.split("=") for kv in spec.split(","))
    return int(d["m"]), int(d["n"]), int(d["k"]), d.get("scales", "f32") == "dq"


def case(spec, rows):
    m, n, k, dq = parse(spec)
    torch.manual_seed(1)
    dev = "cuda"
    w = NF4Weight.quantize(torch.randn(n, k, device=dev) * 0.02, double_quant=dq)
    dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
    ref_w = w.dequantize(torch.bfloat16)
    ref = (dy.float() @ ref_w.float())
    book = torch.tensor(NF4_CODEBOOK, dtype=torch.float32, device=dev)
    buf = torch.empty(n, k, device=dev, dtype=torch.bfloat16)

    peer, deq = "triton dequant + torch matmul", None
    if HAVE_TRITON:
        try:
            triton_dequant(w, buf, book)
            torch.cuda.synchronize()
            bad = (buf != ref_w).sum().item()
            if bad:
                print(f"peers_nf4: {spec}: the Triton dequantization differs from the torch path in {bad} elements", file=sys.stderr)
            deq = lambda: triton_dequant(w, buf, book)  # noqa: E731
        except Exception as e:  # noqa: BLE001
            print(f"peers_nf4: {spec}: Triton dequantization failed ({e}): torch's instead", file=sys.stderr)
    if deq is None:
        peer, deq = "torch dequant + torch matmul", lambda: w.dequantize(torch.bfloat16)

    def unfused():
        return dy @ deq()

    err = (unfused().float() - ref).abs().max().item()
    scale = ref.abs().max().item()
    if err > 1e-2 * scale + 1e-3:
        raise SystemExit(f"peers_nf4: {spec}: {peer} is off by {err} (|ref| up to {scale})")
    cost = 2 * m * n + n * k // 2 + 2 * m * k  # gradtune's Cost, scales left out
    rows.append(row("nf4_gemm_bwd", spec, "bf16", peer + " (CUDA graph)", bench(graphed(unfused, peer)), cost))
    rows.append(row("nf4_gemm_bwd", spec, "bf16", "torch matmul (bf16 W, CUDA graph)", bench(graphed(lambda: dy @ ref_w, "torch matmul")), cost))
    rows.append(row("nf4_dequant", spec, "bf16", peer.split(" + ")[0] + " (CUDA graph)", bench(graphed(deq, "the dequantization")),
                    n * k // 2 + 2 * n * k))


def main():
    out, specs = sys.argv[1], sys.argv[2:]
    rows = []
    for spec in specs:
        case(spec, rows)
    finish(rows, out, kernel_width=13, shape_width=30)


if __name__ == "__main__":
    main()
