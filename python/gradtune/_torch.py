"""gradtune.torch's implementation (see gradtune/torch.py for the names).

Rules:
  - An entry is looked up for the tensors' device: its name and compute
    capability (torch.cuda.get_device_name, get_device_capability), by
    the table's rules (gradtune.table), and resolved at the asked shape on
    its multiprocessor count. Lookups, plans, loaded modules and functions
    are cached per device, kernel, dtype and shape, failures included; a
    plan's bindings (tensor maps, packed parameters) per buffer addresses.
  - Launches go to torch's current stream of the device
    (torch.cuda.current_stream().cuda_stream), in torch's primary context.
  - Every buffer a launch passes is a tensor: inputs are given; outputs and
    accumulate buffers may be given (an accumulate buffer is zeroed first)
    or are allocated; scratch is allocated per call; state is allocated
    once per device and stream, zeroed, and every run leaves it zero. A
    buffer no launch passes (nf4_gemm_bwd's w_bf16, read only by the
    tuner's cuBLAS baseline) may be left out.
  - A given tensor must be on the device, of the buffer's dtype, with the
    buffer's element count, contiguous and 16-byte aligned; anything else
    raises BadTensor naming the buffer. The Functions make their tensors
    contiguous before they ask.
  - No entry (UnknownGPU, UnknownKernel, NoConfig), no PTX, or a driver
    that cannot load it: the Functions take the torch path and warn once
    per kernel and reason (the exception's class). GRADTUNE_DISABLE=1
    takes the torch path everywhere, silently.
  - The default tables are $GRADTUNE_CONFIGS, else the configs/ directory
    of the checkout this package is in.
"""

import os
import struct
import threading
import warnings

import torch

from . import contract, launch, table
from .driver import CUDADriver, CUDAError, NoDriver
from .errors import NoEntry, NoPTX

TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64, "u8": torch.uint8, "i32": torch.int32, "i64": torch.int64}
_NAMES = {v: k for k, v in TORCH_DTYPES.items()}
_FALLBACK = (NoEntry, NoPTX, NoDriver, CUDAError)


class BadTensor(ValueError):
    """A tensor that does not fit its buffer."""


def _configs_dir():
    env = os.environ.get("GRADTUNE_CONFIGS")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    checkout = os.path.join(os.path.dirname(os.path.dirname(here)), "configs")
    if os.path.isdir(checkout):
        return checkout
    raise FileNotFoundError("gradtune.torch: no tables: set GRADTUNE_CONFIGS to a directory of tables "
                            f"(gradtune's configs/ or configs/<gpu>/), or pass Tuned(path); {checkout} does not exist")


