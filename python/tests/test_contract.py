"""resolve() and the tensor-map checks: the cases of contract's
TestResolve, TestResolveRefuses, TestResolveMapOffset, TestTensorMapCheck,
TestTensorMapOffset and TestTensorMapOffsetJSON."""

import copy
import re
import unittest

import helpers  # noqa: F401  (puts python/ on the path)
from gradtune import contract
from gradtune.contract import Arg, Buffer, Launch, TensorMap, TensorMapSpec
from gradtune.errors import BadProgram, DecodeError
from gradtune.expr import cdiv, const, div, var


def two_launches():
    """A program over m rows: a persistent grid capped at two CTAs per SM
    and rounded to clusters of 2, then a dependent launch."""
    m = var("m")
    bufs = [Buffer("x", "bf16", m * 64, "input"), Buffer("y", "f32", m, "output"), Buffer("flags", "f32", const(4), "state")]
    ls = [
        Launch("a", [cdiv(m, 8), const(1), const(1)], [128, 1, 1], [2, 1, 1], 100 << 10, False, [
            Arg("tensor_map", tensor_map=TensorMap("x", "bf16", [const(64), m], [const(128)], [64, 32], swizzle=128)),
            Arg("pointer", buffer="flags"), Arg("scalar", type="u32", value=m)], grid_per_sm=2, ctas_per_sm=2),
        Launch("b", [const(1)] * 3, [32, 1, 1], [0, 0, 0], 0, True,
               [Arg("pointer", buffer="y", offset=const(4)), Arg("scalar", type="u64", value=const(7))]),
    ]
    return ls, bufs


