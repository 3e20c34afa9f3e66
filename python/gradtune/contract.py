"""The launch contract (Go: package configs): a program's buffers and
launches as a table carries them, decoded from JSON, and resolve(), which
evaluates them at one shape into a Plan of plain numbers and checks
everything that needs no device.

A Buffer has a name, a dtype, an element count (an Expr) and a role:
input, output, accumulate (zeroed before every run), inout (filled by the
caller, overwritten with the result), scratch (workspace)
or state (zeroed once; every run leaves it zero). A Launch names its entry
and gives its grid (Exprs; with grid_per_sm > 0, grid[0] is capped at
grid_per_sm x the device's multiprocessors and rounded down to whole
clusters), block, cluster, dynamic shared memory (with the opt-in above
48 KiB), whether it is a programmatic dependent launch, and its arguments:
a buffer's address plus a byte offset, a scalar (u32 or u64), or a TMA
tensor map of a buffer with every field of cuTensorMapEncodeTiled. A tensor
map's offset (JSON "offset", an expression; absent is 0) is the bytes from
the buffer's start to the tensor's element (0, ..., 0): at least 0 and a
multiple of 16, and the map is encoded over the buffer's address plus it,
so a sub-tensor (rows j*C to j*C+C-1 of a weight) is a map of its own.

Resolve's checks, as configs.Resolve makes them, with the same messages:
buffer names unique with known roles; blocks of 1 to 1024 threads; clusters
of at most 16 CTAs and grids that are whole clusters; the first launch not
dependent; a launch whose when is 0 or less left out (the plan's first
launch is then not dependent either); every argument naming a known buffer, offsets and tensors inside
their buffers (a tensor map's from its offset to its last byte), tensor maps
the driver accepts, scalars that fit their type.
"""

from dataclasses import dataclass, field
from typing import List, Optional

from . import _go
from .errors import BadProgram, DecodeError
from .expr import Expr, ExprError, const, parse

ROLES = ("input", "output", "accumulate", "scratch", "state", "inout")
DEFAULT_SHARED_LIMIT = 48 << 10

_DTYPE_SIZES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "u8": 1, "i32": 4, "i64": 8}
_DTYPE_ALIASES = {
    "f32": "f32", "float32": "f32", "float": "f32", "fp32": "f32",
    "f16": "f16", "float16": "f16", "half": "f16", "fp16": "f16",
    "bf16": "bf16", "bfloat16": "bf16",
    "f64": "f64", "float64": "f64", "double": "f64", "fp64": "f64",
    "u8": "u8",
    "i32": "i32",
    "i64": "i64",
}


def parse_dtype(s):
    """A dtype's canonical name from any name dtype.Parse accepts."""
    name = _DTYPE_ALIASES.get(_go.trim_space(s).lower())
    if name is None:
        raise DecodeError(f'unknown dtype {_go_q(s)} (accepted: f32, f16, bf16, f64)')
    return name


def dtype_size(name):
    """Bytes per element of a canonical dtype name."""
    return _DTYPE_SIZES[name]


def _go_q(s):
    from .expr import _go_quote

    return _go_quote(s)


# ---- the program as a table carries it


@dataclass
class Buffer:
    name: str
    dtype: str
    elems: Expr
    role: str


@dataclass
class TensorMap:
    buffer: str
    dtype: str
    dims: List[Expr]
    strides: List[Expr]
    box: List[int]
    elem_strides: Optional[List[int]] = None
    swizzle: int = 0
    interleave: str = ""
    l2_promotion: int = 0
    oob_fill: str = ""
    # Bytes from the buffer's start to element (0, ..., 0); Expr() is 0.
    offset: Expr = field(default_factory=Expr)

    def resolve(self, env):
        """The map evaluated in env, defaults spelled out, and checked."""
        try:
            offset = self.offset.eval(env)
        except ExprError as err:
            raise BadProgram(f"offset: {err}") from None
        s = TensorMapSpec(
            buffer=self.buffer, dtype=self.dtype, dims=[], strides=[], box=list(self.box),
            elem_strides=list(self.elem_strides) if self.elem_strides is not None else [1] * len(self.dims),
            swizzle=self.swizzle, interleave=self.interleave or "none",
            l2_promotion=self.l2_promotion or 128, oob_fill=self.oob_fill or "zero", offset=offset)
        for i, e in enumerate(self.dims):
            s.dims.append(_eval_int(e, env, f"dims[{i}]"))
        for i, e in enumerate(self.strides):
            s.strides.append(_eval_int(e, env, f"strides[{i}]"))
        s.check()
        return s