class Runner:
    """One entry resolved at one shape on one device, its functions loaded."""

    def __init__(self, tuned, device, kernel, dtype, shape):
        self.kernel, self.device = kernel, device
        drv = tuned.driver(device)
        self.match = tuned.tables.lookup(tuned.gpu(device), kernel, dtype, shape)
        sms = torch.cuda.get_device_properties(device).multi_processor_count
        self.plan = self.match.plan(sms)
        self.referenced = self.plan.referenced()
        module = drv.load_module(tuned.tables.ptx(self.match))
        self.funcs = launch.functions(drv, module, self.plan)
        self.drv = drv
        self._state = {}
        self._names = frozenset(b.name for b in self.plan.buffers)
        self._bindings = launch.Bindings(drv, self.plan, self.funcs)

    def state(self, stream):
        """The state buffers of stream: allocated once, zeroed."""
        if stream not in self._state:
            self._state[stream] = {b.name: _alloc(b, self.device, zero=True) for b in self.plan.buffers if b.role == "state"}
        return self._state[stream]

    def run(self, tensors):
        """Launches on tensors (buffer name -> tensor); returns the output,
        accumulate and inout buffers by name (an inout tensor, which the
        caller must give, is overwritten with the result)."""
        stream = torch.cuda.current_stream(self.device)
        handle = stream.cuda_stream
        unknown = tensors.keys() - self._names
        if unknown:
            raise BadTensor(f"{self.kernel}: no buffers {sorted(unknown)} (buffers: {[b.name for b in self.plan.buffers]})")
        bufs, outs = {}, {}
        for b in self.plan.buffers:
            t = tensors.get(b.name)
            if b.role == "state":
                t = self.state(handle)[b.name]
            elif t is not None:
                self._check(b, t)
                if b.role == "accumulate":
                    t.zero_()
            elif b.role == "inout":
                raise BadTensor(f"{self.kernel}: inout buffer {b.name} ({b.dtype}, {b.elems} elements) is not given: "
                                "the launches read it and write the result over it")
            elif b.role == "input":
                if b.name in self.referenced:
                    raise BadTensor(f"{self.kernel}: input {b.name} ({b.dtype}, {b.elems} elements) is not given")
                continue
            else:
                t = _alloc(b, self.device, zero=b.role == "accumulate")
            if b.role in ("output", "accumulate", "inout"):
                outs[b.name] = t
            bufs[b.name] = (t.data_ptr(), t.numel() * t.element_size())
        self.drv.ensure_context()
        self._bindings.bind(bufs).run(self.drv, handle)
        return outs

    def _check(self, b, t):
        where = f"{self.kernel}: buffer {b.name}"
        if t.device != self.device:
            raise BadTensor(f"{where}: tensor on {t.device}, want {self.device}")
        if t.dtype != TORCH_DTYPES[b.dtype]:
            raise BadTensor(f"{where}: dtype {t.dtype}, want {TORCH_DTYPES[b.dtype]} ({b.dtype})")
        if t.numel() != b.elems:
            raise BadTensor(f"{where}: {t.numel()} elements (shape {tuple(t.shape)}), want {b.elems}")
        if not t.is_contiguous():
            raise BadTensor(f"{where}: not contiguous (strides {t.stride()})")
        if t.data_ptr() % 16:
            raise BadTensor(f"{where}: address {t.data_ptr():#x} is not 16-byte aligned")