class Resolve(unittest.TestCase):
    def test_resolve(self):
        ls, bufs = two_launches()
        for m, sms, grid in ((1000, 132, 124), (1000, 10, 20), (3, 132, 2)):
            p = contract.resolve(ls, bufs, {"m": m, "sms": sms})
            a, b = p.launches
            self.assertEqual((a.grid, a.cluster, a.opt_in, a.clustered), ([grid, 1, 1], [2, 1, 1], True, True))
            tm = a.args[0].tensor_map
            self.assertEqual((tm.dims[1], tm.l2_promotion, tm.interleave, tm.oob_fill, tm.elem_strides), (m, 128, "none", "zero", [1, 1]))
            self.assertEqual((a.args[2].type, a.args[2].scalar), ("u32", m))
            self.assertEqual((a.max_carveout, b.max_carveout), (True, False))
            self.assertEqual((b.cluster, b.clustered, b.dependent, b.args[0].offset, b.args[1].scalar), ([1, 1, 1], False, True, 4, 7))
            self.assertEqual((p.buffer("y").elems, p.buffer("y").nbytes), (m, 4 * m))
            self.assertEqual(p.referenced(), {"x", "flags", "y"})

    def test_when(self):
        # A launch whose when is 0 or less is left out; the plan's first
        # launch is then not dependent.
        ls, bufs = two_launches()
        ls[0].when = var("m") - const(100)
        for m, entries, dep in ((101, ["a", "b"], True), (100, ["b"], False), (7, ["b"], False)):
            p = contract.resolve(ls, bufs, {"m": m, "sms": 132})
            self.assertEqual(([l.entry for l in p.launches], p.launches[-1].dependent), (entries, dep))
        ls[0].when = contract.decode_launch(dict(entry="a", grid=[1, 1, 1], block=[32, 1, 1], cluster=[1, 1, 1], shared_bytes=0,
                                                  shared_opt_in=False, dependent=False, args=[], when=0)).when
        self.assertEqual([l.entry for l in contract.resolve(ls, bufs, {"m": 1000, "sms": 132}).launches], ["b"])  # when 0: never
        ls[0].when = var("n")
        with self.assertRaisesRegex(BadProgram, r"launch 0 \(a\): when: .*\"n\""):
            contract.resolve(ls, bufs, {"m": 64, "sms": 132})

    def test_refuses(self):
        def edit(f):
            return f

        cases = [
            ("no sms", None, {"m": 64}, 'needs the device\'s multiprocessor count ("sms")'),
            ("no m", None, {"sms": 132}, 'variable "m" has no value'),
            ("dependent first", lambda ls, b: setattr(ls[0], "dependent", True), None, "the first launch of a program must not be"),
            ("unknown buffer", lambda ls, b: setattr(ls[1].args[0], "buffer", "z"), None, 'unknown buffer "z"'),
            ("duplicate buffer", lambda ls, b: b.append(b[0]), None, "declared twice"),
            ("bad role", lambda ls, b: setattr(b[0], "role", "temp"), None, 'role "temp"'),
            ("block", lambda ls, b: setattr(ls[0], "block", [2048, 1, 1]), None, "want 1 to 1024 threads"),
            ("block zero", lambda ls, b: setattr(ls[0], "block", [0, 1, 1]), None, "block [0 1 1]: want 1 to 1024 threads"),
            ("cluster size", lambda ls, b: setattr(ls[0], "cluster", [32, 1, 1]), None, "at most 16"),
            ("grid not whole clusters", lambda ls, b: (setattr(ls[0], "grid_per_sm", 0), ls[0].grid.__setitem__(1, const(3)),
                                                       setattr(ls[0], "cluster", [1, 2, 1])), None, "is not a multiple of its cluster"),
            ("map beyond the buffer", lambda ls, b: setattr(b[0], "elems", const(64)), None, "but the buffer has 128"),
            ("bad map", lambda ls, b: ls[0].args[0].tensor_map.box.__setitem__(0, 128), None, "more than the 128-byte swizzle span"),
            ("offset past the end", lambda ls, b: setattr(ls[1].args[0], "offset", const(1 << 20)), None, "past the end of y"),
            ("scalar too large", lambda ls, b: setattr(ls[0].args[2], "value", const(1 << 40)), None, "does not fit u32"),
            ("negative scalar", lambda ls, b: setattr(ls[1].args[1], "value", const(-1)), None, "scalar -1 = -1 does not fit u64"),
            ("negative shared", lambda ls, b: setattr(ls[1], "shared_bytes", -1), None, "shared memory -1 bytes"),
            ("no entry", lambda ls, b: setattr(ls[1], "entry", ""), None, "no entry name"),
            ("map offset misaligned", lambda ls, b: setattr(ls[0].args[0].tensor_map, "offset", const(8)), None,
             "tensor map of x: offset 8 bytes: want a multiple of 16 bytes"),
            ("ctas_per_sm negative", lambda ls, b: setattr(ls[1], "ctas_per_sm", -1), None, "ctas_per_sm -1"),
            ("map offset negative", lambda ls, b: setattr(ls[0].args[0].tensor_map, "offset", const(-16)), None,
             "offset -16 bytes: want a multiple of 16 bytes, at least 0"),
            # x is exactly the map's 64 x m bf16 elements: an offset of one
            # row runs the map's last row past it.
            ("map past the buffer by its offset", lambda ls, b: setattr(ls[0].args[0].tensor_map, "offset", const(128)), None,
             "tensor map of x: dims [64 64] with strides [128] span 8192 bytes from offset 128 (to byte 8320), but the buffer has 8192"),
        ]
        for name, f, env, want in cases:
            with self.subTest(case=name):
                ls, bufs = two_launches()
                if f:
                    f(ls, bufs)
                with self.assertRaises(BadProgram) as cm:
                    contract.resolve(ls, bufs, env or {"m": 64, "sms": 132})
                self.assertIn(want, str(cm.exception))
                self.assertTrue(str(cm.exception).startswith("program cannot be launched as described: "))

    def test_map_offset(self):
        # x's second half as a map of its own.
        ls, bufs = two_launches()
        m = ls[0].args[0].tensor_map
        m.offset = var("m") * 64
        m.dims[1] = div(var("m"), 2)
        got = contract.resolve(ls, bufs, {"m": 64, "sms": 132}).launches[0].args[0].tensor_map
        self.assertEqual((got.offset, got.dims[1], got.offset + got.end()), (4096, 32, 8192))


def row_block():
    """Rows j*c to j*c+c-1 of an f32 weight [v x h]: offset j*c*h*4 bytes."""
    j, c, h = var("j"), var("c"), var("h")
    return TensorMap("w", "f32", [h, c], [h * 4], [32, 8], offset=j * c * h * 4)


