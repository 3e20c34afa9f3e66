"""Binding plans and launching them against a fake driver: the recorded
calls, the packed argument bytes and the tensor-map fields; and the ctypes
layouts and calls of the CUDA driver, through stand-ins for its entry
points."""

import ctypes
import os
import re
import struct
import unittest

from fakes import FakeDriver
from helpers import TESTDATA
from gradtune import contract, driver, launch, table
from gradtune.errors import BadProgram
from gradtune.expr import const, var

SYNTHETIC = os.path.join(TESTDATA, "synthetic")
M = 3001


def rows_plan(sms=132):
    s = table.load(SYNTHETIC)
    m = s.lookup(table.GPU("Test GPU A", "9.0"), "rows_bwd", "bf16", f"m={M},n=1536")
    return m.plan(sms)


def memory(plan, base=0x7f0000000000, skip=()):
    """Every buffer of plan at 256-byte aligned addresses."""
    bufs, addr = {}, base
    for b in plan.buffers:
        if b.name not in skip:
            bufs[b.name] = (addr, max(b.nbytes, 16))
        addr += (max(b.nbytes, 16) + 255) // 256 * 256
    return launch.Memory(bufs), bufs


class Pack(unittest.TestCase):
    def test_layout(self):
        tm = bytes(range(128))
        p = driver.pack_params([driver.pointer(0x1122334455667788), driver.Param("u32", 7), driver.Param("tensor_map", tm),
                                driver.Param("u64", 9), driver.Param("u32", 0xFFFFFFFF)])
        self.assertEqual(p.offsets, [0, 8, 64, 192, 200])
        self.assertEqual(len(p.data), 208)
        self.assertEqual(p.data[0:8], struct.pack("<Q", 0x1122334455667788))
        self.assertEqual(p.data[8:16], struct.pack("<I", 7) + bytes(4))
        self.assertEqual(p.data[16:64], bytes(48))
        self.assertEqual(p.data[64:192], tm)
        self.assertEqual(p.data[192:200], struct.pack("<Q", 9))
        self.assertEqual(p.data[200:204], b"\xff" * 4)

    def test_refuses(self):
        for kind, v in (("u32", 1 << 32), ("u32", -1), ("u64", 1 << 64), ("tensor_map", b"x" * 64), ("f32", 1)):
            with self.subTest(kind=kind, v=v), self.assertRaises(ValueError):
                driver.Param(kind, v)