def _alloc(b, device, zero):
    n = max(b.elems, -(-16 // contract.dtype_size(b.dtype)))
    t = (torch.zeros if zero else torch.empty)(n, dtype=TORCH_DTYPES[b.dtype], device=device)
    return t[: b.elems] if b.elems else t


class Tuned:
    """Tables, a driver per device, and the runners' cache."""

    def __init__(self, tables=None):
        if tables is None:
            tables = _configs_dir()
        self.tables = tables if isinstance(tables, table.Set) else table.load(tables)
        self._drivers, self._runners, self._warned = {}, {}, set()
        self._lock = threading.Lock()

    def gpu(self, device):
        major, minor = torch.cuda.get_device_capability(device)
        return table.GPU(torch.cuda.get_device_name(device), f"{major}.{minor}")

    def driver(self, device):
        with self._lock:
            if device.index not in self._drivers:
                torch.cuda.init()
                self._drivers[device.index] = CUDADriver(device.index)
            return self._drivers[device.index]

    def runner(self, kernel, dtype, shape, device):
        """The cached Runner, or raises what stopped it (NoEntry, NoPTX,
        NoDriver, CUDAError)."""
        device = torch.device(device)
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        key = (device.index, kernel, dtype, str(shape))
        r = self._runners.get(key)
        if r is None:
            try:
                r = Runner(self, device, kernel, dtype, table.parse_shape(shape) if isinstance(shape, str) else shape)
            except _FALLBACK as e:
                r = e
            self._runners[key] = r
        if isinstance(r, Exception):
            raise r
        return r

    def run(self, kernel, dtype, shape, tensors, device=None):
        """Launches the entry for kernel, dtype and shape on tensors (see
        Runner.run); device defaults to the first tensor's."""
        if device is None:
            device = next(iter(tensors.values())).device
        return self.runner(kernel, dtype, shape, device).run(tensors)

    def try_run(self, kernel, dtype, shape, tensors):
        """run, or None after warning once per kernel and reason when no
        entry can be launched (the caller takes the torch path)."""
        if os.environ.get("GRADTUNE_DISABLE") == "1":
            return None
        try:
            return self.run(kernel, dtype, shape, tensors)
        except _FALLBACK as e:
            key = (kernel, type(e).__name__)
            if key not in self._warned:
                self._warned.add(key)
                warnings.warn(f"gradtune: {kernel}: {e}; taking the torch path (said once per kernel and reason)",
                              RuntimeWarning, stacklevel=3)
            return None


_default = None


def default():
    """The Tuned of the default tables, made on first use."""
    global _default
    if _default is None:
        _default = Tuned()
    return _default


def set_default(tuned):
    """Makes tuned (a Tuned, a path or a table.Set) the default."""
    global _default
    _default = tuned if isinstance(tuned, Tuned) else Tuned(tuned)


def _tuned(t):
    return t if t is not None else default()


def _rows(x):
    """x as [m × n] over its last dim, and the shape text."""
    n = x.shape[-1]
    m = x.numel() // n
    return m, n


# ---- activations

_ACTIVATIONS = {
    "relu": ("relu_bwd", torch.relu, lambda dy, x: torch.ops.aten.threshold_backward(dy, x, 0)),
    "gelu_tanh": ("gelu_bwd", lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
                  lambda dy, x: torch.ops.aten.gelu_backward(dy, x, approximate="tanh")),
    "silu": ("silu_bwd", torch.nn.functional.silu, lambda dy, x: torch.ops.aten.silu_backward(dy, x)),
}


class _Activation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, name, tuned):
        ctx.name, ctx.tuned = name, tuned
        ctx.save_for_backward(x)
        return _ACTIVATIONS[name][1](x)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        kernel, _, reference = _ACTIVATIONS[ctx.name]
        dy = dy.contiguous()
        xc = x.contiguous()
        if x.dtype in _NAMES and x.numel() and x.is_cuda:
            m, n = _rows(xc)
            out = _tuned(ctx.tuned).try_run(kernel, _NAMES[x.dtype], f"m={m},n={n}", {"dy": dy, "x": xc})
            if out is not None:
                return out["dx"].view_as(x), None, None
        return reference(dy, x), None, None


def relu(x, tuned=None):
    """relu(x); the backward is relu_bwd's entry."""
    return _Activation.apply(x, "relu", tuned)


def gelu_tanh(x, tuned=None):
    """gelu(x, approximate="tanh"); the backward is gelu_bwd's entry."""
    return _Activation.apply(x, "gelu_tanh", tuned)


def silu(x, tuned=None):
    """silu(x); the backward is silu_bwd's entry."""
    return _Activation.apply(x, "silu", tuned)


# ---- SwiGLU and RoPE


def _swiglu_reference(dy, gate, up):
    """The torch path: the ops autograd runs for silu(gate)·up when gate
    and up share a dtype (swiglu_bwd's case), in that dtype;
    silu_backward computes in f32 per element."""
    return torch.ops.aten.silu_backward(dy * up, gate), dy * torch.nn.functional.silu(gate)


class _SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up, tuned):
        ctx.tuned = tuned
        ctx.save_for_backward(gate, up)
        return torch.nn.functional.silu(gate) * up

    @staticmethod
    def backward(ctx, dy):
        gate, up = ctx.saved_tensors
        dy, g, u = dy.contiguous(), gate.contiguous(), up.contiguous()
        if gate.dtype in _NAMES and gate.numel() and gate.is_cuda and up.dtype == gate.dtype:
            m, n = _rows(g)
            out = _tuned(ctx.tuned).try_run("swiglu_bwd", _NAMES[gate.dtype], f"m={m},n={n}", {"dy": dy, "gate": g, "up": u})
            if out is not None:
                return out["dgate"].view_as(gate), out["dup"].view_as(up), None
        dgate, dup = _swiglu_reference(dy, gate, up)
        return dgate, dup, None


def swiglu(gate, up, tuned=None):
    """silu(gate) * up (the gated MLP); the backward is swiglu_bwd's entry."""
    return _SwiGLU.apply(gate, up, tuned)


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def _rope_reference(dy, cos, sin):
    """The gradient of x*cos + rotate_half(x)*sin: dy*cos + rotate_half^T(dy*sin)."""
    h = dy.shape[-1] // 2
    t = dy * sin
    return dy * cos + torch.cat((t[..., h:], -t[..., :h]), dim=-1)