@dataclass
class Arg:
    """One kernel parameter: kind "pointer" (buffer, offset), "tensor_map"
    (tensor_map) or "scalar" (value, type u32 or u64)."""

    kind: str
    buffer: str = ""
    offset: Expr = field(default_factory=Expr)
    tensor_map: Optional[TensorMap] = None
    type: str = ""
    value: Expr = field(default_factory=Expr)


@dataclass
class Launch:
    entry: str
    grid: List[Expr]
    block: List[int]
    cluster: List[int]  # [0, 0, 0] without clusters
    shared_bytes: int
    dependent: bool
    args: List[Arg]
    grid_per_sm: int = 0
    ctas_per_sm: int = 0
    # when, where set, makes the launch conditional: at a shape where it
    # evaluates to 0 or less the launch is left out of the plan.
    when: Optional[Expr] = None

    @property
    def opt_in(self):
        """Whether the function's maximum dynamic shared memory must be
        raised to shared_bytes first."""
        return self.shared_bytes > DEFAULT_SHARED_LIMIT

    @property
    def max_carveout(self):
        """Whether the function's preferred shared-memory carveout must be
        set to the largest first: the kernel was built for ctas_per_sm CTAs
        an SM."""
        return self.ctas_per_sm > 1


# ---- decoding, as the Go types' UnmarshalJSON do


def decode_expr(v):
    """An Expr from a JSON number or an expression's text; null is 0."""
    if v is None:
        return Expr()
    if isinstance(v, int) and not isinstance(v, bool) and _go.INT64_MIN <= v <= _go.INT64_MAX:
        return const(v)
    if isinstance(v, str):
        try:
            return parse(v)
        except ExprError as e:
            raise DecodeError(str(e)) from None
    raise DecodeError(f"an expression is a number or a string, not {_json_text(v)}")


def _json_text(v):
    import json

    return json.dumps(v, separators=(",", ":"), ensure_ascii=False) if not isinstance(v, float) else repr(v)


def decode_buffer(v):
    f = _go.fields(v, ("name", "dtype", "elems", "role"), "buffer")
    name = _go.as_str(f.get("name"), "buffer.name")
    try:
        dtype = parse_dtype(_go.as_str(f.get("dtype"), "buffer.dtype"))
        return Buffer(name, dtype, decode_expr(f.get("elems")), _go.as_str(f.get("role"), "buffer.role"))
    except DecodeError as e:
        raise DecodeError(f"buffer {name}: {e}") from None


_TENSOR_MAP_FIELDS = ("buffer", "offset", "dtype", "rank", "dims", "strides", "box", "element_strides", "interleave",
                      "swizzle", "l2_promotion", "oob_fill")


def decode_tensor_map(v):
    f = _go.fields(v, _TENSOR_MAP_FIELDS, "tensor map")
    buf = _go.as_str(f.get("buffer"), "tensor_map.buffer")
    try:
        dtype = parse_dtype(_go.as_str(f.get("dtype"), "tensor_map.dtype"))
    except DecodeError as e:
        raise DecodeError(f"tensor map of {buf}: {e}") from None
    rank = _go.as_int(f.get("rank"), "tensor_map.rank")
    dims = [decode_expr(x) for x in _go.as_list(f.get("dims"), "tensor_map.dims")]
    strides = [decode_expr(x) for x in _go.as_list(f.get("strides"), "tensor_map.strides")]
    box = [_go.as_int(x, "tensor_map.box") for x in _go.as_list(f.get("box"), "tensor_map.box")]
    elem = [_go.as_int(x, "tensor_map.element_strides") for x in _go.as_list(f.get("element_strides"), "tensor_map.element_strides")]
    if len(dims) != rank or len(strides) != rank - 1 or len(box) != rank or len(elem) != rank:
        raise DecodeError(
            f"tensor map of {buf}: rank {rank} with {len(dims)} dims, {len(strides)} strides, {len(box)} box extents "
            f"and {len(elem)} element strides (want rank, rank-1, rank and rank)")
    try:
        offset = decode_expr(f.get("offset"))  # absent or null: 0
    except DecodeError as e:
        raise DecodeError(f"tensor map of {buf}: offset: {e}") from None
    return TensorMap(buf, dtype, dims, strides, box, elem, _go.as_int(f.get("swizzle"), "tensor_map.swizzle"),
                     _go.as_str(f.get("interleave"), "tensor_map.interleave"),
                     _go.as_int(f.get("l2_promotion"), "tensor_map.l2_promotion"),
                     _go.as_str(f.get("oob_fill"), "tensor_map.oob_fill"), offset)


