"""The CUDA driver through ctypes (libcuda.so.1), behind a seam.

Driver is the seam: the handful of calls that loading and launching a
plan needs. CUDADriver implements it on the driver library; the tests
implement it with a fake that records the calls, so everything above it
(packing, binding, launch order) runs without a GPU.

Rules (as package runner/cuda documents them for x86-64):
  - Kernel parameters are packed by value into one buffer whose base is
    64-byte aligned: scalars and pointers each in an 8-byte slot, 8-byte
    aligned (a u32 fills the first 4 bytes of its slot); a tensor map's 128
    bytes at a 64-byte aligned offset. kernelParams[i] is the address of
    parameter i's bytes (pack_params gives the layout).
  - A launch with neither a cluster nor a dependent flag goes through
    cuLaunchKernel; otherwise cuLaunchKernelEx with a CUlaunchConfig (56
    bytes: grid and block dims, shared bytes, a pad, hStream at 32, attrs
    at 40, numAttrs at 48) and its CUlaunchAttribute array (72 bytes each:
    an int32 id, a pad, the 64-byte value union at 8): the cluster shape
    (id 4, three uint32) and programmatic stream serialization (id 6,
    value 1). A cluster of more than 8 CTAs first allows the function
    non-portable cluster sizes.
  - A driver without cuLaunchKernelEx cannot make a dependent launch:
    launch raises NoDependentLaunch and enqueues nothing, and the caller
    launches in plain stream order.
  - A tensor map is written by cuTensorMapEncodeTiled into 64-byte
    aligned host memory and passed by value (128 bytes).
  - Modules are loaded once per PTX text (by its sha256) and functions
    looked up once per module and name.
"""

import ctypes
import hashlib
import struct
import threading

from .errors import GradtuneError


class CUDAError(GradtuneError):
    """A driver call that failed: op, the CUresult code and its name."""

    def __init__(self, op, code, name="", text="", detail=""):
        self.op, self.code, self.name = op, code, name
        msg = f"cuda: {op}: {name or 'CUresult'} {code}"
        if text:
            msg += f" ({text})"
        if detail:
            msg += f" {detail}"
        super().__init__(msg)


class NoDependentLaunch(GradtuneError):
    """The driver cannot make a dependent launch; nothing was enqueued."""


class NoDriver(GradtuneError):
    """libcuda.so.1 cannot be loaded or initialized."""


# ---- kernel parameters

TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGN = 64


class Param:
    """One kernel parameter by value: kind "u64" (also pointers), "u32" or
    "tensor_map" (value: 128 bytes)."""

    __slots__ = ("kind", "value")

    def __init__(self, kind, value):
        if kind in ("u32", "u64"):
            limit = 1 << (32 if kind == "u32" else 64)
            if not 0 <= value < limit:
                raise ValueError(f"{kind} parameter {value} out of range")
        elif kind == "tensor_map":
            if len(value) != TENSOR_MAP_BYTES:
                raise ValueError(f"a tensor map is {TENSOR_MAP_BYTES} bytes, not {len(value)}")
            value = bytes(value)
        else:
            raise ValueError(f"parameter kind {kind!r}: want u32, u64 or tensor_map")
        self.kind, self.value = kind, value

    def __repr__(self):
        if self.kind == "tensor_map":
            return f"Param(tensor_map, {self.value[:8].hex()}...)"
        return f"Param({self.kind}, {self.value:#x})"

    def __eq__(self, other):
        return isinstance(other, Param) and (self.kind, self.value) == (other.kind, other.value)


def pointer(addr):
    """The parameter that passes device address addr."""
    return Param("u64", addr)


class Packed:
    """Parameters packed as the driver reads them: data, whose base is to
    be placed at a 64-byte aligned address, and each parameter's offset.
    native is the driver's own copy (CUDADriver: the aligned block and the
    kernelParams array), made by its first launch and reused by the rest."""

    __slots__ = ("data", "offsets", "native")

    def __init__(self, data, offsets):
        self.data, self.offsets, self.native = data, offsets, None