class _RoPE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, cos, sin, tuned):
        ctx.tuned = tuned
        ctx.save_for_backward(cos, sin)
        c, s = cos[:, None, :], sin[:, None, :]
        return q * c + _rotate_half(q) * s, k * c + _rotate_half(k) * s

    @staticmethod
    def backward(ctx, dq_rot, dk_rot):
        cos, sin = ctx.saved_tensors
        dq_rot, dk_rot = dq_rot.contiguous(), dk_rot.contiguous()
        (t, hq, d), hk = dq_rot.shape, dk_rot.shape[1]
        if dq_rot.dtype in _NAMES and dq_rot.is_cuda and dq_rot.numel() and cos.dtype == dq_rot.dtype:
            out = _tuned(ctx.tuned).try_run("rope_bwd", _NAMES[dq_rot.dtype], f"t={t},hq={hq},hk={hk},d={d}",
                                            {"dy_q": dq_rot, "dy_k": dk_rot, "cos": cos.contiguous(), "sin": sin.contiguous()})
            if out is not None:
                return out["dq"].view_as(dq_rot), out["dk"].view_as(dk_rot), None, None, None
        c, s = cos[:, None, :], sin[:, None, :]
        return _rope_reference(dq_rot, c, s), _rope_reference(dk_rot, c, s), None, None, None


def rope(q, k, cos, sin, tuned=None):
    """Rotary embeddings in Hugging Face's rotate-half layout on token-major
    q [T, Hq, D] and k [T, Hk, D] with cos and sin [T, D] (the model's tables
    for the T positions): q*cos + rotate_half(q)*sin and the same for k.
    The backward is rope_bwd's entry (dq and dk in one launch)."""
    if q.dim() != 3 or k.dim() != 3 or cos.shape != (q.shape[0], q.shape[2]) or sin.shape != cos.shape:
        raise BadTensor(f"rope wants q [T, Hq, D], k [T, Hk, D], cos and sin [T, D]; got {tuple(q.shape)}, "
                        f"{tuple(k.shape)}, {tuple(cos.shape)}, {tuple(sin.shape)}")
    return _RoPE.apply(q, k, cos, sin, tuned)


# ---- RMSNorm


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps, tuned):
        xc = x.contiguous()
        m, n = _rows(xc)
        x32 = xc.view(m, n).float()
        rstd = torch.rsqrt(x32.pow(2).mean(-1) + eps)
        y = weight * (x32 * rstd[:, None]).to(x.dtype)
        ctx.tuned = tuned
        ctx.save_for_backward(xc, weight, rstd)
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x, weight, rstd = ctx.saved_tensors
        m, n = _rows(x)
        dy = dy.contiguous()
        gamma = weight.to(x.dtype).contiguous()
        out = None
        if x.dtype in _NAMES and x.is_cuda:
            out = _tuned(ctx.tuned).try_run("rmsnorm_bwd", _NAMES[x.dtype], f"m={m},n={n}",
                                            {"dy": dy, "x": x, "gamma": gamma, "rstd": rstd})
        if out is not None:
            dx, dgamma = out["dx"], out["dgamma"]
        else:
            dx, dgamma = rms_norm_backward(dy.view(m, n), x.view(m, n), gamma, rstd)
        dw = dgamma.to(weight.dtype) if ctx.needs_input_grad[1] else None
        return dx.view(x.shape), dw, None, None


def rms_norm_backward(dy, x, gamma, rstd):
    """The torch path of rmsnorm_bwd, in f32: dx in x's dtype, dγ in f32."""
    xh = x.float() * rstd[:, None]
    g = dy.float() * gamma.float()
    dx = rstd[:, None] * (g - xh * (g * xh).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dy.float() * xh).sum(0)


def rms_norm(x, weight, eps=1e-6, tuned=None):
    """weight · (x · rstd) with rstd = 1/sqrt(mean(x²) + eps) per row over
    the last dim, x̂ rounded to x's dtype before the product (as Qwen2 and
    Llama compute it). The backward is rmsnorm_bwd's entry, from the
    forward's f32 rstd: the exact-arithmetic gradient of x̂·γ."""
    return _RMSNorm.apply(x, weight, eps, tuned)


# ---- dense linear