def decode_arg(v):
    f = _go.fields(v, ("kind", "buffer", "offset", "tensor_map", "type", "value"), "argument")
    kind = _go.as_str(f.get("kind"), "argument.kind")
    buf = _go.as_str(f.get("buffer"), "argument.buffer")
    typ = _go.as_str(f.get("type"), "argument.type")
    # Pointer fields: null is the same as absent.
    offset, tmap, value = f.get("offset"), f.get("tensor_map"), f.get("value")
    text = _json_text(v)
    if kind == "pointer":
        if buf == "" or offset is None or tmap is not None or value is not None or typ != "":
            raise DecodeError(f"a pointer argument has a buffer and an offset only: {text}")
        return Arg("pointer", buffer=buf, offset=decode_expr(offset))
    if kind == "tensor_map":
        if tmap is None or buf != "" or offset is not None or value is not None or typ != "":
            raise DecodeError(f"a tensor-map argument has a tensor_map only: {text}")
        return Arg("tensor_map", tensor_map=decode_tensor_map(tmap))
    if kind == "scalar":
        if value is None or buf != "" or offset is not None or tmap is not None:
            raise DecodeError(f"a scalar argument has a type and a value only: {text}")
        if typ not in ("u32", "u64"):
            raise DecodeError(f"scalar type {_go_q(typ)}: want u32 or u64")
        return Arg("scalar", type=typ, value=decode_expr(value))
    raise DecodeError(f"argument kind {_go_q(kind)}: want pointer, tensor_map or scalar")


_LAUNCH_FIELDS = ("entry", "grid", "grid_per_sm", "block", "cluster", "shared_bytes", "shared_opt_in", "dependent", "ctas_per_sm", "when", "args")


def decode_launch(v):
    f = _go.fields(v, _LAUNCH_FIELDS, "launch")
    entry = _go.as_str(f.get("entry"), "launch.entry")
    cluster = _go.as_array(f.get("cluster"), 3, lambda x: _go.as_int(x, "launch.cluster"), "launch.cluster")
    if cluster == [1, 1, 1]:
        cluster = [0, 0, 0]
    l = Launch(
        entry=entry,
        grid=_go.as_array(f.get("grid"), 3, decode_expr, "launch.grid"),
        block=_go.as_array(f.get("block"), 3, lambda x: _go.as_int(x, "launch.block"), "launch.block"),
        cluster=cluster,
        shared_bytes=_go.as_int(f.get("shared_bytes"), "launch.shared_bytes"),
        dependent=_go.as_bool(f.get("dependent"), "launch.dependent"),
        args=[decode_arg(a) for a in _go.as_list(f.get("args"), "launch.args")],
        grid_per_sm=_go.as_int(f.get("grid_per_sm"), "launch.grid_per_sm"),
        ctas_per_sm=_go.as_int(f.get("ctas_per_sm"), "launch.ctas_per_sm"),
        when=None if f.get("when") is None else decode_expr(f.get("when")))
    opt_in = _go.as_bool(f.get("shared_opt_in"), "launch.shared_opt_in")
    if l.opt_in != opt_in:
        raise DecodeError(
            f"launch {l.entry}: shared_opt_in {str(opt_in).lower()} with {l.shared_bytes} bytes of dynamic shared memory "
            f"(the opt-in is needed exactly above {DEFAULT_SHARED_LIMIT})")
    if l.ctas_per_sm < 0:
        raise DecodeError(f"launch {l.entry}: ctas_per_sm {l.ctas_per_sm}: want 0 (the driver's choice) or more")
    return l