class BindAndRun(unittest.TestCase):
    def test_max_carveout(self):
        plan = rows_plan()
        plan.launches[0].max_carveout = True
        fake = FakeDriver()
        launch.functions(fake, "module", plan)
        self.assertEqual([c for c in fake.calls if c[0] == "prefer_max_shared"], [("prefer_max_shared", "fn:rows_main")])

    def test_rows(self):
        plan = rows_plan()
        fake = FakeDriver()
        funcs = launch.functions(fake, "module", plan)
        self.assertEqual(funcs, ["fn:rows_main", "fn:rows_finalize"])
        self.assertIn(("set_max_dynamic_shared", "fn:rows_finalize", 65536), fake.calls)
        self.assertNotIn(("set_max_dynamic_shared", "fn:rows_main", 0), fake.calls)
        self.assertFalse([c for c in fake.calls if c[0] == "prefer_max_shared"])
        mem, bufs = memory(plan)
        bound = launch.bind(fake, plan, funcs, mem)
        self.assertIn(("encode_tensor_map", "dy", bufs["dy"][0]), fake.calls)
        for _ in range(2):
            bound.run(fake, 0xABC)
        self.assertEqual(len(fake.launches), 4)
        fn, entry, grid, block, cluster, shared, dep, stream, data, offs = fake.launches[0]
        self.assertEqual((fn, entry, grid, block, cluster, shared, dep, stream), ("fn:rows_main", "rows_main", [188, 1, 1], [256, 1, 1], [1, 1, 1], 0, False, 0xABC))
        # dy, x, dx + 2·m bytes, rstd, partials, u32 m, u64 m·1536.
        self.assertEqual(offs, [0, 8, 16, 24, 32, 40, 48])
        want = struct.pack("<5Q", bufs["dy"][0], bufs["x"][0], bufs["dx"][0] + 2 * M, bufs["rstd"][0], bufs["partials"][0])
        want += struct.pack("<I", M) + bytes(4) + struct.pack("<Q", M * 1536)
        self.assertEqual(data, want)
        fn, entry, grid, block, cluster, shared, dep, stream, data, offs = fake.launches[1]
        self.assertEqual((entry, grid, cluster, shared, dep), ("rows_finalize", [264, 2, 1], [2, 1, 1], 65536, True))
        self.assertEqual(offs, [0, 128, 136, 144])
        self.assertEqual(data[:20], struct.pack("<QIQ", bufs["dy"][0], 2, 1536)[:20])
        self.assertEqual(data[128:152], struct.pack("<QQ", bufs["partials"][0], bufs["ticket"][0]) + struct.pack("<I", M - 1024) + bytes(4))

    def test_dependent_falls_back(self):
        plan = rows_plan()
        fake = FakeDriver(no_pdl=True)
        mem, _ = memory(plan)
        bound = launch.bind(fake, plan, launch.functions(fake, "module", plan), mem)
        bound.run(fake, 0)
        bound.run(fake, 0)
        self.assertTrue(bound.plain)
        self.assertEqual([(l[1], l[6]) for l in fake.launches],
                         [("rows_main", False), ("rows_finalize", False), ("rows_main", False), ("rows_finalize", False)])
        self.assertTrue(plan.launches[1].dependent, "the plan itself is left as it was")

    def test_refuses(self):
        plan = rows_plan()
        fake = FakeDriver()
        funcs = ["a", "b"]
        mem, bufs = memory(plan)
        for name, f, m, want in (
            ("function count", ["a"], mem, "1 functions for 2 launches"),
            ("missing buffer", funcs, memory(plan, skip=("rstd",))[0], 'argument 3: no buffer "rstd"'),
            ("missing mapped buffer", funcs, memory(plan, skip=("dy",))[0], 'no buffer "dy"'),
            ("unaligned map", funcs, launch.Memory(dict(bufs, dy=(bufs["dy"][0] + 8, bufs["dy"][1]))), "not 16-byte aligned"),
            ("small buffer", funcs, launch.Memory(dict(bufs, dy=(bufs["dy"][0], 1000))), "but the buffer has 1000"),
            ("offset past the end", funcs, launch.Memory(dict(bufs, dx=(bufs["dx"][0], 8))), "offset 6002 is past the end of dx"),
        ):
            with self.subTest(case=name), self.assertRaisesRegex(BadProgram, want):
                launch.bind(fake, plan, f, m)


    def test_map_offset(self):
        # A map of rows j*32 to j*32+31 of x, encoded over x's address plus
        # its offset (launch_test.go's TestBindMapOffset).
        x = contract.Buffer("x", "bf16", const(128 * 64), "input")
        block = contract.TensorMap("x", "bf16", [const(64), const(32)], [const(128)], [64, 32], swizzle=128, offset=var("j") * (32 * 128))
        l = contract.Launch("a", [const(1)] * 3, [128, 1, 1], [0, 0, 0], 0, False, [contract.Arg("tensor_map", tensor_map=block)])
        plan = contract.resolve([l], [x], {"j": 3})
        fake = FakeDriver()
        launch.bind(fake, plan, ["fa"], launch.Memory({"x": (0x10000, 128 * 64 * 2)}))
        self.assertEqual(fake.calls, [("encode_tensor_map", "x", 0x13000)])
        want = ("tensor map of x: dims [64 32] with strides [128] span 4096 bytes from offset 12288 (to byte 16384), "
                "but the buffer has 16368")
        with self.assertRaisesRegex(BadProgram, re.escape(want)):
            launch.bind(fake, plan, ["fa"], launch.Memory({"x": (0x10000, 128 * 64 * 2 - 16)}))