def _gemm(tuned, grad, dy, other, m, n, k):
    """gemm_bwd: grad=dx is dy[m×n]·w[n×k]; grad=dw is dyᵀ·x[m×k]."""
    name = "w" if grad == "dx" else "x"
    dt = _NAMES.get(dy.dtype)
    out = None
    if dt in ("bf16", "f16") and dy.is_cuda:
        out = _tuned(tuned).try_run("gemm_bwd", dt, f"m={m},n={n},k={k},grad={grad}", {"dy": dy, name: other})
    if out is not None:
        return out[grad].view(m, k) if grad == "dx" else out[grad].view(n, k)
    return dy @ other if grad == "dx" else dy.t() @ other


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, tuned):
        ctx.tuned, ctx.has_bias = tuned, b is not None
        ctx.save_for_backward(x, w)
        return torch.nn.functional.linear(x, w, b)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        n, k = w.shape
        m = x.numel() // k
        dy2 = dy.contiguous().view(m, n)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = _gemm(ctx.tuned, "dx", dy2, w.contiguous(), m, n, k).view(x.shape)
        if ctx.needs_input_grad[1]:
            dw = _gemm(ctx.tuned, "dw", dy2, x.contiguous().view(m, k), m, n, k)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = dy2.sum(0)
        return dx, dw, db, None


def linear(x, weight, bias=None, tuned=None):
    """x·Wᵀ (+ b); the backward is gemm_bwd's entries (grad=dx, grad=dw)."""
    return _Linear.apply(x, weight, bias, tuned)


# ---- the LM head and the loss

IGNORE_INDEX = -100


def _lce_reference(x, w, labels, eps, z):
    """Mean cross-entropy of x·wᵀ (f32 logits) with label smoothing eps and
    z-loss z·lse² per counted row, over the rows whose label is not -100."""
    logits = (x @ w.t()).float()
    ce = torch.nn.functional.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX, label_smoothing=eps, reduction="none")
    valid = labels != IGNORE_INDEX
    if z:
        ce = ce + z * torch.logsumexp(logits, dim=-1).square() * valid
    return ce.sum() / valid.sum()


def _smooth_text(eps):
    """eps as the shape's smooth= dim (thousandths), or None when it has more
    digits than that."""
    m = round(eps * 1000)
    if abs(m - eps * 1000) > 1e-9 or not 0 <= m < 1000:
        return None
    return f"{m // 1000}.{m % 1000:03d}".rstrip("0").rstrip(".")


def _lce_shape(x, w, labels, eps, z):
    """The linear_cross_entropy_bwd shape of the call, or None where the
    family does not take it (the torch path runs)."""
    smooth = _smooth_text(eps)
    if (x.dtype not in (torch.bfloat16, torch.float16) or w.dtype != x.dtype or not x.is_cuda
            or labels.dtype not in (torch.int32, torch.int64) or smooth is None or x.shape[-1] % 64):
        return None
    t, h = x.shape
    spec = f"t={t},h={h},v={w.shape[0]}"
    if labels.dtype == torch.int64:
        spec += ",labels=i64"
    if eps:
        spec += f",smooth={smooth}"
    if z:
        spec += ",zloss=1"
    if w.requires_grad:
        spec += ",dw=1"
    return spec


class _LinearCrossEntropy(torch.autograd.Function):
    """The gradients are computed in the forward (the fused kernel computes
    the loss and the gradients in one program, with dloss = 1); the
    backward scales them by the upstream gradient."""

    @staticmethod
    def forward(ctx, x, w, labels, eps, z, tuned):
        ctx.w_dtype = w.dtype
        spec = _lce_shape(x, w, labels, eps, z)
        out = None
        if spec is not None:
            n_valid = (labels != IGNORE_INDEX).sum().float().reshape(1)
            tensors = {"x": x.contiguous(), "w": w.contiguous(), "labels": labels.contiguous(),
                       "dloss": torch.ones(1, dtype=torch.float32, device=x.device), "n_valid": n_valid}
            if z:
                tensors["zloss_scale"] = torch.full((1,), float(z), dtype=torch.float32, device=x.device)
            out = _tuned(tuned).try_run("linear_cross_entropy_bwd", _NAMES[x.dtype], spec, tensors)
        if out is not None:
            dw = out["dw"].view(w.shape) if "dw" in out else None
            ctx.save_for_backward(out["dx"].view(x.shape), dw)
            return out["loss"].sum() / n_valid[0]
        with torch.enable_grad():
            xr = x.detach().requires_grad_(True)
            wr = w.detach().requires_grad_(w.requires_grad)
            loss = _lce_reference(xr, wr, labels, eps, z)
            grads = torch.autograd.grad(loss, [xr, wr] if w.requires_grad else [xr])
        ctx.save_for_backward(grads[0], grads[1] if w.requires_grad else None)
        return loss.detach()

    @staticmethod
    def backward(ctx, g):
        dx, dw = ctx.saved_tensors
        return dx * g.to(dx.dtype), (dw * g).to(ctx.w_dtype) if dw is not None else None, None, None, None, None