# ---- the program resolved at one shape


@dataclass
class BufferSpec:
    name: str
    dtype: str
    elems: int
    role: str

    @property
    def nbytes(self):
        return self.elems * dtype_size(self.dtype)


@dataclass
class TensorMapSpec:
    """A TensorMap resolved at one shape: every extent, stride and the
    offset a number, every default spelled out."""

    buffer: str
    dtype: str
    dims: List[int]
    strides: List[int]
    box: List[int]
    elem_strides: List[int]
    swizzle: int
    interleave: str
    l2_promotion: int
    oob_fill: str
    offset: int = 0  # bytes from the buffer's start to element (0, ..., 0)

    def check(self):
        """Checks the fields against what cuTensorMapEncodeTiled accepts,
        and an offset that keeps the global address 16-byte aligned."""
        err = self._problem()
        if err:
            raise BadProgram(err)

    def _problem(self):
        rank = len(self.dims)
        if rank < 1 or rank > 5:
            return f"rank {rank} (dims {_go.format_ints(self.dims)}): want 1 to 5"
        if len(self.strides) != rank - 1 or len(self.box) != rank or len(self.elem_strides) != rank:
            return (f"rank {rank} with {len(self.strides)} strides, {len(self.box)} box extents and "
                    f"{len(self.elem_strides)} element strides: want {rank - 1}, {rank} and {rank}")
        if self.dtype not in ("f16", "bf16", "f32", "u8"):
            return f"element type {self.dtype}: want f16, bf16, f32 or u8"
        for i, d in enumerate(self.dims):
            if d < 1 or d > 1 << 32:
                return f"dims[{i}] = {d}: want 1 to 2^32"
        for i, st in enumerate(self.strides):
            if st <= 0 or st % 16 != 0 or st >= 1 << 40:
                return f"strides[{i}] = {st} bytes: want a positive multiple of 16 below 2^40"
        for i, b in enumerate(self.box):
            if b < 1 or b > 256:
                return f"box[{i}] = {b}: want 1 to 256"
        for i, e in enumerate(self.elem_strides):
            if e < 1 or e > 8:
                return f"element_strides[{i}] = {e}: want 1 to 8"
        row = self.box[0] * dtype_size(self.dtype)
        if row % 16 != 0:
            return f"box[0] = {self.box[0]} {self.dtype} elements = {row} bytes: want a multiple of 16 bytes"
        if self.swizzle in (32, 64, 128):
            if row > self.swizzle:
                return (f"box[0] = {self.box[0]} {self.dtype} elements = {row} bytes: more than the "
                        f"{self.swizzle}-byte swizzle span")
        elif self.swizzle != 0:
            return f"swizzle {self.swizzle}: want 0 (none), 32, 64 or 128 bytes"
        if self.interleave not in ("none", "16b", "32b"):
            return f"interleave {_go_q(self.interleave)}: want none, 16b or 32b"
        if self.l2_promotion not in (-1, 64, 128, 256):
            return f"l2_promotion {self.l2_promotion}: want -1 (none), 64, 128 or 256 bytes"
        if self.oob_fill not in ("zero", "nan"):
            return f"oob_fill {_go_q(self.oob_fill)}: want zero or nan"
        return self._offset_problem()

    def _offset_problem(self):
        """An offset below 0 or not a multiple of 16 bytes: the global
        address (buffer + offset) must stay 16-byte aligned."""
        if self.offset < 0 or self.offset % 16 != 0:
            return (f"offset {self.offset} bytes: want a multiple of 16 bytes, at least 0 "
                    f"(the tensor's global address, buffer + offset, must be 16-byte aligned)")
        return None

    def global_address(self, base):
        """The address the map is encoded over: that of the tensor's
        element (0, ..., 0) in the buffer at base, base + offset."""
        return base + self.offset

    def end(self):
        """One past the last byte of the tensor, relative to its element
        (0, ..., 0); the tensor ends at byte offset + end() of its buffer."""
        size = dtype_size(self.dtype)
        end = (self.dims[0] - 1) * size + size
        for i, st in enumerate(self.strides):
            end += (self.dims[i + 1] - 1) * st
        return end

    def inside(self, buf_bytes):
        """Checks that the tensor lies inside its buffer of buf_bytes:
        offset + end() <= buf_bytes."""
        end = self.end()
        if self.offset + end <= buf_bytes:
            return
        at = f" from offset {self.offset} (to byte {self.offset + end})" if self.offset != 0 else ""
        raise BadProgram(f"tensor map of {self.buffer}: dims {_go.format_ints(self.dims)} with strides "
                         f"{_go.format_ints(self.strides)} span {end} bytes{at}, but the buffer has {buf_bytes}")

    def check_at(self, base, buf_bytes):
        """Checks the map against its buffer at base: base 16-byte
        aligned, the offset too, the whole tensor inside the buffer's
        buf_bytes."""
        if base % 16 != 0:
            raise BadProgram(f"tensor map of {self.buffer}: base address {base:#x} is not 16-byte aligned")
        problem = self._offset_problem()
        if problem:
            raise BadProgram(f"tensor map of {self.buffer}: {problem}")
        self.inside(buf_bytes)