class Binding(unittest.TestCase):
    """launch.Bindings: a buffer set bound once, rebound when a buffer moves
    or grows, the least recently used dropped past `keep`."""

    def setUp(self):
        self.plan = rows_plan()
        self.fake = FakeDriver()
        self.b = launch.Bindings(self.fake, self.plan, ["f0", "f1"])
        _, self.bufs = memory(self.plan)
        self.first = self.b.bind(self.bufs)

    def encodes(self):
        return [c for c in self.fake.calls if c[0] == "encode_tensor_map"]

    def test_same_buffers_bind_once(self):
        n = len(self.encodes())
        self.assertGreater(n, 0, "the rows plan passes a tensor map")
        self.assertIs(self.b.bind(dict(reversed(list(self.bufs.items())))), self.first, "the same buffers in another order")
        self.assertEqual(len(self.encodes()), n)
        want = launch.bind(FakeDriver(), self.plan, ["f0", "f1"], launch.Memory(self.bufs))
        self.assertEqual([p.data for p in self.first.packed], [p.data for p in want.packed])

    def test_moved_or_grown_buffer_rebinds(self):
        addr, size = self.bufs["dy"]
        moved = self.b.bind(dict(self.bufs, dy=(addr + (1 << 30), size)))
        self.assertIsNot(moved, self.first)
        self.assertEqual(self.encodes()[-1], ("encode_tensor_map", "dy", addr + (1 << 30)))
        self.assertIsNot(self.b.bind(dict(self.bufs, dy=(addr, size + 256))), self.first)
        self.assertEqual(len(self.b), 3)

    def test_keeps_at_least_one(self):
        with self.assertRaisesRegex(ValueError, "at least one binding, not 0"):
            launch.Bindings(self.fake, self.plan, ["f0", "f1"], keep=0)

    def test_keeps_the_most_recently_used(self):
        plan = rows_plan()
        b = launch.Bindings(FakeDriver(), plan, ["f0", "f1"], keep=2)
        sets = [memory(plan, base=0x7f0000000000 + i * (1 << 32))[1] for i in range(3)]
        first = b.bind(sets[0])
        b.bind(sets[1])
        self.assertIs(b.bind(sets[0]), first, "used again: now the most recent")
        b.bind(sets[2])  # drops sets[1], the least recently used
        self.assertEqual(len(b), 2)
        self.assertIs(b.bind(sets[0]), first)
        fake = b.drv
        n = len(fake.calls)
        b.bind(sets[1])
        self.assertGreater(len(fake.calls), n, "sets[1] was dropped and is bound again")


class CUDALayouts(unittest.TestCase):
    """The ctypes structures are cuda.h's on x86-64."""

    def test_structs(self):
        L, A = driver.LaunchConfig, driver.LaunchAttribute
        self.assertEqual((ctypes.sizeof(L), L.sharedMemBytes.offset, L.hStream.offset, L.attrs.offset, L.numAttrs.offset), (56, 24, 32, 40, 48))
        self.assertEqual((ctypes.sizeof(A), A.value.offset, ctypes.sizeof(A.value.__get__(A()))), (72, 8, 64))

    def test_attributes(self):
        plan = rows_plan()
        self.assertEqual(driver.launch_attributes(plan.launches[0]), [])
        attrs = driver.launch_attributes(plan.launches[1])
        raw = [bytes(a) for a in attrs]
        self.assertEqual(raw[0][:20], struct.pack("<i4x3I", 4, 2, 1, 1))
        self.assertEqual(raw[1][:12], struct.pack("<i4xI", 6, 1))
        self.assertEqual(raw[0][20:], bytes(52))


class StandIn:
    """A stand-in for a ctypes entry point: records its arguments and
    returns CUDA_SUCCESS, or reads what they point at with see."""

    def __init__(self, see=None, code=0):
        self.calls, self.see, self.code = [], see, code

    def __call__(self, *args):
        self.calls.append(self.see(*args) if self.see else args)
        return self.code


def cuda_with(**fns):
    """A CUDADriver on stand-ins instead of libcuda (no GPU is touched)."""
    d = driver.CUDADriver.__new__(driver.CUDADriver)
    d.fn = {"cuLaunchKernel": StandIn(), "cuLaunchKernelEx": StandIn(), "cuTensorMapEncodeTiled": StandIn(),
            "cuFuncSetAttribute": StandIn()}
    d.fn.update(fns)
    d.device = 0
    d._launch_attrs = {}
    return d


def read_params(params, packed):
    """The bytes each kernelParams entry points at, sized as packed lays
    them out, and whether each address is aligned as the layout says."""
    out = []
    for i, off in enumerate(packed.offsets):
        end = packed.offsets[i + 1] if i + 1 < len(packed.offsets) else len(packed.data)
        out.append((ctypes.string_at(params[i], end - off), params[i] % (64 if end - off == 128 else 8) == 0))
    return out