def linear_cross_entropy(x, weight, labels, label_smoothing=0.0, z_loss=0.0, tuned=None):
    """Mean cross-entropy of x·weightᵀ over the labels that are not -100
    (x [t×h], weight [v×h], labels [t] int32 or int64), with label
    smoothing and z-loss z_loss·lse² per counted row; the logits are never
    stored: linear_cross_entropy_bwd's entry computes the loss, dx and,
    where weight requires grad, dW (f32, returned in weight's dtype)."""
    return _LinearCrossEntropy.apply(x, weight, labels, float(label_smoothing), float(z_loss), tuned)


# ---- NF4

# bitsandbytes' NF4 codebook (nf4_dequantization_lut), f32, ascending.
NF4_CODEBOOK = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)
NESTED_BLOCK = 256


def _f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def dynamic_map():
    """bitsandbytes' signed dynamic 8-bit map (create_dynamic_map(signed=True)),
    in f32, sorted, as package nf4's DynamicMap computes it."""
    data = []
    for i in range(7):
        n = (1 << i) + 1
        step = _f32(_f32(0.9) / (n - 1))
        scale = _f32(10.0 ** (i - 6))
        for j in range(n - 1):
            a = _f32(_f32(0.1) + _f32(j * step))
            b = 1.0 if j + 1 == n - 1 else _f32(_f32(0.1) + _f32((j + 1) * step))
            mean = _f32(_f32(a + b) / 2)
            data += [_f32(scale * mean), -_f32(scale * mean)]
    return sorted(data + [0.0, 1.0])


def _words(n):
    return (n + 3) & ~3