def good_map():
    return TensorMap("a", "bf16", [const(512), const(256)], [const(1024)], [64, 128], swizzle=128).resolve({})


class TensorMapCheck(unittest.TestCase):
    def test_check(self):
        good = good_map()
        good.check()
        cases = [
            ("rank 0", lambda m: (setattr(m, "dims", []), setattr(m, "strides", []), setattr(m, "box", []), setattr(m, "elem_strides", [])), "rank 0"),
            ("rank 6", lambda m: (setattr(m, "dims", [8, 1, 1, 1, 1, 1]), setattr(m, "strides", [16] * 5), setattr(m, "box", [8, 1, 1, 1, 1, 1]),
                                  setattr(m, "elem_strides", [1] * 6)), "rank 6"),
            ("strides count", lambda m: setattr(m, "strides", []), "0 strides"),
            ("box count", lambda m: setattr(m, "box", m.box[:1]), "1 box extents"),
            ("dtype", lambda m: (setattr(m, "dtype", "f64"), m.box.__setitem__(0, 16)), "element type f64"),
            ("zero dim", lambda m: m.dims.__setitem__(1, 0), "dims[1] = 0"),
            ("stride not multiple of 16", lambda m: m.strides.__setitem__(0, 1000), "strides[0] = 1000"),
            ("stride too large", lambda m: m.strides.__setitem__(0, 1 << 40), "below 2^40"),
            ("box too large", lambda m: m.box.__setitem__(1, 512), "box[1] = 512"),
            ("box zero", lambda m: m.box.__setitem__(1, 0), "box[1] = 0"),
            ("row not multiple of 16 bytes", lambda m: (m.box.__setitem__(0, 4), setattr(m, "swizzle", 0)), "8 bytes"),
            ("row beyond swizzle span", lambda m: m.box.__setitem__(0, 128), "256 bytes: more than the 128-byte swizzle"),
            ("row beyond 32B swizzle", lambda m: setattr(m, "swizzle", 32), "more than the 32-byte swizzle"),
            ("odd swizzle", lambda m: setattr(m, "swizzle", 256), "swizzle 256"),
            ("element stride", lambda m: m.elem_strides.__setitem__(0, 9), "element_strides[0] = 9"),
            ("interleave", lambda m: setattr(m, "interleave", "8b"), 'interleave "8b"'),
            ("l2 promotion", lambda m: setattr(m, "l2_promotion", 32), "l2_promotion 32"),
            ("fill", lambda m: setattr(m, "oob_fill", "one"), 'oob_fill "one"'),
        ]
        for name, f, want in cases:
            with self.subTest(case=name):
                m = copy.deepcopy(good)
                f(m)
                with self.assertRaises(BadProgram) as cm:
                    m.check()
                self.assertIn(want, str(cm.exception))
        with self.assertRaisesRegex(BadProgram, "not 16-byte aligned"):
            good.check_at(0x10008, 1 << 30)
        with self.assertRaisesRegex(BadProgram, "span 262144 bytes, but the buffer has 262142"):
            good.check_at(0x10000, 512 * 256 * 2 - 2)
        good.check_at(0x10000, 512 * 256 * 2)

    def test_offset(self):
        s = row_block().resolve({"j": 2, "c": 8, "h": 64})
        self.assertEqual((s.offset, s.global_address(0x10000), s.end()), (4096, 0x10000 + 4096, 2048))
        s.check_at(0x10000, 4 * 8 * 64 * 4)
        with self.assertRaisesRegex(BadProgram, re.escape(
                "tensor map of w: dims [64 8] with strides [256] span 2048 bytes from offset 4096 (to byte 6144), but the buffer has 6140")):
            s.check_at(0x10000, 6140)
        for off, want in ((8, "offset 8 bytes: want a multiple of 16 bytes, at least 0"), (4100, "offset 4100 bytes"),
                          (-16, "offset -16 bytes: want a multiple of 16 bytes, at least 0")):
            with self.subTest(offset=off):
                m = copy.deepcopy(s)
                m.offset = off
                with self.assertRaisesRegex(BadProgram, re.escape(want)):
                    m.check()
                with self.assertRaisesRegex(BadProgram, re.escape("tensor map of w: " + want)):
                    m.check_at(0x10000, 1 << 20)
        neg = row_block()
        neg.offset = const(-32)
        with self.assertRaisesRegex(BadProgram, "offset -32 bytes"):
            neg.resolve({"c": 8, "h": 64})
        with self.assertRaisesRegex(BadProgram, 'offset: variable "j" has no value'):
            row_block().resolve({"c": 8, "h": 64})

    def test_end(self):
        m = TensorMap("", "f32", [const(10), const(3), const(2)], [const(48), const(160)], [4, 1, 1]).resolve({})
        self.assertEqual(m.end(), 160 + 2 * 48 + 40)