def pack_params(params):
    """The layout of the module doc: 8-byte slots for scalars, 128 bytes at
    64-byte aligned offsets for tensor maps."""
    offsets, end = [], 0
    for p in params:
        size, align = (TENSOR_MAP_BYTES, TENSOR_MAP_ALIGN) if p.kind == "tensor_map" else (8, 8)
        off = (end + align - 1) // align * align
        offsets.append(off)
        end = off + size
    buf = bytearray(end)
    for p, off in zip(params, offsets):
        if p.kind == "tensor_map":
            buf[off : off + TENSOR_MAP_BYTES] = p.value
        elif p.kind == "u32":
            struct.pack_into("<I", buf, off, p.value)
        else:
            struct.pack_into("<Q", buf, off, p.value)
    return Packed(bytes(buf), offsets)


# ---- the seam


class Driver:
    """What loading and launching need of a device. Handles (modules,
    functions) are the driver's own values."""

    def load_module(self, ptx):
        """Loads PTX text (bytes) once per text; returns the module."""
        raise NotImplementedError

    def get_function(self, module, name):
        """The kernel entry name of module."""
        raise NotImplementedError

    def set_max_dynamic_shared(self, function, nbytes):
        """Opts function in to nbytes of dynamic shared memory."""
        raise NotImplementedError

    def prefer_max_shared(self, function):
        """Sets function's preferred shared-memory carveout to the largest
        (a launch built for several CTAs an SM)."""
        raise NotImplementedError

    def allow_non_portable_cluster(self, function):
        """Allows function clusters of more than 8 CTAs."""
        raise NotImplementedError

    def encode_tensor_map(self, spec, base):
        """The 128 bytes of the tiled tensor map spec (a
        configs.TensorMapSpec) over device address base: that of the
        tensor's element (0, ..., 0), its buffer's address plus
        spec.offset (spec.global_address), which the caller has added."""
        raise NotImplementedError

    def launch(self, function, spec, stream, packed):
        """Enqueues one launch of function on stream as spec (a
        configs.LaunchSpec) says, with packed parameters; raises
        NoDependentLaunch, enqueueing nothing, for a dependent launch the
        driver cannot make."""
        raise NotImplementedError


# ---- the CUDA driver

# CUtensorMap enums (cuda.h).
TENSOR_DTYPES = {"u8": 0, "f16": 6, "f32": 7, "bf16": 9}
TENSOR_INTERLEAVES = {"none": 0, "16b": 1, "32b": 2}
TENSOR_SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}
TENSOR_L2_PROMOTIONS = {-1: 0, 64: 1, 128: 2, 256: 3}
TENSOR_OOB_FILLS = {"zero": 0, "nan": 1}

LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9
FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
MAX_PORTABLE_CLUSTER = 8
JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: 72 bytes, the value union at offset 8."""

    _fields_ = [("id", ctypes.c_int32), ("_pad", ctypes.c_uint8 * 4), ("value", ctypes.c_uint64 * 8)]

    def set_uint32s(self, *vs):
        struct.pack_into("<%dI" % len(vs), memoryview(self.value).cast("B"), 0, *vs)


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig: 56 bytes, hStream at 32, attrs at 40, numAttrs at 48."""

    _fields_ = [
        ("gridDimX", ctypes.c_uint32), ("gridDimY", ctypes.c_uint32), ("gridDimZ", ctypes.c_uint32),
        ("blockDimX", ctypes.c_uint32), ("blockDimY", ctypes.c_uint32), ("blockDimZ", ctypes.c_uint32),
        ("sharedMemBytes", ctypes.c_uint32), ("_pad", ctypes.c_uint8 * 4),
        ("hStream", ctypes.c_void_p), ("attrs", ctypes.POINTER(LaunchAttribute)),
        ("numAttrs", ctypes.c_uint32), ("_pad2", ctypes.c_uint8 * 4),
    ]