class NF4Weight:
    """An [n×k] weight in NF4 as bitsandbytes stores it: w4, the packed codes
    ([n·k/2] u8, element 2j in the high nibble of byte j, row-major), and
    per block of `block` elements along k either absmax (f32) or, double
    quantized, absmax_q (u8 codes), code2 (f32[256]), absmax2 (f32 per 256
    blocks) and dq_offset (f32[1]): absmax(b) = code2[absmax_q[b]] ·
    absmax2[b/256] + offset. u8 buffers are padded to whole 32-bit words,
    as the kernels read them."""

    def __init__(self, n, k, w4, block=64, absmax=None, absmax_q=None, code2=None, absmax2=None, offset=None):
        self.n, self.k, self.block = n, k, block
        self.nested = absmax is None
        self.w4 = _pad_u8(w4.reshape(-1), _words(n * k // 2))
        if self.nested:
            nb = n * k // block
            self.absmax_q = _pad_u8(absmax_q.reshape(-1), _words(nb))
            self.code2 = code2.reshape(-1).float().contiguous()
            self.absmax2 = absmax2.reshape(-1).float().contiguous()
            self.dq_offset = torch.as_tensor(offset, dtype=torch.float32, device=w4.device).reshape(1).contiguous()
        else:
            self.absmax = absmax.reshape(-1).float().contiguous()

    @property
    def device(self):
        return self.w4.device

    @classmethod
    def quantize(cls, w, block=64, double_quant=True):
        """NF4 of w [n×k] as bitsandbytes quantizes it (absmax per block,
        the nearest code, ties to the lower; the scales double quantized
        with the dynamic map)."""
        n, k = w.shape
        flat = w.detach().float().reshape(-1, block)
        absmax = flat.abs().amax(1)
        inv = torch.where(absmax > 0, 1 / absmax, torch.zeros_like(absmax))
        book = torch.tensor(NF4_CODEBOOK, dtype=torch.float64)
        thresholds = ((book[1:] + book[:-1]) / 2).to(torch.float32).to(w.device)
        codes = torch.searchsorted(thresholds, (flat * inv[:, None]).contiguous())
        codes = torch.where(absmax[:, None] > 0, codes, torch.full_like(codes, 7)).reshape(-1, 2)
        w4 = ((codes[:, 0] << 4) | codes[:, 1]).to(torch.uint8)
        if not double_quant:
            return cls(n, k, w4, block, absmax=absmax)
        code2 = torch.tensor(dynamic_map(), dtype=torch.float32, device=w.device)
        offset = absmax.mean()
        centred = absmax - offset
        nb = absmax.numel()
        groups = -(-nb // NESTED_BLOCK)
        padded = torch.zeros(groups * NESTED_BLOCK, device=w.device)
        padded[:nb] = centred.abs()
        absmax2 = padded.view(groups, NESTED_BLOCK).amax(1)
        scale = absmax2.repeat_interleave(NESTED_BLOCK)[:nb]
        x = torch.where(scale > 0, centred / scale, torch.zeros_like(centred))
        hi = torch.searchsorted(code2, x.contiguous()).clamp(max=255)
        lo = (hi - 1).clamp(min=0)
        take_lo = (x - code2[lo]).abs() <= (code2[hi] - x).abs()
        q = torch.where(take_lo, lo, hi).to(torch.uint8)
        return cls(n, k, w4, block, absmax_q=q, code2=code2, absmax2=absmax2, offset=offset)

    @classmethod
    def from_bnb(cls, param):
        """The weight of a bitsandbytes Params4bit (quant_type nf4), sharing
        its storage where the layouts agree."""
        qs = param.quant_state
        if getattr(qs, "quant_type", "nf4") != "nf4":
            raise ValueError(f"quant_type {qs.quant_type}: gradtune's kernels take nf4")
        n, k = qs.shape
        if not qs.nested:
            return cls(n, k, param.data, qs.blocksize, absmax=qs.absmax)
        return cls(n, k, param.data, qs.blocksize, absmax_q=qs.absmax, code2=qs.state2.code, absmax2=qs.state2.absmax,
                   offset=qs.offset)

    def scales(self):
        """The f32 scale of every block, as bitsandbytes dequantizes them."""
        if not self.nested:
            return self.absmax
        nb = self.n * self.k // self.block
        q = self.absmax_q[:nb].long()
        return self.code2[q] * self.absmax2.repeat_interleave(NESTED_BLOCK)[:nb] + self.dq_offset

    def dequantize(self, dtype=torch.bfloat16):
        """W [n×k] as bitsandbytes dequantizes it: fl32(code·absmax), rounded
        once to dtype (the torch path)."""
        packed = self.w4[: self.n * self.k // 2]
        codes = torch.stack(((packed >> 4) & 15, packed & 15), 1).reshape(-1).long()
        vals = _codebook(packed.device)[codes].view(-1, self.block) * self.scales()[:, None]
        return vals.to(dtype).view(self.n, self.k)

    def buffers(self):
        """The kernels' buffers of the weight by name."""
        if not self.nested:
            return {"w4": self.w4, "absmax": self.absmax}
        return {"w4": self.w4, "absmax_q": self.absmax_q, "code2": self.code2, "absmax2": self.absmax2, "dq_offset": self.dq_offset}

    def shape_text(self, **sizes):
        """The shape of an entry over this weight: sizes, then block (when
        not 64) and scales=dq when double quantized."""
        parts = [f"{k}={v}" for k, v in sizes.items()]
        if self.block != 64:
            parts.append(f"block={self.block}")
        if self.nested:
            parts.append("scales=dq")
        return ",".join(parts)

    def dequantize_tuned(self, dtype=torch.bfloat16, tuned=None):
        """W in dtype through nf4_dequant's entry, else the torch path."""
        if dtype in (torch.bfloat16, torch.float16) and self.w4.is_cuda:
            out = _tuned(tuned).try_run("nf4_dequant", _NAMES[dtype], self.shape_text(n=self.n, k=self.k), self.buffers())
            if out is not None:
                return out["w"].view(self.n, self.k)
        return self.dequantize(dtype)


_CODEBOOKS = {}


def _codebook(device):
    """NF4_CODEBOOK in f32 on device, made once per device: a copy from the
    host on every call would wait for it, which a CUDA graph cannot
    capture."""
    book = _CODEBOOKS.get(device)
    if book is None:
        book = _CODEBOOKS[device] = torch.tensor(NF4_CODEBOOK, dtype=torch.float32, device=device)
    return book


def _pad_u8(t, n):
    t = t.contiguous()
    if t.dtype != torch.uint8:
        raise BadTensor(f"NF4 codes are uint8, not {t.dtype}")
    if t.numel() == n:
        return t
    out = torch.zeros(n, dtype=torch.uint8, device=t.device)
    out[: t.numel()] = t
    return out


def nf4_gemm_dx(dy, weight, tuned=None):
    """dX [m×k] = dY [m×n] · dequant(W): nf4_gemm_bwd's entry, else the torch
    path (dequantize, then multiply)."""
    m = dy.shape[0]
    if dy.dtype in (torch.bfloat16, torch.float16) and dy.is_cuda:
        tensors = dict(weight.buffers(), dy=dy.contiguous())
        out = _tuned(tuned).try_run("nf4_gemm_bwd", _NAMES[dy.dtype], weight.shape_text(m=m, n=weight.n, k=weight.k), tensors)
        if out is not None:
            return out["dx"].view(m, weight.k)
    return dy @ weight.dequantize(dy.dtype)


class _NF4LoRA(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, a, b, bias, weight, scaling, tuned):
        k = weight.k
        x2 = x.contiguous().view(-1, k)
        w = weight.dequantize_tuned(x.dtype, tuned)
        h = x2 @ a.t()
        y = x2 @ w.t() + scaling * (h @ b.t())
        if bias is not None:
            y = y + bias
        ctx.weight, ctx.scaling, ctx.tuned, ctx.has_bias = weight, scaling, tuned, bias is not None
        ctx.save_for_backward(x2, h, a, b)
        return y.view(*x.shape[:-1], weight.n)

    @staticmethod
    def backward(ctx, dy):
        x2, h, a, b = ctx.saved_tensors
        w, s = ctx.weight, ctx.scaling
        dy2 = dy.contiguous().view(-1, w.n)
        dh = s * (dy2 @ b)
        dx = nf4_gemm_dx(dy2, w, ctx.tuned) + dh @ a
        da = dh.t() @ x2
        db = s * (dy2.t() @ h)
        dbias = dy2.sum(0) if ctx.has_bias else None
        return dx.view(*dy.shape[:-1], w.k), da, db, dbias, None, None, None


def nf4_lora_linear(x, weight, lora_a, lora_b, scaling, bias=None, tuned=None):
    """x·Wᵀ + scaling·(x·Aᵀ)·Bᵀ (+ bias) with W an NF4Weight [n×k] (frozen),
    A [r×k] and B [n×r]. The forward dequantizes W through nf4_dequant's
    entry; the backward's dX·W comes from nf4_gemm_bwd's entry, reading
    the NF4 codes (W is not kept), and the adapter's dA, dB and its share
    of dX from torch."""
    return _NF4LoRA.apply(x, lora_a, lora_b, bias, weight, scaling, tuned)


class NF4LoRALinear(torch.nn.Module):
    """A frozen NF4 base weight with a LoRA adapter (PEFT's layout: lora_A
    [r×k], lora_B [n×r], scaling alpha/r)."""

    def __init__(self, weight, r=16, alpha=32, bias=None, dtype=torch.bfloat16, tuned=None):
        super().__init__()
        self.weight, self.scaling, self.tuned = weight, alpha / r, tuned
        dev = weight.device
        self.lora_A = torch.nn.Parameter(torch.empty(r, weight.k, dtype=dtype, device=dev))
        self.lora_B = torch.nn.Parameter(torch.zeros(weight.n, r, dtype=dtype, device=dev))
        torch.nn.init.kaiming_uniform_(self.lora_A, a=5 ** 0.5)
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().clone(), requires_grad=False)

    @classmethod
    def from_linear(cls, linear, r=16, alpha=32, block=64, double_quant=True, tuned=None):
        w = NF4Weight.quantize(linear.weight.detach(), block, double_quant)
        return cls(w, r, alpha, linear.bias, linear.weight.dtype, tuned)

    def forward(self, x):
        return nf4_lora_linear(x, self.weight, self.lora_A, self.lora_B, self.scaling, self.bias, self.tuned)