class Decode(unittest.TestCase):
    def test_arguments(self):
        a = contract.decode_arg({"kind": "scalar", "type": "u32", "value": "m"})
        self.assertEqual((a.kind, a.type, str(a.value)), ("scalar", "u32", "m"))
        for bad in ({"kind": "pointer", "value": 3}, {"kind": "scalar", "type": "f32", "value": 1}, {"kind": "tensor_map"},
                    {"kind": "thing"}, {"kind": "pointer", "buffer": "x", "offset": 0, "extra": 1},
                    {"kind": "pointer", "buffer": "x", "offset": None}):
            with self.subTest(arg=bad), self.assertRaises(DecodeError):
                contract.decode_arg(bad)

    def test_tensor_map_offset(self):
        base = {"buffer": "w", "dtype": "f32", "rank": 1, "dims": [8], "strides": [], "box": [8], "element_strides": [1],
                "interleave": "none", "swizzle": 0, "l2_promotion": 128, "oob_fill": "zero"}
        self.assertEqual(contract.decode_tensor_map(base).offset, const(0))
        self.assertEqual(contract.decode_tensor_map(dict(base, offset=None)).offset, const(0))
        self.assertEqual(contract.decode_tensor_map(dict(base, offset=2048)).offset, const(2048))
        self.assertEqual(str(contract.decode_tensor_map(dict(base, offset="j*c*h*4")).offset), "j*c*h*4")
        for bad in ("j +", 1.5, True):
            with self.subTest(offset=bad), self.assertRaises(DecodeError):
                contract.decode_tensor_map(dict(base, offset=bad))

    def test_launch(self):
        base = {"entry": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "cluster": [1, 1, 1], "shared_bytes": 65536,
                "shared_opt_in": True, "dependent": False, "args": []}
        l = contract.decode_launch(base)
        self.assertEqual((l.cluster, l.opt_in), ([0, 0, 0], True))
        with self.assertRaisesRegex(DecodeError, "shared_opt_in false with 65536 bytes"):
            contract.decode_launch(dict(base, shared_opt_in=False))
        # A Go array: a short grid is padded with zeros, a long one cut.
        self.assertEqual([str(g) for g in contract.decode_launch(dict(base, grid=[4])).grid], ["4", "0", "0"])
        self.assertEqual([str(g) for g in contract.decode_launch(dict(base, grid=[4, 5, 6, 7])).grid], ["4", "5", "6"])
        # Keys match ignoring case, as encoding/json matches them.
        self.assertEqual(contract.decode_launch(dict(base, ENTRY="K")).entry, "K")
        # ctas_per_sm: absent is the driver's choice; past one, the largest carveout.
        self.assertFalse(l.max_carveout)
        self.assertTrue(contract.decode_launch(dict(base, ctas_per_sm=2)).max_carveout)
        with self.assertRaisesRegex(DecodeError, "ctas_per_sm -1"):
            contract.decode_launch(dict(base, ctas_per_sm=-1))
        # when: absent is always; an expression's text or a number.
        self.assertIsNone(l.when)
        self.assertEqual(str(contract.decode_launch(dict(base, when="m-2048")).when), "m - 2048")

    def test_dtypes(self):
        self.assertEqual([contract.parse_dtype(s) for s in ("float32", " BF16", "half", "double", "u8", "i32", "i64")], ["f32", "bf16", "f16", "f64", "u8", "i32", "i64"])
        self.assertEqual([contract.dtype_size(s) for s in ("u8", "i32", "i64")], [1, 4, 8])
        with self.assertRaisesRegex(DecodeError, 'unknown dtype "int8"'):
            contract.parse_dtype("int8")


if __name__ == "__main__":
    unittest.main()