@dataclass
class ArgSpec:
    kind: str
    buffer: str = ""  # pointer arguments
    offset: int = 0  # bytes, pointer arguments
    tensor_map: Optional[TensorMapSpec] = None
    type: str = ""  # scalar arguments: u32 or u64
    scalar: int = 0


@dataclass
class LaunchSpec:
    """A Launch resolved at one shape: grid is what to launch (the
    grid_per_sm cap and the rounding to clusters applied, every dimension at
    least 1); cluster is [1, 1, 1] without clusters."""

    entry: str
    grid: List[int]
    block: List[int]
    cluster: List[int]
    shared_bytes: int
    opt_in: bool
    dependent: bool
    args: List[ArgSpec]
    max_carveout: bool = False

    @property
    def clustered(self):
        return self.cluster != [1, 1, 1]

    @property
    def threads(self):
        return self.block[0] * self.block[1] * self.block[2]


@dataclass
class Plan:
    buffers: List[BufferSpec]
    launches: List[LaunchSpec]

    def buffer(self, name):
        for b in self.buffers:
            if b.name == name:
                return b
        return None

    def referenced(self):
        """The names of the buffers some launch argument passes."""
        out = set()
        for l in self.launches:
            for a in l.args:
                if a.kind == "pointer":
                    out.add(a.buffer)
                elif a.kind == "tensor_map":
                    out.add(a.tensor_map.buffer)
        return out


def _eval_int(e, env, what, signed=False):
    """e's value (at least 0 unless signed), a BadProgram naming what
    where it has none."""
    try:
        return e.eval(env) if signed else e.eval_int(env)
    except ExprError as err:
        raise BadProgram(f"{what}: {err}") from None


def resolve(launches, buffers, env):
    """Evaluates launches and buffers in env (the shape's dims, and "sms"
    when a launch uses grid_per_sm) and checks them (see the module doc).
    Raises BadProgram naming what is wrong."""
    prefix = "program cannot be launched as described: "
    bufs, specs = {}, []
    for b in buffers:
        try:
            bs = _resolve_buffer(b, env)
        except BadProgram as e:
            raise BadProgram(prefix + str(e)) from None
        if b.name in bufs:
            raise BadProgram(f"{prefix}buffer {b.name} is declared twice")
        bufs[b.name] = bs
        specs.append(bs)
    out = []
    for i, l in enumerate(launches):
        if i == 0 and l.dependent:
            raise BadProgram(f"{prefix}launch 0 ({l.entry}) is dependent, but the first launch of a program must not be")
        if l.when is not None and _eval_int(l.when, env, f"{prefix}launch {i} ({l.entry}): when", signed=True) <= 0:
            continue
        try:
            out.append(_resolve_launch(l, bufs, env))
        except BadProgram as e:
            raise BadProgram(f"{prefix}launch {i} ({l.entry}): {e}") from None
    if out:  # what comes first in the plan waits for nothing of it
        out[0].dependent = False
    return Plan(specs, out)


