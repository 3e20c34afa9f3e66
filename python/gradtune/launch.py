"""Binding a resolved plan to device buffers and launching it in order
(Go: package launch), on any driver.Driver.

Rules:
  - A pointer argument is its buffer's address plus its offset, checked to
    be inside the buffer; a tensor map is encoded at bind time over its
    buffer's address plus its offset (base 16-byte aligned, the offset a
    multiple of 16, the tensor from its offset to its last byte inside the
    buffer), so the buffers must not move while the bound plan is in use;
    a scalar is passed as its PTX type, u32 or u64.
  - Launches go in plan order. A dependent launch goes to the driver as
    dependent; a driver that cannot launch dependently launches it, and
    every later dependent launch of the bound plan, in plain stream order,
    which is what the kernel's griddepcontrol.wait waits for anyway.
  - functions() looks every launch's entry up once per module and opts it
    in to its dynamic shared memory above 48 KiB (to clusters of more than
    8 CTAs, and to the largest shared-memory carveout where the launch was
    built for several CTAs an SM).
  - A bound plan depends on nothing but the plan, its functions and the
    buffers' addresses and sizes: Bindings keeps the last few per buffer
    set, so a caller that passes the same buffers again (a training loop
    under torch's caching allocator) encodes no tensor map and packs no
    parameters.
"""

import threading

from .driver import NoDependentLaunch, Packed, Param, pack_params, pointer
from .errors import BadProgram


class Memory:
    """Where a plan's buffers are: buffer(name) is (device address, size in
    bytes), or None for a buffer it does not have."""

    def __init__(self, buffers):
        self._buffers = dict(buffers)

    def buffer(self, name):
        return self._buffers.get(name)


def functions(drv, module, plan):
    """The driver function of every launch of plan, in order, opted in to
    what its launch needs."""
    out = []
    for l in plan.launches:
        f = drv.get_function(module, l.entry)
        if l.opt_in:
            drv.set_max_dynamic_shared(f, l.shared_bytes)
        if l.max_carveout:
            drv.prefer_max_shared(f)
        if l.cluster[0] * l.cluster[1] * l.cluster[2] > 8:
            drv.allow_non_portable_cluster(f)
        out.append(f)
    return out


class Bound:
    """A plan whose arguments are bound to device buffers, ready to run."""

    def __init__(self, launches, funcs, packed):
        self.launches, self.funcs, self.packed = launches, funcs, packed
        # Set once the driver refused a dependent launch.
        self.plain = False

    def run(self, drv, stream):
        """Enqueues every launch in order on stream."""
        for l, f, p in zip(self.launches, self.funcs, self.packed):
            dependent = l.dependent and not self.plain
            try:
                drv.launch(f, _with_dependent(l, dependent), stream, p)
            except NoDependentLaunch:
                if not dependent:
                    raise
                self.plain = True
                drv.launch(f, _with_dependent(l, False), stream, p)


class Bindings:
    """The bound plans of one plan and its functions on drv, by buffer set:
    the last `keep` used are kept. Safe to share between threads."""

    def __init__(self, drv, plan, funcs, keep=16):
        if keep < 1:
            raise ValueError(f"Bindings keeps at least one binding, not {keep}")
        self.drv, self.plan, self.funcs, self.keep = drv, plan, funcs, keep
        self._bound = {}
        self._lock = threading.Lock()

    def bind(self, buffers):
        """The plan bound to buffers (name -> (device address, bytes)), as
        bind() makes it, from the cache when these buffers were bound
        before."""
        key = tuple(sorted(buffers.items()))
        with self._lock:
            b = self._bound.pop(key, None)
            if b is None:
                b = bind(self.drv, self.plan, self.funcs, Memory(buffers))
                if len(self._bound) >= self.keep:
                    del self._bound[next(iter(self._bound))]
            self._bound[key] = b
            return b

    def __len__(self):
        return len(self._bound)


def _with_dependent(l, dependent):
    if l.dependent == dependent:
        return l
    import copy

    c = copy.copy(l)
    c.dependent = dependent
    return c


def bind(drv, plan, funcs, memory):
    """Binds plan's arguments to memory's buffers on drv; funcs holds the
    function of each launch of plan, in order."""
    if len(funcs) != len(plan.launches):
        raise BadProgram(f"launch: {len(funcs)} functions for {len(plan.launches)} launches")
    packed = []
    for l in plan.launches:
        params = []
        for j, a in enumerate(l.args):
            try:
                params.append(_bind_arg(drv, a, memory))
            except BadProgram as e:
                raise BadProgram(f"launch {l.entry} argument {j}: {e}") from None
        packed.append(pack_params(params))
    return Bound(plan.launches, funcs, packed)


def _bind_arg(drv, a, memory):
    if a.kind == "pointer":
        buf = memory.buffer(a.buffer)
        if buf is None:
            raise BadProgram(f'no buffer "{a.buffer}"')
        addr, size = buf
        if a.offset > size:
            raise BadProgram(f"offset {a.offset} is past the end of {a.buffer} ({size} bytes)")
        return pointer(addr + a.offset)
    if a.kind == "tensor_map":
        m = a.tensor_map
        buf = memory.buffer(m.buffer)
        if buf is None:
            raise BadProgram(f'tensor map of unknown buffer "{m.buffer}"')
        addr, size = buf
        m.check_at(addr, size)
        return Param("tensor_map", drv.encode_tensor_map(m, m.global_address(addr)))
    return Param(a.type, a.scalar)


__all__ = ["Bindings", "Bound", "Memory", "Packed", "bind", "functions"]