class CUDACalls(unittest.TestCase):
    def test_prefer_max_shared(self):
        d = cuda_with()
        d.prefer_max_shared("f0")
        self.assertEqual(d.fn["cuFuncSetAttribute"].calls, [("f0", driver.FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)])
        self.assertEqual(driver.FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 9)

    def test_launch_kernel(self):
        plan = rows_plan()
        fake = FakeDriver()
        mem, bufs = memory(plan)
        bound = launch.bind(fake, plan, ["f0", "f1"], mem)
        seen = {}

        def plain(fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            seen["plain"] = (fn, gx, gy, gz, bx, by, bz, shared, stream, read_params(params, bound.packed[0]), extra)

        def ex(cfg, fn, params, extra):
            c = cfg._obj
            attrs = [bytes(c.attrs[i]) for i in range(c.numAttrs)]
            seen["ex"] = ((c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.sharedMemBytes, c.hStream), attrs, fn,
                          read_params(params, bound.packed[1]), extra)

        d = cuda_with(cuLaunchKernel=StandIn(plain), cuLaunchKernelEx=StandIn(ex))
        bound.run(d, 0x5000)
        fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra = seen["plain"]
        self.assertEqual((fn, gx, gy, gz, bx, by, bz, shared, stream, extra), ("f0", 188, 1, 1, 256, 1, 1, 0, 0x5000, None))
        want = bound.packed[0]
        self.assertEqual([p for p, _ in params], [want.data[o:o + 8] for o in want.offsets])
        self.assertTrue(all(ok for _, ok in params))
        cfg, attrs, fn, params, extra = seen["ex"]
        self.assertEqual(cfg, (264, 2, 1, 128, 65536, 0x5000))
        self.assertEqual([a[:20] for a in attrs], [struct.pack("<i4x3I", 4, 2, 1, 1), struct.pack("<i4xI", 6, 1) + bytes(8)])
        self.assertEqual(params[0][0], bound.packed[1].data[:128])
        self.assertTrue(params[0][1], "the tensor map is 64-byte aligned")

    def test_relaunch_reuses_the_parameter_block(self):
        plan = rows_plan()
        mem, _ = memory(plan)
        bound = launch.bind(FakeDriver(), plan, ["f0", "f1"], mem)
        seen = []
        d = cuda_with(cuLaunchKernel=StandIn(lambda *a: seen.append((a[9], read_params(a[9], bound.packed[0])))))
        bound.launches, bound.funcs, bound.packed = bound.launches[:1], bound.funcs[:1], bound.packed[:1]
        bound.run(d, 0x5000)
        bound.run(d, 0x6000)
        (p1, r1), (p2, r2) = seen
        self.assertEqual(ctypes.addressof(p1), ctypes.addressof(p2), "one kernelParams array for both launches")
        want = bound.packed[0]
        self.assertEqual([p for p, _ in r2], [want.data[o:o + 8] for o in want.offsets])
        self.assertEqual(r1, r2)

    def test_launch_error_names_the_launch(self):
        plan = rows_plan()
        mem, _ = memory(plan)
        bound = launch.bind(FakeDriver(), plan, ["f0", "f1"], mem)
        d = cuda_with(cuLaunchKernel=StandIn(code=1))
        d.lib = type("Lib", (), {"cuGetErrorName": staticmethod(lambda c, p: 0), "cuGetErrorString": staticmethod(lambda c, p: 0)})()
        with self.assertRaisesRegex(driver.CUDAError, r"cuLaunchKernel.*kernel rows_main, grid \[188, 1, 1\]"):
            bound.run(d, 0)

    def test_no_launch_ex(self):
        plan = rows_plan()
        d = cuda_with(cuLaunchKernelEx=None)
        mem, _ = memory(plan)
        bound = launch.bind(FakeDriver(), plan, ["f0", "f1"], mem)
        # The finalize is clustered: it cannot fall back to plain order.
        with self.assertRaisesRegex(driver.NoDriver, "clusters need CUDA 12.0"):
            bound.run(d, 0)
        plan.launches[1].cluster = [1, 1, 1]
        plan.launches[1].grid = [5, 1, 1]
        bound.plain = False
        bound.run(d, 0)
        self.assertTrue(bound.plain)
        self.assertEqual([c[0] for c in d.fn["cuLaunchKernel"].calls], ["f0", "f0", "f1"])

    def test_encode_tensor_map(self):
        plan = rows_plan()
        spec = plan.launches[1].args[0].tensor_map

        def see(at, dt, rank, base, dims, strides, box, elem, il, sw, l2, oob):
            ctypes.memmove(at, b"\x42" * 128, 128)
            return (at % 64, dt, rank, base, list(dims[:rank]), list(strides[:rank - 1]), list(box[:rank]), list(elem[:rank]), il, sw, l2, oob)

        enc = StandIn(see)
        d = cuda_with(cuTensorMapEncodeTiled=enc)
        got = d.encode_tensor_map(spec, 0x7000)
        self.assertEqual(got, b"\x42" * 128)
        self.assertEqual(enc.calls, [(0, 9, 2, 0x7000, [1536, M], [3072], [64, 32], [1, 1], 0, 3, 2, 0)])


if __name__ == "__main__":
    unittest.main()
