#!/usr/bin/env python3
"""Peer measurements for the backward kernels of a training step that
gradtune does not tune yet, bf16, on Qwen2.5-1.5B's shapes, per token count:

  swiglu_bwd   y = silu(gate)*up [T x 8960]: dgate, dup from dy.
               shape "m=T,n=8960"; bytes 5*T*8960*2 (read dy, gate, up;
               write dgate, dup)
  rope_bwd     HF rotate-half RoPE, q [T,12,128], k [T,2,128], cos/sin
               [T,128] (cos = cat(freqs, freqs).cos()): dq, dk from dq_out,
               dk_out. shape "t=T,hq=12,hk=2,d=128"; bytes 2*T*14*128*2
               (read dq_out, dk_out; write dq, dk) + 2*T*128*2 (cos, sin)
  cross_entropy_bwd / cross_entropy_grad
               mean CE over logits [T x 151936] bf16, labels int64 with ~1%
               -100; forward+backward (dlogits: what gradtune's
               cross_entropy_bwd computes, statistics and gradient), and
               the backward alone (cross_entropy_grad) where the peer has
               one. shape "t=T,v=151936" (gradtune's key); bytes
               2*T*151936*2 + 8*T (read logits, write dlogits, read labels)
  linear_cross_entropy_bwd / linear_cross_entropy_grad
               mean CE of x @ W.T with x [T x 1536], W [151936 x 1536] bf16:
               dX with W frozen (requires_grad False, as QLoRA trains; --lce-dw
               adds rows with dW too, peer names ending " +dW"), forward and
               backward (what gradtune's linear_cross_entropy_bwd computes:
               loss, lse and dX from x, W and labels) and the backward alone
               (linear_cross_entropy_grad). shape "t=T,h=1536,v=151936"
               (gradtune's key; ",dw=1" on the +dW rows); bytes 2*(2*T*1536 + 151936*1536) + 8*T
               (read x, W, labels; write dX; +dW rows add W's gradient
               written, 151936*1536*2); the row's "tflops" counts the head's
               GEMMs, 4*T*151936*1536 for fwd+bwd (6*T*151936*1536 with dW)
               and 2*T*151936*1536 (4*... with dW) for the backward alone,
               whatever a peer recomputes left out.

  flash_attn_bwd
               causal GQA attention backward (12/2 heads, d 128) at the
               sequence lengths 1024..8192 that T tokens fill (batch T/s):
               SDPA's cuDNN, flash and efficient backends (run_attn).
               shape "b=B,s=S,hq=12,hk=2,d=128,causal=1" (gradtune's key)

Peers: torch eager (autograd of the forward graph), torch.compile (the forward
function compiled, dynamic=False; for *_bwd and swiglu/rope only the
torch.autograd.grad call is timed, run with retain_graph and with
torch._functorch.config.donated_buffer off, which retain_graph requires;
rope's peers are replayed as CUDA graphs, so that the backward's kernels
alone are timed at 2048 tokens, beside a copy_ of rope's bytes, the
bandwidth reference at its size),
Liger-Kernel's Triton ops (swiglu_backward, rope_backward,
LigerCrossEntropyFunction, LigerFusedLinearCrossEntropyFunction), Apple's Cut
Cross-Entropy (linear_cross_entropy, impl "cce", with its default gradient
filter filter_eps="auto" and without it), a copy of 3 [T x 8960] arrays for
swiglu_bwd, and the two head GEMMs through torch (x @ W.T, dlogits @ W) as the
linear cross-entropy's floor. Liger and CCE are carried as source under
bench/third_party (see its README.md: commits, files, the one stub).

Timing is peerlib.bench (the tables' protocol, L2 flushed before every
repetition, median). Each row has peerlib's fields {"kernel", "shape", "dtype",
"peer", "median_us", "gbps"} plus "tokens", "pass" ("bwd", "fwd+bwd"; "copy"
and "gemm" for the references),
"peak_extra_mb" (torch.cuda.max_memory_allocated during one call minus
memory_allocated before it: what the call allocates, its outputs included; the
backward-only rows also have "saved_mb", what the forward left allocated for
the backward), "rel_err" (max |peer - reference| / max |reference| over the
gradients, on copies, before timing; the reference is f32 autograd for
swiglu/rope and torch eager for the cross-entropies), "loss_err" for the
cross-entropies, and "note". A peer that fails gets a row with "error" and
null times; the error is printed to stderr naming the peer, and the other
peers still run. Rows are appended to --out as they are measured, so a run cut
short keeps what it measured. `tune report --peers` keeps the last row of
each kernel and shape and rejects a file with a row without a positive
median_us: the references (copy, head GEMMs) come first so a peer's row is
last, and error rows must be filtered out first (grep -v '"error"').

Inputs: gate ~ N(0, 2^2), up, dy, q, k, dq_out, dk_out ~ N(0, 1); RoPE positions
0..T-1 with Qwen2.5's theta 1e6; logits ~ N(0, 2^2); x ~ N(0, 1) and W ~
N(0, (2/sqrt(1536))^2), so the head's logits are also ~ N(0, 2^2). Random
logits carry no vocabulary structure, so how much CCE's gradient filter skips
here need not match a trained model's; the filter_eps=None row bounds it.

Usage: python3 bench/peers_step.py --out peers-step.jsonl [--tokens 2048[,8192]]
           [--kernels swiglu_bwd,rope_bwd,cross_entropy,linear_cross_entropy,lora_bwd,flash_attn_bwd]
           [--peers SUBSTR,...] [--lce-dw] [--no-copy]
"""
import argparse
import contextlib
import importlib
import json
import math
import os
import re
import sys
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
THIRD = os.path.join(HERE, "third_party")
for _p in ("cut_cross_entropy", "liger_kernel"):
    sys.path.insert(0, os.path.join(THIRD, _p))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from peerlib import bench, copy_row, graphed, row  # noqa: E402