def _resolve_buffer(b, env):
    if b.name == "":
        raise BadProgram("a buffer has no name")
    if b.role not in ROLES:
        raise BadProgram(f"buffer {b.name}: role {_go_q(b.role)}: want input, output, accumulate, scratch, state or inout")
    return BufferSpec(b.name, b.dtype, _eval_int(b.elems, env, f"buffer {b.name}: elements"), b.role)


def _resolve_launch(l, bufs, env):
    if l.entry == "":
        raise BadProgram("no entry name")
    block = [max(x, 1) for x in l.block]
    cluster = [max(x, 1) for x in l.cluster]
    s = LaunchSpec(l.entry, [0, 0, 0], block, cluster, l.shared_bytes, l.opt_in, l.dependent, [], l.max_carveout)
    if s.threads > 1024 or l.block[0] < 1:
        raise BadProgram(f"block {_go.format_ints(l.block)}: want 1 to 1024 threads")
    n = cluster[0] * cluster[1] * cluster[2]
    if n > 16:
        raise BadProgram(f"cluster {_go.format_ints(l.cluster)}: {n} CTAs, at most 16")
    if l.shared_bytes < 0:
        raise BadProgram(f"shared memory {l.shared_bytes} bytes")
    if l.ctas_per_sm < 0:
        raise BadProgram(f"ctas_per_sm {l.ctas_per_sm}: want 0 (the driver's choice) or more")
    for d, e in enumerate(l.grid):
        s.grid[d] = _eval_int(e, env, f"grid[{d}]")
    if l.grid_per_sm > 0:
        if "sms" not in env:
            raise BadProgram('grid_per_sm needs the device\'s multiprocessor count ("sms")')
        s.grid[0] = min(l.grid_per_sm * env["sms"], max(s.grid[0], 1))
        s.grid[0] = max(s.grid[0] // cluster[0], 1) * cluster[0]
    for d in range(3):
        s.grid[d] = max(s.grid[d], 1)
        if s.grid[d] % cluster[d] != 0:
            raise BadProgram(f"grid {_go.format_ints(s.grid)} is not a multiple of its cluster {_go.format_ints(cluster)}")
    for j, a in enumerate(l.args):
        try:
            s.args.append(_resolve_arg(a, bufs, env))
        except BadProgram as e:
            raise BadProgram(f"argument {j}: {e}") from None
    return s


def _resolve_arg(a, bufs, env):
    if a.kind == "pointer":
        b = bufs.get(a.buffer)
        if b is None:
            raise BadProgram(f"unknown buffer {_go_q(a.buffer)}")
        off = _eval_int(a.offset, env, f"offset into {a.buffer}")
        if off > b.nbytes:
            raise BadProgram(f"offset {off} is past the end of {a.buffer} ({b.nbytes} bytes)")
        return ArgSpec("pointer", buffer=a.buffer, offset=off)
    if a.kind == "tensor_map":
        b = bufs.get(a.tensor_map.buffer)
        if b is None:
            raise BadProgram(f"tensor map of unknown buffer {_go_q(a.tensor_map.buffer)}")
        try:
            m = a.tensor_map.resolve(env)
        except BadProgram as e:
            raise BadProgram(f"tensor map of {b.name}: {e}") from None
        m.inside(max(b.nbytes, 16))  # a buffer is allocated at least 16 bytes
        return ArgSpec("tensor_map", tensor_map=m)
    try:
        v = a.value.eval(env)
    except ExprError as e:
        raise BadProgram(f"scalar: {e}") from None
    typ = a.type or "u64"
    if typ not in ("u32", "u64"):
        raise BadProgram(f"scalar type {_go_q(typ)}: want u32 or u64")
    if v < 0 or (typ == "u32" and v > 0xFFFFFFFF):
        raise BadProgram(f"scalar {a.value} = {v} does not fit {typ}")
    return ArgSpec("scalar", type=typ, scalar=v)
