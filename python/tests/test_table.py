"""Tables: shapes, launchability, plans at runtime dims, loading and PTX
files, on the committed tables and the synthetic ones."""

import json
import os
import shutil
import tempfile
import unittest

from helpers import CONFIGS, TESTDATA
from gradtune import errors, table

H200 = table.GPU("NVIDIA H200", "9.0")
SYNTHETIC = os.path.join(TESTDATA, "synthetic")


class Shapes(unittest.TestCase):
    def test_parse(self):
        s = table.parse_shape("m=2048, n=256,k=1536,grad=dw,p=1.5")
        self.assertEqual((s.sizes, s.choices), ({"m": 2048.0, "n": 256.0, "k": 1536.0, "p": 1.5}, {"grad": "dw"}))
        self.assertEqual(str(s), "grad=dw,k=1536,m=2048,n=256,p=1.5")
        self.assertEqual(str(table.parse_shape("m=1e3,n=0x1p4")), "m=1000,n=16")
        for bad, want in (("m", "is not name=value"), ("=3", "is not name=value"), ("dtype=bf16", "give the dtype apart"),
                          ("m=1,m=2", "m given twice"), ("m=-1", "want a positive number"), ("m=0", "want a positive number"),
                          ("m=Inf", "want a positive number"), ("m= 3", "want a positive number"), ("m=1_000", "want a positive number")):
            with self.subTest(shape=bad), self.assertRaisesRegex(ValueError, want):
                table.parse_shape(bad)

    def test_distance(self):
        a = table.parse_shape("m=1024,n=1536")
        self.assertAlmostEqual(a.distance(table.parse_shape("m=2048,n=1536")), 0.6931471805599453)
        self.assertIsNone(a.distance(table.parse_shape("m=1024")))
        self.assertIsNone(a.distance(table.parse_shape("m=1024,k=1536")))
        self.assertIsNone(table.parse_shape("m=1,grad=dx").distance(table.parse_shape("m=1,grad=dw")))