HIDDEN, FFN, HQ, HK, HD, VOCAB, THETA = 1536, 8960, 12, 2, 128, 151936, 1e6  # Qwen2.5-1.5B
BF16 = torch.bfloat16
KERNELS = ("swiglu_bwd", "rope_bwd", "cross_entropy", "linear_cross_entropy", "lora_bwd", "flash_attn_bwd")
# The projections of one layer, [out, in], and the LoRA ranks gradtune's lora_bwd is judged at.
PROJECTIONS = ((HQ * HD, HIDDEN), (HK * HD, HIDDEN), (FFN, HIDDEN), (HIDDEN, FFN))
RANKS = (16, 64)


def log(*a):
    print("peers_step:", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- imports


def ensure_packaging():
    """Liger and CCE import packaging.version. Where packaging is missing,
    alias a vendored copy (pip's, setuptools') or, failing those, a minimal
    Version that orders the leading numeric release. Returns what was used."""
    try:
        import packaging.version  # noqa: F401
        return "packaging"
    except ImportError:
        pass
    for vend in ("pip._vendor.packaging", "setuptools._vendor.packaging", "pkg_resources._vendor.packaging"):
        try:
            pkg = importlib.import_module(vend)
            ver = importlib.import_module(vend + ".version")
        except Exception:  # noqa: BLE001
            continue
        sys.modules["packaging"] = pkg
        sys.modules["packaging.version"] = ver
        return vend

    class Version:
        def __init__(self, s):
            m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(s))
            if not m:
                raise ValueError(f"Invalid version: {s!r}")
            self.release = tuple(int(p) for p in m.group(1).split("."))

        def _key(self, other):
            a, b = self.release, (other if isinstance(other, Version) else Version(other)).release
            n = max(len(a), len(b))
            return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))

        def __lt__(self, o):
            a, b = self._key(o)
            return a < b

        def __le__(self, o):
            a, b = self._key(o)
            return a <= b

        def __gt__(self, o):
            a, b = self._key(o)
            return a > b

        def __ge__(self, o):
            a, b = self._key(o)
            return a >= b

        def __eq__(self, o):
            a, b = self._key(o)
            return a == b

        def __hash__(self):
            return hash(self.release)

    ver = types.ModuleType("packaging.version")
    ver.Version = Version
    ver.parse = Version
    pkg = types.ModuleType("packaging")
    pkg.version = ver
    pkg.__path__ = []
    sys.modules["packaging"] = pkg
    sys.modules["packaging.version"] = ver
    return "minimal shim in peers_step.py"


PACKAGING = ensure_packaging()


def ensure_triton_testing():
    """Cut Cross-Entropy imports get_dram_gbps, get_max_simd_tflops,
    get_max_tensorcore_tflops and nvsmi from triton.testing, which newer
    tritons may lack; they serve its autotuning only (CCE_AUTOTUNE, off
    here). Missing ones become functions that raise, naming themselves, if
    called. Returns the names stubbed."""
    import triton.testing as tt

    missing = [n for n in ("get_dram_gbps", "get_max_simd_tflops", "get_max_tensorcore_tflops", "nvsmi")
               if not hasattr(tt, n)]
    for n in missing:
        def stub(*_a, _n=n, **_k):
            raise RuntimeError(f"triton.testing.{_n} is not in this triton; CCE's autotuning needs it")
        setattr(tt, n, stub)
    if missing:
        log(f"triton.testing lacks {', '.join(missing)}: stubbed for Cut Cross-Entropy's import")
    return missing


_CARRIED = {}


def carried(name):
    """Imports a module of the carried peers, checking it came from
    bench/third_party and not from an installed copy."""
    if name not in _CARRIED:
        mod = importlib.import_module(name)
        path = os.path.abspath(getattr(mod, "__file__", "") or "")
        if not path.startswith(THIRD + os.sep):
            raise ImportError(f"{name} resolved to {path}, not to the copy under {THIRD}")
        log(f"{name} from {os.path.relpath(path, HERE)}")
        _CARRIED[name] = mod
    return _CARRIED[name]