def launch_attributes(spec):
    """The attributes a launch needs: its cluster shape and programmatic
    stream serialization, each when it asks for it."""
    attrs = []
    if spec.clustered:
        a = LaunchAttribute(id=LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        a.set_uint32s(*spec.cluster)
        attrs.append(a)
    if spec.dependent:
        a = LaunchAttribute(id=LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
        a.set_uint32s(1)
        attrs.append(a)
    return attrs


def launch_config(spec, stream, attrs):
    """The CUlaunchConfig of spec on stream with attrs (a ctypes array the
    caller keeps alive through the call)."""
    c = LaunchConfig(*spec.grid, *spec.block, spec.shared_bytes)
    c.hStream = stream or None
    if attrs is not None and len(attrs):
        c.attrs = ctypes.cast(attrs, ctypes.POINTER(LaunchAttribute))
        c.numAttrs = len(attrs)
    return c


def _aligned(data, align):
    """A ctypes buffer holding data at an align-byte aligned address, and
    that address."""
    raw = (ctypes.c_uint8 * (len(data) + align))()
    addr = (ctypes.addressof(raw) + align - 1) // align * align
    ctypes.memmove(addr, data, len(data))
    return raw, addr


class CUDADriver(Driver):
    """Driver on libcuda.so.1 for device ordinal device: calls run in its
    primary context (made current on the calling thread when no context
    is), which is the context PyTorch uses."""

    def __init__(self, device=0, library="libcuda.so.1"):
        try:
            self.lib = ctypes.CDLL(library)
        except OSError as e:
            raise NoDriver(f"cuda: cannot load {library}: {e}") from None
        self.device = device
        self._bind()
        self._check("cuInit", self.lib.cuInit(0))
        self._modules, self._functions, self._lock = {}, {}, threading.Lock()
        self._launch_attrs = {}

    def _bind(self):
        L, vp, u32, i32 = self.lib, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int
        sig = {
            "cuInit": [u32], "cuGetErrorName": [i32, ctypes.POINTER(ctypes.c_char_p)],
            "cuGetErrorString": [i32, ctypes.POINTER(ctypes.c_char_p)],
            "cuDeviceGet": [ctypes.POINTER(i32), i32], "cuCtxGetCurrent": [ctypes.POINTER(vp)], "cuCtxSetCurrent": [vp],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(vp), i32],
            "cuModuleLoadDataEx": [ctypes.POINTER(vp), ctypes.c_char_p, u32, ctypes.POINTER(i32), ctypes.POINTER(vp)],
            "cuModuleGetFunction": [ctypes.POINTER(vp), vp, ctypes.c_char_p],
            "cuFuncSetAttribute": [vp, i32, i32],
            "cuLaunchKernel": [vp, u32, u32, u32, u32, u32, u32, u32, vp, ctypes.POINTER(vp), ctypes.POINTER(vp)],
        }
        optional = {
            "cuLaunchKernelEx": [ctypes.POINTER(LaunchConfig), vp, ctypes.POINTER(vp), ctypes.POINTER(vp)],
            "cuTensorMapEncodeTiled": [vp, i32, u32, vp, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                                       ctypes.POINTER(u32), ctypes.POINTER(u32), i32, i32, i32, i32],
        }
        self.fn = {}
        for name, args in list(sig.items()) + list(optional.items()):
            try:
                f = getattr(L, name)
            except AttributeError:
                if name in optional:
                    self.fn[name] = None
                    continue
                raise NoDriver(f"cuda: the driver has no {name} (a driver for CUDA 12.0 or newer is needed)") from None
            f.argtypes, f.restype = args, ctypes.c_int
            self.fn[name] = f

    def _check(self, op, code, detail=""):
        if code == 0:
            return
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(name))
        self.lib.cuGetErrorString(code, ctypes.byref(text))
        raise CUDAError(op, code, (name.value or b"").decode(), (text.value or b"").decode(), detail)

    def ensure_context(self):
        """Makes the device's primary context current when none is."""
        ctx = ctypes.c_void_p()
        self._check("cuCtxGetCurrent", self.fn["cuCtxGetCurrent"](ctypes.byref(ctx)))
        if ctx.value:
            return
        dev = ctypes.c_int()
        self._check("cuDeviceGet", self.fn["cuDeviceGet"](ctypes.byref(dev), self.device))
        self._check("cuDevicePrimaryCtxRetain", self.fn["cuDevicePrimaryCtxRetain"](ctypes.byref(ctx), dev))
        self._check("cuCtxSetCurrent", self.fn["cuCtxSetCurrent"](ctx))

    @property
    def has_launch_ex(self):
        return self.fn["cuLaunchKernelEx"] is not None

    def load_module(self, ptx):
        key = hashlib.sha256(ptx).hexdigest()
        with self._lock:
            if key in self._modules:
                return self._modules[key]
            self.ensure_context()
            log = ctypes.create_string_buffer(1 << 16)
            opts = (ctypes.c_int * 2)(JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            vals = (ctypes.c_void_p * 2)(ctypes.addressof(log), len(log))
            mod = ctypes.c_void_p()
            code = self.fn["cuModuleLoadDataEx"](ctypes.byref(mod), ptx + b"\0", 2, opts, vals)
            self._check("cuModuleLoadDataEx", code, log.value.decode(errors="replace").strip())
            self._modules[key] = mod.value
            return mod.value

    def get_function(self, module, name):
        with self._lock:
            key = (module, name)
            if key not in self._functions:
                f = ctypes.c_void_p()
                self._check("cuModuleGetFunction", self.fn["cuModuleGetFunction"](ctypes.byref(f), module, name.encode()), f"({name})")
                self._functions[key] = f.value
            return self._functions[key]

    def set_max_dynamic_shared(self, function, nbytes):
        self._check("cuFuncSetAttribute", self.fn["cuFuncSetAttribute"](function, FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
                    f"(max dynamic shared memory {nbytes} bytes)")

    def prefer_max_shared(self, function):
        self._check("cuFuncSetAttribute", self.fn["cuFuncSetAttribute"](function, FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100),
                    "(the largest shared-memory carveout)")

    def allow_non_portable_cluster(self, function):
        self._check("cuFuncSetAttribute", self.fn["cuFuncSetAttribute"](function, FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                    "(non-portable cluster sizes)")

    def encode_tensor_map(self, spec, base):
        f = self.fn["cuTensorMapEncodeTiled"]
        if f is None:
            raise NoDriver("cuda: the driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer is needed for tensor maps)")
        rank = len(spec.dims)
        dims = (ctypes.c_uint64 * rank)(*spec.dims)
        strides = (ctypes.c_uint64 * max(rank - 1, 1))(*spec.strides) if rank > 1 else None
        box = (ctypes.c_uint32 * rank)(*spec.box)
        elem = (ctypes.c_uint32 * rank)(*spec.elem_strides)
        raw, addr = _aligned(bytes(TENSOR_MAP_BYTES), TENSOR_MAP_ALIGN)
        code = f(addr, TENSOR_DTYPES[spec.dtype], rank, base, dims, strides, box, elem, TENSOR_INTERLEAVES[spec.interleave],
                 TENSOR_SWIZZLES[spec.swizzle], TENSOR_L2_PROMOTIONS[spec.l2_promotion], TENSOR_OOB_FILLS[spec.oob_fill])
        self._check("cuTensorMapEncodeTiled", code,
                    f"(tensor map of {spec.buffer}: type {spec.dtype}, dims {spec.dims}, strides {spec.strides}, box {spec.box}, swizzle {spec.swizzle})")
        return ctypes.string_at(addr, TENSOR_MAP_BYTES)

    def launch(self, function, spec, stream, packed):
        attrs = self._attributes(spec)
        if attrs is not None and not self.has_launch_ex:
            if spec.dependent and not spec.clustered:
                raise NoDependentLaunch("cuda: the driver has no cuLaunchKernelEx (dependent launches need CUDA 12.0)")
            raise NoDriver("cuda: the driver has no cuLaunchKernelEx (clusters need CUDA 12.0)")
        native = packed.native  # held for the whole call: params points into its raw block
        if native is None:
            raw, base = _aligned(packed.data, TENSOR_MAP_ALIGN)
            native = (raw, (ctypes.c_void_p * max(len(packed.offsets), 1))(*[base + off for off in packed.offsets]))
            packed.native = native
        params = native[1]
        if attrs is None:
            code = self.fn["cuLaunchKernel"](function, *spec.grid, *spec.block, spec.shared_bytes, stream or None, params, None)
            op = "cuLaunchKernel"
        else:
            cfg = launch_config(spec, stream, attrs)
            code = self.fn["cuLaunchKernelEx"](ctypes.byref(cfg), function, params, None)
            op = "cuLaunchKernelEx"
        if code:
            self._check(op, code, f"(kernel {spec.entry}, grid {spec.grid}, block {spec.block}, cluster {spec.cluster}, "
                                  f"shared {spec.shared_bytes}, dependent {spec.dependent})")

    def _attributes(self, spec):
        """The ctypes array of spec's launch attributes, or None when it
        needs none; made once per kind of launch (cluster shape, dependent)."""
        key = (tuple(spec.cluster) if spec.clustered else None, bool(spec.dependent))
        if key not in self._launch_attrs:
            attrs = launch_attributes(spec)
            self._launch_attrs[key] = (LaunchAttribute * len(attrs))(*attrs) if attrs else None
        return self._launch_attrs[key]