class Synthetic(unittest.TestCase):
    """The synthetic tables' entries take the token count m at run time and
    size their buffers, grids and tensor maps by expressions of it."""

    def setUp(self):
        self.set = table.load(SYNTHETIC)
        self.gpu = table.GPU("Test GPU A", "9.0")

    def test_order(self):
        self.assertEqual([(t.gpu.name, t.gpu.cc) for t in self.set.tables], [("Test GPU A", "9.0"), ("Test GPU B", "9.0"), ("Test GPU A", "8.0")])

    def test_runtime_plan(self):
        m = self.set.lookup(self.gpu, "rows_bwd", "bf16", "m=3001,n=1536")
        self.assertEqual((m.rule, m.entry.shape), (table.RUNTIME, "m=2048,n=1536"))
        p = m.plan(132)
        self.assertEqual(p.buffer("dy").elems, 3001 * 1536)
        self.assertEqual(p.buffer("partials").elems, -(-3001 // 16) * 1536)
        main, fin = p.launches
        self.assertEqual(main.grid, [188, 1, 1])
        self.assertEqual([(a.type, a.scalar) for a in main.args[5:]], [("u32", 3001), ("u64", 3001 * 1536)])
        self.assertEqual(main.args[2].offset, 3001 * 2)
        # cdiv(3001·1536, 1024) = 4502 CTAs, capped at 2 per SM and whole clusters.
        self.assertEqual((fin.grid, fin.cluster, fin.dependent, fin.opt_in), ([264, 2, 1], [2, 1, 1], True, True))
        self.assertEqual(fin.args[0].tensor_map.dims, [1536, 3001])
        self.assertEqual(m.plan(7).launches[1].grid, [14, 2, 1])

    def test_launchable(self):
        e = self.set.lookup(self.gpu, "rows_bwd", "bf16", "m=2048,n=1536").entry
        e.launchable(table.parse_shape("m=1,n=1536"))
        for shape, want in (("m=65537,n=1536", "m=65537: the entry computes m from 1 to 65536"),
                            ("m=100.5,n=1536", "m=100.5: the entry computes m from 1 to 65536"),
                            ("m=2048,n=1024", "n=1024: the entry's PTX computes n=1536 only"),
                            ("m=2048", "m=2048 has dims {m}, the table's rows_bwd bf16 m=2048,n=1536 has {m,n}")):
            with self.subTest(shape=shape), self.assertRaises(errors.NotLaunchable) as cm:
                e.launchable(table.parse_shape(shape))
            self.assertEqual(str(cm.exception), want)
        with self.assertRaisesRegex(errors.NotLaunchable, "^configs: rows_bwd bf16 m=2048,n=1536: n=1024"):
            e.plan(table.parse_shape("m=2048,n=1024"), 132)

    def test_rules(self):
        for gpu, shape, rule, key, tbl in (
            (self.gpu, "m=2048,n=1536", table.EXACT, "m=2048,n=1536", 0),
            (self.gpu, "m=700,n=1536", table.RUNTIME, "m=512,n=1536", 0),
            # A tie (ln 2 either way) goes to the first entry in table order.
            (self.gpu, "m=1024,n=1536", table.RUNTIME, "m=2048,n=1536", 0),
            (self.gpu, "m=65537,n=1536", table.SAME_CC, "m=4096,n=1536", 1),
            (table.GPU("Test GPU C", "9.0"), "m=2048,n=1536", table.SAME_CC, "m=2048,n=1536", 0),
        ):
            with self.subTest(gpu=gpu, shape=shape):
                m = self.set.lookup(gpu, "rows_bwd", "bf16", shape)
                self.assertEqual((m.rule, m.entry.shape, self.set.tables.index(m.table)), (rule, key, tbl))
        with self.assertRaises(errors.NoConfig):
            self.set.lookup(self.gpu, "rows_bwd", "bf16", "m=200000,n=1536")
        h = self.set.hint(self.gpu, "rows_bwd", "bf16", "m=200000,n=1536")
        self.assertEqual((h.rule, h.entry.shape), (table.NEAREST, "m=2048,n=1536"))
        with self.assertRaises(errors.UnknownGPU):
            self.set.lookup(table.GPU("Test GPU D", "7.5"), "rows_bwd", "bf16", "m=1,n=1536")
        with self.assertRaises(errors.UnknownKernel):
            self.set.lookup(self.gpu, "nothing_bwd", "bf16", "m=1,n=1536")

    def test_fractional_size(self):
        m = self.set.lookup(self.gpu, "pool_like", "f32", "n=9,p=1.5")
        p = m.plan(132)
        self.assertEqual((p.launches[0].args[2].scalar, p.buffer("x").elems), (9, 36))  # p enters the environment as 1


class Committed(unittest.TestCase):
    def setUp(self):
        self.set = table.load(CONFIGS)

    def test_every_entry_exact_with_its_ptx(self):
        n = 0
        for t in self.set.tables:
            for e in t.entries:
                m = self.set.lookup(t.gpu, e.kernel, e.dtype, e.shape)
                self.assertEqual((m.rule, m.entry.params), (table.EXACT, e.params))
                ptx = self.set.ptx(m)
                self.assertIn(b".entry " + e.launches[0].entry.encode(), ptx)
                m.plan(132)
                n += 1
        self.assertEqual(n, 81)  # 18 activations, 9 rows, 4 pool, 8 gemm, 8 nf4, 34 nf4_gemm

    def test_ptx_checked(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        shutil.copy(os.path.join(CONFIGS, "activations.json"), tmp)
        s = table.load(tmp)
        m = s.lookup(H200, "relu_bwd", "f32", "m=2048,n=8960")
        with self.assertRaisesRegex(errors.NoPTX, "No such file"):
            s.ptx(m)
        with open(os.path.join(tmp, m.entry.ptx), "w") as f:
            f.write("not the PTX")
        with self.assertRaisesRegex(errors.NoPTX, "has sha256 .*, the table records " + m.entry.ptx_sha256[:12]):
            s.ptx(m)
        m.entry.ptx = ""
        with self.assertRaisesRegex(errors.NoPTX, "exported without PTX files"):
            s.ptx(m)

    def test_load_refuses(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        with self.assertRaisesRegex(errors.Malformed, "no tables"):
            table.load(tmp)
        path = os.path.join(CONFIGS, "pool.json")
        with self.assertRaisesRegex(ValueError, "given twice"):
            table.load_files(path, path)
        with open(path) as f:
            doc = json.load(f)
        doc["schema"] = 3
        bad = os.path.join(tmp, "new.json")
        with open(bad, "w") as f:
            json.dump(doc, f)
        with self.assertRaises(errors.SchemaTooNew) as cm:
            table.load(tmp)
        self.assertIn("new.json: configs: config table schema is newer", str(cm.exception))
        self.assertIn("the table has schema 3, this gradtune reads schema 2", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