# ---------------------------------------------------------------- helpers


def sync():
    torch.cuda.synchronize()


def free():
    sync()
    torch.cuda.empty_cache()


def peak_extra_mb(fn):
    """What one call of fn allocates at its peak, outputs included, in MiB."""
    sync()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    sync()
    peak = torch.cuda.max_memory_allocated()
    del out
    return (peak - base) / 2**20


def rel_err(got, ref):
    """max |got - ref| / max |ref| over matching tensors (tuples allowed)."""
    if isinstance(got, torch.Tensor):
        got, ref = (got,), (ref,)
    num, den = 0.0, 0.0
    for a, b in zip(got, ref):
        b = b.float()
        d = (a.float() - b).abs().max().item()
        if math.isnan(d):
            return math.nan  # max() would drop a NaN
        num = max(num, d)
        den = max(den, b.abs().max().item())
    return num / den if den else num


def no_donated_buffers():
    """torch.compile's backward, since torch 2.6, may donate saved tensors'
    memory and then refuses retain_graph=True; timing the backward alone
    calls it again and again on one graph, so donation is turned off."""
    try:
        cfg = importlib.import_module("torch._functorch.config")
    except ImportError:
        cfg = None
    if cfg is not None and hasattr(cfg, "donated_buffer"):
        return cfg.patch(donated_buffer=False)
    return contextlib.nullcontext()


def compiled(fn):
    """torch.compile of fn on a clean dynamo cache (so every compiled peer is
    compiled under its own settings), static shapes."""
    importlib.import_module("torch._dynamo").reset()
    return torch.compile(fn, dynamic=False)


class Runner:
    def __init__(self, out, tokens, peers):
        self.out, self.tokens, self.peers = out, tokens, peers
        self.rows = []

    def emit(self, r):
        r["tokens"] = self.tokens
        self.rows.append(r)
        with open(self.out, "a") as f:
            f.write(json.dumps(r) + "\n")

    def wanted(self, peer):
        return not self.peers or any(p.lower() in peer.lower() for p in self.peers)

    def peer(self, kernel, shape, peer, nbytes, make, pass_="bwd", flops=None, ctx=None):
        """make() does the peer's setup (inputs, forward for the backward
        alone, checks) and returns (fn, info): fn is the timed call, info
        extra fields. The first call of fn (compilation, autotuning) is not
        timed; then the peak memory of one call, then bench(fn)."""
        if not self.wanted(peer):
            return
        base = {"kernel": kernel, "shape": shape, "dtype": "bf16", "peer": peer, "pass": pass_}
        try:
            with ctx() if ctx else contextlib.nullcontext():
                fn, info = make()
                fn()
                sync()
                mem = peak_extra_mb(fn)
                us = bench(fn)
                del fn
            r = row(kernel, shape, "bf16", peer, us, nbytes)
            r["pass"] = pass_
            r["peak_extra_mb"] = round(mem, 1)
            if flops:
                r["tflops"] = flops / (us * 1e-6) / 1e12
            r.update(info)
            self.emit(r)
            log(f"{kernel} {shape} {peer} [{pass_}]: {us:.1f} µs, {r['gbps']:.0f} GB/s, peak +{mem:.0f} MiB"
                + (f", rel_err {info['rel_err']:.2e}" if "rel_err" in info else ""))
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {e}"
            log(f"{kernel} {shape} peer {peer!r} [{pass_}] FAILED: {msg[:2000]}")
            traceback.print_exc(limit=-6, file=sys.stderr)
            base.update(median_us=None, gbps=None, error=msg[:500])
            self.emit(base)
        finally:
            free()


def leaf(t):
    return t.detach().clone().requires_grad_(True)


# ---------------------------------------------------------------- lora_bwd


