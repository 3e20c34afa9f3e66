"""The self-test's cases (see gradtune/selftest.py)."""

import statistics
import time
import traceback
import warnings

import torch

from . import _torch as gt
from .errors import NoEntry

BOUNDS = {torch.bfloat16: 2 ** -7, torch.float16: 2 ** -10, torch.float32: 1e-4}


def rel_err(got, ref):
    """max |got − ref| / max |ref|, inf when got has a NaN."""
    got, ref = got.float(), ref.float()
    if torch.isnan(got).any():
        return float("inf")
    return ((got - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()


BATCH, IDLE_S = 10, 0.002


def protocol_median(fn, samples, warmup, scrub=None):
    """The table's protocol: warmup runs, then samples runs each between
    two events, after a write of scrub (None: no flush), in batches of
    BATCH with the GPU idle IDLE_S between batches (power-bound GEMMs run
    slower without it: docs/architecture.md); the median in µs. The peer
    scripts (bench/peerlib.py) time by it too."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(samples)]
    for i, (a, b) in enumerate(evs):
        if scrub is not None:
            scrub.fill_(i & 255)
        a.record()
        fn()
        b.record()
        if (i + 1) % BATCH == 0:
            torch.cuda.synchronize()
            time.sleep(IDLE_S)
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in evs)


class Timer:
    """protocol_median by a table's protocol: its warm-up runs, and a write
    of twice the L2 before each sample when the table's L2 is flushed."""

    def __init__(self, protocol, samples, device):
        self.warmup, self.samples = protocol["warmup"], samples
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
        flushed = protocol["l2"] == "flushed"
        self.scrub = torch.empty(max(2 * l2, 128 << 20), dtype=torch.uint8, device=device) if flushed else None

    def __call__(self, fn):
        return protocol_median(fn, self.samples, self.warmup, self.scrub)


def host_us(fn, calls=50):
    """The host's µs per call of fn, calls enqueued back to back without
    waiting for the GPU (what a call adds to a host-bound training step);
    few enough calls that the launch queue does not fill and make the host
    wait for the GPU."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return us


def _cases(dev):
    """(kernel, dtype, shape at m, make) where make(m) returns the inputs
    and a function giving the reference outputs."""
    g = torch.Generator(device=dev).manual_seed(1)

    def rnd(*shape, dtype=torch.bfloat16, scale=1.0):
        return ((torch.rand(*shape, generator=g, device=dev) * 2 - 1) * scale).to(dtype)

    def silu(m):
        x, dy = rnd(m, 8960, scale=4), rnd(m, 8960)
        return {"dy": dy, "x": x}, lambda: {"dx": torch.ops.aten.silu_backward(dy, x)}

    def rmsnorm(m):
        x, dy, gamma = rnd(m, 1536, scale=2), rnd(m, 1536), rnd(1536) + 1
        rstd = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
        return ({"dy": dy, "x": x, "gamma": gamma, "rstd": rstd},
                lambda: dict(zip(("dx", "dgamma"), gt.rms_norm_backward(dy, x, gamma, rstd))))

    def gemm(n, k, grad):
        def make(m):
            dy = rnd(m, n)
            if grad == "dx":
                w = rnd(n, k, scale=0.05)
                return {"dy": dy, "w": w}, lambda: {"dx": dy @ w}
            x = rnd(m, k)
            return {"dy": dy, "x": x}, lambda: {"dw": dy.t() @ x}
        return make

    def nf4(n, k, dq):
        w = gt.NF4Weight.quantize(rnd(n, k, dtype=torch.float32, scale=0.05), 64, dq)

        def make(m):
            dy = rnd(m, n)
            return dict(w.buffers(), dy=dy), lambda: {"dx": dy @ w.dequantize(torch.bfloat16)}
        return make

    return [
        ("silu_bwd", "bf16", "m={m},n=8960", silu),
        ("rmsnorm_bwd", "bf16", "m={m},n=1536", rmsnorm),
        ("gemm_bwd", "bf16", "m={m},n=1536,k=1536,grad=dx", gemm(1536, 1536, "dx")),
        ("gemm_bwd", "bf16", "m={m},n=8960,k=1536,grad=dw", gemm(8960, 1536, "dw")),
        ("nf4_gemm_bwd", "bf16", "m={m},n=1536,k=8960", nf4(1536, 8960, False)),
        ("nf4_gemm_bwd", "bf16", "m={m},n=8960,k=1536,scales=dq", nf4(8960, 1536, True)),
    ]


def run(tables, other_m, samples):
    dev = torch.device("cuda", torch.cuda.current_device())
    tuned = gt.Tuned(tables)
    gpu = tuned.gpu(dev)
    print(f"gradtune.selftest on {gpu.name} (cc {gpu.cc}), {torch.cuda.get_device_properties(dev).multi_processor_count} SMs, "
          f"torch {torch.__version__}, tables {tables}")
    failed = launched = 0
    for kernel, dt, pattern, make in _cases(dev):
        for m in (2048, other_m):
            shape = pattern.format(m=m)
            try:
                ok = _case(tuned, dev, kernel, dt, shape, make, m, samples)
            except NoEntry as e:
                print(f"{kernel} {dt} {shape}: no entry, torch path ({type(e).__name__}: {e})")
                continue
            except Exception:
                print(f"{kernel} {dt} {shape}: FAILED")
                traceback.print_exc()
                ok = False
            launched += 1
            failed += not ok
    failed += _functions(tuned, dev)
    print(f"{launched} entries launched, {failed} failed")
    return 1 if failed else 0


def _case(tuned, dev, kernel, dt, shape, make, m, samples):
    r = tuned.runner(kernel, dt, shape, dev)
    e = r.match.entry
    inputs, reference = make(m)
    outs = {b.name: torch.full((b.elems,), float("nan"), dtype=gt.TORCH_DTYPES[b.dtype], device=dev)
            for b in r.plan.buffers if b.role == "output"}
    got = r.run(dict(inputs, **outs))
    torch.cuda.synchronize()
    ref = reference()
    ok, errs = True, []
    for name, want in ref.items():
        err = rel_err(got[name].view(want.shape), want)
        bound = BOUNDS[want.dtype]
        ok &= err <= bound
        errs.append(f"{name} {err:.2e}{'' if err <= bound else ' > ' + format(bound, '.2e')}")
    timer = Timer(r.match.table.protocol, samples, dev)
    t_tuned = timer(lambda: r.run(dict(inputs, **outs)))
    t_torch = timer(reference)
    h_tuned = host_us(lambda: tuned.run(kernel, dt, shape, dict(inputs, **outs), dev))
    h_torch = host_us(reference)
    exact = f", table {e.median_us:.1f} µs" if r.match.rule == "exact" else ""
    print(f"{kernel} {dt} {shape}: {r.match.rule} of {e.shape} ({e.params}); {'ok' if ok else 'WRONG'}: {', '.join(errs)}; "
          f"tuned {t_tuned:.1f} µs{exact}, torch {t_torch:.1f} µs; host µs a call: tuned {h_tuned:.1f}, torch {h_torch:.1f}")
    return ok


def _functions(tuned, dev):
    """The autograd Functions against plain torch autograd at m=2048."""
    torch.manual_seed(2)
    failed = 0
    m, bf = 2048, torch.bfloat16

    def grads(fn, *xs):
        xs = [x.detach().clone().requires_grad_(True) for x in xs]
        y = fn(*xs)
        y.backward(dy_of(y))
        return [x.grad for x in xs]

    dys = {}

    def dy_of(y):
        key = tuple(y.shape)
        if key not in dys:
            dys[key] = torch.randn(*y.shape, device=dev).to(y.dtype)
        return dys[key]

    x = torch.randn(m, 8960, device=dev).to(bf)
    w = (torch.rand(1536, device=dev) + 0.5).to(bf)
    xn = torch.randn(m, 1536, device=dev).to(bf)
    wl = (torch.randn(1536, 1536, device=dev) * 0.03).to(bf)
    nf4 = gt.NF4Weight.quantize(torch.randn(8960, 1536, device=dev) * 0.03, 64, True)
    a = (torch.randn(16, 1536, device=dev) * 0.05).to(bf)
    b = (torch.randn(8960, 16, device=dev) * 0.05).to(bf)

    def ref_rms(x, w):
        x32 = x.float()
        return w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)

    def ref_nf4(x, a, b):
        return x @ nf4.dequantize(bf).t() + 2.0 * ((x @ a.t()) @ b.t())

    cases = [
        ("silu", lambda x: gt.silu(x, tuned), torch.nn.functional.silu, (x,)),
        ("gelu_tanh", lambda x: gt.gelu_tanh(x, tuned), lambda x: torch.nn.functional.gelu(x, approximate="tanh"), (x,)),
        ("relu", lambda x: gt.relu(x, tuned), torch.relu, (x,)),
        ("rms_norm", lambda x, w: gt.rms_norm(x, w, 1e-6, tuned), ref_rms, (xn, w)),
        ("linear", lambda x, w: gt.linear(x, w, None, tuned), lambda x, w: x @ w.t(), (xn, wl)),
        ("nf4_lora_linear", lambda x, a, b: gt.nf4_lora_linear(x, nf4, a, b, 2.0, None, tuned), ref_nf4, (xn, a, b)),
    ]
    for name, ours, theirs, xs in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                g1 = grads(ours, *xs)
            except Exception:
                print(f"function {name}: FAILED")
                traceback.print_exc()
                failed += 1
                continue
        g2 = grads(theirs, *xs)
        # The weight of rms_norm is bf16 and its gradient a sum over 2048
        # rows: compared at bf16's bound like the rest.
        errs = [rel_err(p, q) for p, q in zip(g1, g2)]
        bad = any(e > 2 ** -6 for e in errs)
        failed += bad
        fell = "; fell back: " + "; ".join(str(w.message)[:120] for w in caught) if caught else ""
        print(f"function {name}: {'WRONG' if bad else 'ok'}: gradient errors {', '.join(f'{e:.2e}' for e in errs)} "
              f"(bound 2^-6 of the largest){fell}")
    return failed