def run_lora(R, T, g):
    """A LoRA adapter's backward through torch's GEMMs, y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ
    with h = x·Aᵀ saved: dh = s·dY·B, dB = s·dYᵀ·h, dA = dhᵀ·x ("three
    GEMMs", what the issue compares with) and, in the four-GEMM row, the
    adapter's dX = dh·A too. gradtune's shape key t,in,out,r."""
    s = 2.0
    for out, inn in PROJECTIONS:
        for r in RANKS:
            shape = f"t={T},in={inn},out={out},r={r}"
            nbytes = 2 * (T * out + T * inn + T * r + r * inn + out * r + T * r + out * r + r * inn + T * inn)
            x = torch.randn(T, inn, device="cuda", generator=g).to(BF16)
            dy = torch.randn(T, out, device="cuda", generator=g).to(BF16)
            a = (torch.randn(r, inn, device="cuda", generator=g) / inn**0.5).to(BF16)
            b = (torch.randn(out, r, device="cuda", generator=g) / r**0.5).to(BF16)
            h = x @ a.t()

            def three():
                dh = (dy @ b) * s
                return dh, (dy.t() @ h) * s, dh.t() @ x

            def four():
                dh, db, da = three()
                return dh, db, da, dh @ a

            # Each a CUDA graph: five or seven small launches, whose host
            # time exceeds their GPU time at 2048 tokens. The three GEMMs
            # are the peer of gradtune's dx=base (dX left to the base
            # layer's GEMM), the four of dx=here.
            R.peer("lora_bwd", shape + ",dx=base", "torch 3 GEMMs", nbytes - 2 * (r * inn + T * inn),
                   lambda: (graphed(three, "torch 3 GEMMs"), {}), flops=2 * T * r * (2 * out + inn))
            R.peer("lora_bwd", shape, "torch 4 GEMMs", nbytes, lambda: (graphed(four, "torch 4 GEMMs"), {}),
                   flops=2 * T * r * (2 * out + 2 * inn))
            del x, dy, a, b, h


# ---------------------------------------------------------------- swiglu_bwd


def swiglu(gate, up):
    return F.silu(gate) * up


def run_swiglu(R, T, g):
    shape, nbytes = f"m={T},n={FFN}", 5 * T * FFN * 2
    gate0 = (torch.randn(T, FFN, device="cuda", generator=g) * 2).to(BF16)
    up0 = torch.randn(T, FFN, device="cuda", generator=g).to(BF16)
    dy = torch.randn(T, FFN, device="cuda", generator=g).to(BF16)
    g32, u32 = leaf(gate0.float()), leaf(up0.float())
    ref = torch.autograd.grad(swiglu(g32, u32), (g32, u32), dy.float())
    del g32, u32

    def graph(f):
        def make():
            gate, up = leaf(gate0), leaf(up0)
            sync()
            before = torch.cuda.memory_allocated()
            y = f(gate, up)
            sync()
            saved = (torch.cuda.memory_allocated() - before) / 2**20
            err = rel_err(torch.autograd.grad(y, (gate, up), dy, retain_graph=True), ref)
            return (lambda: torch.autograd.grad(y, (gate, up), dy, retain_graph=True)), {
                "rel_err": err, "saved_mb": round(saved, 1)}
        return make

    def copy3():
        src = torch.randn(3 * T, FFN, device="cuda", generator=g).to(BF16)
        dst = torch.empty_like(src)
        return (lambda: dst.copy_(src)), {
            "note": "bandwidth reference: one copy_ of a [3T x 8960] bf16 array; gbps counts its 6*T*8960*2 bytes"}

    R.peer("swiglu_bwd", shape, "torch.copy_ 3 arrays", 6 * T * FFN * 2, copy3, pass_="copy")

    R.peer("swiglu_bwd", shape, "torch eager", nbytes, graph(swiglu))
    R.peer("swiglu_bwd", shape, "torch.compile", nbytes, lambda: graph(compiled(swiglu))(), ctx=no_donated_buffers)

    def liger():
        sw = carried("liger_kernel.ops.swiglu")
        a, b = gate0.clone(), up0.clone()
        err = rel_err(sw.swiglu_backward(a, b, dy), ref)
        a, b = gate0.clone(), up0.clone()
        # swiglu_backward(a, b, dc) writes da into a and db into b in place (as
        # LigerSiLUMulFunction.backward does to its saved inputs), so each timed
        # call starts from the previous call's gradients: the same work and bytes.
        return (lambda: sw.swiglu_backward(a, b, dy)), {
            "rel_err": err, "note": "swiglu_backward(gate, up, dy) called directly; in place into gate, up"}

    R.peer("swiglu_bwd", shape, "liger swiglu_backward", nbytes, liger)


# ---------------------------------------------------------------- rope_bwd


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(q, k, cos, sin):
    """Hugging Face's apply_rotary_pos_emb on [T, heads, d] with cos, sin
    [T, d] broadcast over heads."""
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s


def run_rope(R, T, g):
    shape = f"t={T},hq={HQ},hk={HK},d={HD}"
    nbytes = 2 * T * (HQ + HK) * HD * 2 + 2 * T * HD * 2
    inv = 1.0 / (THETA ** (torch.arange(0, HD, 2, device="cuda", dtype=torch.float32) / HD))
    freqs = torch.outer(torch.arange(T, device="cuda", dtype=torch.float32), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(BF16), emb.sin().to(BF16)  # [T, 128], as HF's rotary embedding returns them
    q0 = torch.randn(T, HQ, HD, device="cuda", generator=g).to(BF16)
    k0 = torch.randn(T, HK, HD, device="cuda", generator=g).to(BF16)
    dq_out = torch.randn(T, HQ, HD, device="cuda", generator=g).to(BF16)
    dk_out = torch.randn(T, HK, HD, device="cuda", generator=g).to(BF16)
    q32, k32 = leaf(q0.float()), leaf(k0.float())
    ref = torch.autograd.grad(rope(q32, k32, cos.float(), sin.float()), (q32, k32), (dq_out.float(), dk_out.float()))
    del q32, k32

    def graph(f):
        def make():
            q, k = leaf(q0), leaf(k0)
            sync()
            before = torch.cuda.memory_allocated()
            out = f(q, k, cos, sin)
            sync()
            saved = (torch.cuda.memory_allocated() - before) / 2**20
            err = rel_err(torch.autograd.grad(out, (q, k), (dq_out, dk_out), retain_graph=True), ref)
            # At 2048 tokens the backward's kernels take a few µs and the
            # host's launches more: replayed as a CUDA graph, the kernels
            # alone are timed, as the harness times ours.
            fn = graphed(lambda: torch.autograd.grad(out, (q, k), (dq_out, dk_out), retain_graph=True), "rope backward")
            return fn, {"rel_err": err, "saved_mb": round(saved, 1)}
        return make

    def copy_same():
        src = torch.randn(nbytes // 4, device="cuda", generator=g).to(BF16)
        dst = torch.empty_like(src)
        return graphed(lambda: dst.copy_(src), "copy"), {
            "note": "bandwidth reference at this size: one copy_ that reads and writes the kernel's bytes in all"}

    R.peer("rope_bwd", shape, "torch.copy_ same bytes", nbytes, copy_same, pass_="copy")

    R.peer("rope_bwd", shape, "torch eager", nbytes, graph(rope))
    R.peer("rope_bwd", shape, "torch.compile", nbytes, lambda: graph(compiled(rope))(), ctx=no_donated_buffers)

    def liger():
        rp = carried("liger_kernel.ops.rope")
        # Liger's layout is [batch, heads, seq, d] as a view of a [batch, seq,
        # heads, d] buffer (rope_backward transposes back and calls
        # .contiguous(), a no-op then) and cos/sin [1 or batch, seq, d]. Our
        # [T, heads, d] gradients are batch 1: unsqueeze(0).transpose(1, 2) is
        # that view, no copy. The kernel writes dq, dk in place over
        # dq_out, dk_out and reads only the first half of cos, sin
        # (cat(freqs, freqs)).
        c1, s1 = cos.unsqueeze(0), sin.unsqueeze(0)

        def call(dq, dk):
            return rp.rope_backward(dq.unsqueeze(0).transpose(1, 2), dk.unsqueeze(0).transpose(1, 2), c1, s1)

        a, b = dq_out.clone(), dk_out.clone()
        dq, dk = call(a, b)  # [1, heads, T, d] views of a, b
        got = (dq.transpose(1, 2).squeeze(0), dk.transpose(1, 2).squeeze(0))
        inplace = got[0].data_ptr() == a.data_ptr() and got[1].data_ptr() == b.data_ptr()
        err = rel_err(got, ref)
        a, b = dq_out.clone(), dk_out.clone()
        # In place: each timed call rotates the previous call's result once
        # more (the same work and bytes; a rotation keeps magnitudes).
        return graphed(lambda: call(a, b), "liger rope_backward"), {"rel_err": err, "note": (
            "rope_backward(dq, dk, cos, sin) called directly on [1,heads,T,d] transposed views, cos/sin [1,T,d]; "
            + ("in place" if inplace else "NOT in place (copied)"))}

    R.peer("rope_bwd", shape, "liger rope_backward", nbytes, liger)


# ---------------------------------------------------------------- flash_attn_bwd

ATTN_SEQS = (1024, 2048, 4096, 8192)


def attn_shape(b, s):
    """gradtune's flash_attn_bwd key (b left out at its default, 1)."""
    return (f"b={b}," if b != 1 else "") + f"s={s},hq={HQ},hk={HK},d={HD},causal=1"


def run_attn(R, T, g):
    """Qwen2.5-1.5B attention backward (12 query / 2 KV heads, head dim 128,
    causal, bf16) through SDPA, at every sequence length of ATTN_SEQS that T
    tokens fill (batch T/s): the backward alone (dQ, dK, dV from dO, the
    forward run once before timing), per backend: cuDNN, FlashAttention-2
    and memory-efficient, GQA by enable_gqa where the backend takes it, and
    cuDNN on K, V expanded to the query heads (repeat_interleave, whose
    backward sums the group: what a model without GQA support runs). Tokens
    are [b, s, h, d] as FlashAttention keeps them; SDPA gets the [b, h, s, d]
    views. The reference is the math backend in f32. "tflops" counts
    FlashAttention's backward FLOPs: 2.5 × 4·b·s²·hq·d / 2 (causal)."""
    attention = importlib.import_module("torch.nn.attention")
    B = attention.SDPBackend
    for s in ATTN_SEQS:
        if T % s:
            continue
        b = T // s
        shape = attn_shape(b, s)
        nbytes = 2 * (4 * b * s * HQ * HD + 4 * b * s * HK * HD) + 4 * b * HQ * s  # q,o,do,dq; k,v,dk,dv; lse
        flops = 2.5 * 4 * b * s * s * HQ * HD / 2
        q0 = torch.randn(b, s, HQ, HD, device="cuda", generator=g).to(BF16)
        k0 = torch.randn(b, s, HK, HD, device="cuda", generator=g).to(BF16)
        v0 = torch.randn(b, s, HK, HD, device="cuda", generator=g).to(BF16)
        do = torch.randn(b, s, HQ, HD, device="cuda", generator=g).to(BF16).transpose(1, 2)

        def sdpa(q, k, v, expand=False):
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            if expand:
                k, v = k.repeat_interleave(HQ // HK, dim=1), v.repeat_interleave(HQ // HK, dim=1)
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

        with attention.sdpa_kernel(B.MATH):
            qr, kr, vr = leaf(q0.float()), leaf(k0.float()), leaf(v0.float())
            ref = torch.autograd.grad(sdpa(qr, kr, vr), (qr, kr, vr), do.float())
        del qr, kr, vr
        free()

        def bwd(backend, expand=False):
            def make():
                q, k, v = leaf(q0), leaf(k0), leaf(v0)
                with attention.sdpa_kernel(backend):
                    out = sdpa(q, k, v, expand)
                err = rel_err(torch.autograd.grad(out, (q, k, v), do, retain_graph=True), ref)
                return (lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)), {"rel_err": err}
            return make

        for backend, tag in ((B.CUDNN_ATTENTION, "sdpa cudnn"), (B.FLASH_ATTENTION, "sdpa flash"),
                             (B.EFFICIENT_ATTENTION, "sdpa efficient")):
            R.peer("flash_attn_bwd", shape, tag + " (enable_gqa)", nbytes, bwd(backend), flops=flops)
        R.peer("flash_attn_bwd", shape, "sdpa cudnn (K,V expanded)", nbytes, bwd(B.CUDNN_ATTENTION, True), flops=flops)
        del q0, k0, v0, do, ref
        free()


# ---------------------------------------------------------------- cross_entropy


def ce(logits, labels):
    """What Hugging Face's loss does to bf16 logits: upcast, then mean CE."""
    return F.cross_entropy(logits.float(), labels, ignore_index=-100)


def make_labels(T, g):
    labels = torch.randint(0, VOCAB, (T,), device="cuda", generator=g)
    labels[torch.rand(T, device="cuda", generator=g) < 0.01] = -100
    return labels


def run_ce(R, T, g):
    shape, nbytes = f"t={T},v={VOCAB}", 2 * T * VOCAB * 2 + 8 * T
    logits0 = (torch.randn(T, VOCAB, device="cuda", generator=g) * 2).to(BF16)
    labels = make_labels(T, g)
    x = leaf(logits0)
    ref_loss = ce(x, labels)
    (ref,) = torch.autograd.grad(ref_loss, x)
    ref_loss = ref_loss.item()
    del x

    def both(f):
        def make():
            x = leaf(logits0)
            loss = f(x, labels)
            err = rel_err(torch.autograd.grad(loss, x)[0], ref)
            lerr = abs(loss.item() - ref_loss)
            del loss

            def fn():
                return torch.autograd.grad(f(x, labels), x)
            return fn, {"rel_err": err, "loss_err": lerr}
        return make

    def bwd(f):
        def make():
            x = leaf(logits0)
            sync()
            before = torch.cuda.memory_allocated()
            loss = f(x, labels)
            sync()
            saved = (torch.cuda.memory_allocated() - before) / 2**20
            err = rel_err(torch.autograd.grad(loss, x, retain_graph=True)[0], ref)
            return (lambda: torch.autograd.grad(loss, x, retain_graph=True)), {
                "rel_err": err, "loss_err": abs(loss.item() - ref_loss), "saved_mb": round(saved, 1)}
        return make

    R.peer("cross_entropy_bwd", shape, "torch eager", nbytes, both(ce), pass_="fwd+bwd")
    R.peer("cross_entropy_grad", shape, "torch eager", nbytes, bwd(ce))
    R.peer("cross_entropy_bwd", shape, "torch.compile", nbytes, lambda: both(compiled(ce))(), pass_="fwd+bwd")
    R.peer("cross_entropy_grad", shape, "torch.compile", nbytes, lambda: bwd(compiled(ce))(), ctx=no_donated_buffers)

    def liger():
        ce_mod = carried("liger_kernel.ops.cross_entropy")
        Fn = ce_mod.LigerCrossEntropyFunction

        # apply(_input, target, weight, ignore_index, lse_square_scale,
        # label_smoothing, reduction): the loss and the gradient in one kernel
        # in the forward, written over the logits; the backward is a no-op when
        # the loss's gradient is 1. Not separable, so no backward-only row.
        def f(x):
            return Fn.apply(x, labels, None, -100, 0.0, 0.0, "mean")[0]

        x = leaf(logits0)
        loss = f(x)
        (gx,) = torch.autograd.grad(loss, x)
        err, lerr = rel_err(gx, ref), abs(loss.item() - ref_loss)
        del gx, loss
        x = leaf(logits0)

        def fn():
            # Each call overwrites x with its gradient; the next call's loss is
            # over those values: the same work and bytes.
            return torch.autograd.grad(f(x), x)
        return fn, {"rel_err": err, "loss_err": lerr, "note": (
            "LigerCrossEntropyFunction: gradient computed in the forward, in place over the logits "
            "(backward-only not separable); the loss is accumulated in bf16")}

    R.peer("cross_entropy_bwd", shape, "liger LigerCrossEntropyFunction", nbytes, liger, pass_="fwd+bwd")


# ---------------------------------------------------------------- linear cross-entropy


def lce(x, w, labels):
    return F.cross_entropy((x @ w.t()).float(), labels, ignore_index=-100)


def run_lce(R, T, g, dw):
    shape = f"t={T},h={HIDDEN},v={VOCAB}" + (",dw=1" if dw else "")
    nbytes = 2 * (2 * T * HIDDEN + VOCAB * HIDDEN) + 8 * T + (VOCAB * HIDDEN * 2 if dw else 0)
    flops = (6 if dw else 4) * T * VOCAB * HIDDEN
    bflops = flops - 2 * T * VOCAB * HIDDEN  # the backward's GEMMs, the logits' recomputation not counted
    sfx = " +dW" if dw else ""
    x0 = torch.randn(T, HIDDEN, device="cuda", generator=g).to(BF16)
    w0 = (torch.randn(VOCAB, HIDDEN, device="cuda", generator=g) * (2 / math.sqrt(HIDDEN))).to(BF16)
    labels = make_labels(T, g)
    w = w0.clone().requires_grad_(dw)  # frozen unless --lce-dw, as QLoRA trains
    xr = leaf(x0)
    wrt = (xr, w) if dw else (xr,)
    ref_loss = lce(xr, w, labels)
    ref = torch.autograd.grad(ref_loss, wrt)
    ref_loss = ref_loss.item()
    del xr, wrt
    free()
    note_w = "dX and dW" if dw else "dX only, W frozen (requires_grad False)"

    def inputs():
        x = leaf(x0)
        return x, ((x, w) if dw else (x,))

    def both(f, note=""):
        def make():
            x, wrt = inputs()
            loss = f(x, w, labels)
            err = rel_err(torch.autograd.grad(loss, wrt), ref)
            lerr = abs(loss.item() - ref_loss)
            del loss

            def fn():
                return torch.autograd.grad(f(x, w, labels), wrt)
            return fn, {"rel_err": err, "loss_err": lerr, "note": (note + "; " if note else "") + note_w}
        return make

    def bwd(f, note=""):
        def make():
            x, wrt = inputs()
            sync()
            before = torch.cuda.memory_allocated()
            loss = f(x, w, labels)
            sync()
            saved = (torch.cuda.memory_allocated() - before) / 2**20
            err = rel_err(torch.autograd.grad(loss, wrt, retain_graph=True), ref)
            return (lambda: torch.autograd.grad(loss, wrt, retain_graph=True)), {
                "rel_err": err, "loss_err": abs(loss.item() - ref_loss), "saved_mb": round(saved, 1),
                "note": (note + "; " if note else "") + note_w}
        return make

    K, KB = "linear_cross_entropy_bwd", "linear_cross_entropy_grad"
    def floor():
        x = x0.clone()
        dlogits = (torch.randn(T, VOCAB, device="cuda", generator=g) * 1e-4).to(BF16)
        wd = w0

        def fn():
            out = (x @ wd.t(), dlogits @ wd)
            if dw:
                out = out + (dlogits.t() @ x,)
            return out
        return fn, {"note": "floor: the head GEMMs alone through torch: x @ W.T, dlogits @ W"
                    + (", dlogits.T @ x" if dw else "") + "; outputs allocated each call"}

    R.peer(K, shape, "torch mm (head GEMMs only)" + sfx, nbytes, floor, pass_="gemm", flops=flops)

    R.peer(K, shape, "torch eager" + sfx, nbytes, both(lce), pass_="fwd+bwd", flops=flops)
    R.peer(KB, shape, "torch eager" + sfx, nbytes, bwd(lce), flops=bflops)
    R.peer(K, shape, "torch.compile" + sfx, nbytes, lambda: both(compiled(lce))(), pass_="fwd+bwd", flops=flops)
    R.peer(KB, shape, "torch.compile" + sfx, nbytes, lambda: bwd(compiled(lce))(), flops=bflops,
           ctx=no_donated_buffers)

    def liger_f(x, w, labels):
        m = carried("liger_kernel.ops.fused_linear_cross_entropy")
        # apply(_input, weight, target, bias, ce_weight, ignore_index,
        # lse_square_scale, label_smoothing, reduction): returns (loss, z_loss,
        # token_accuracy, predicted_tokens); the gradients are computed in the
        # forward, chunk by chunk.
        return m.LigerFusedLinearCrossEntropyFunction.apply(x, w, labels, None, None, -100, 0.0, 0.0, "mean")[0]

    R.peer(K, shape, "liger LigerFusedLinearCrossEntropyFunction" + sfx, nbytes,
           both(liger_f, "gradients computed in the forward (backward-only not separable)"),
           pass_="fwd+bwd", flops=flops)

    def cce_f(filter_eps):
        def f(x, w, labels):
            ensure_triton_testing()
            m = carried("cut_cross_entropy")
            carried("cut_cross_entropy.cce")
            # linear_cross_entropy(e [T,D], c [V,D], targets [T]), impl "cce",
            # mean over targets != -100.
            return m.linear_cross_entropy(x, w, labels, ignore_index=-100, reduction="mean",
                                          filter_eps=filter_eps, impl="cce")
        return f

    for eps, tag in ((None, "cce filter_eps=None"), ("auto", "cce")):
        note = ("filter_eps='auto' (CCE's default: skips gradient blocks whose softmax is below bf16 eps/32)"
                if eps else "gradient filtering off")
        R.peer(K, shape, tag + sfx, nbytes, both(cce_f(eps), note), pass_="fwd+bwd", flops=flops)
        R.peer(KB, shape, tag + sfx, nbytes, bwd(cce_f(eps), note), flops=bflops)


# ---------------------------------------------------------------- main


def table(rows):
    print(f"{'kernel':25} {'shape':24} {'peer':44} {'pass':7} {'median µs':>10} {'GB/s':>7} {'TFLOP/s':>8} "
          f"{'peak MiB':>9} {'rel_err':>8}")
    for r in rows:
        if r.get("error"):
            print(f"{r['kernel']:25} {r['shape']:24} {r['peer'][:44]:44} {r.get('pass', ''):7} ERROR {r['error'][:80]}")
            continue
        tf = f"{r['tflops']:8.1f}" if "tflops" in r else " " * 8
        pk = f"{r['peak_extra_mb']:9.0f}" if "peak_extra_mb" in r else " " * 9
        er = f"{r['rel_err']:8.1e}" if "rel_err" in r else " " * 8
        print(f"{r['kernel']:25} {r['shape']:24} {r['peer'][:44]:44} {r.get('pass', ''):7} "
              f"{r['median_us']:10.1f} {r['gbps']:7.0f} {tf} {pk} {er}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", default="2048", help="token counts, comma-separated")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--peers", default="", help="only peers whose name contains one of these, comma-separated")
    ap.add_argument("--lce-dw", action="store_true", help="also linear cross-entropy rows with dW")
    ap.add_argument("--no-copy", action="store_true", help="skip peerlib's 1 GiB copy row")
    a = ap.parse_args()
    kernels = [k for k in a.kernels.split(",") if k]
    for k in kernels:
        if k not in KERNELS:
            raise SystemExit(f"peers_step: unknown kernel {k}; want some of {','.join(KERNELS)}")
    peers = [p for p in a.peers.split(",") if p]
    log(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, packaging from {PACKAGING}")
    open(a.out, "w").close()
    rows = []
    if not a.no_copy:
        r = copy_row()
        r["tokens"] = None
        rows.append(r)
        with open(a.out, "a") as f:
            f.write(json.dumps(r) + "\n")
    for t in (int(s) for s in a.tokens.split(",") if s):
        R = Runner(a.out, t, peers)
        g = torch.Generator(device="cuda").manual_seed(0)
        for k in kernels:
            try:
                if k == "swiglu_bwd":
                    run_swiglu(R, t, g)
                elif k == "rope_bwd":
                    run_rope(R, t, g)
                elif k == "cross_entropy":
                    run_ce(R, t, g)
                elif k == "lora_bwd":
                    run_lora(R, t, g)
                elif k == "flash_attn_bwd":
                    run_attn(R, t, g)
                else:
                    run_lce(R, t, g, False)
                    if a.lce_dw:
                        run_lce(R, t, g, True)
            except Exception as e:  # noqa: BLE001  (the inputs or reference themselves)
                log(f"{k} tokens={t}: setup FAILED: {type(e).__name__}: {e}")
                traceback.print_exc(file=sys.stderr)
            free()
        rows += R.rows
    table(rows)
    print(torch.cuda.get_device_name(), "torch", torch.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
