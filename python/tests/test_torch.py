"""gradtune.torch. Without torch (as in CI) only the lazy import is
tested; with torch, the CPU paths: the NF4 format, the fallbacks of the
Functions and the tensor checks. The GPU launches are tested by
python3 -m gradtune.selftest on the H200."""

import importlib.util
import os
import unittest
import warnings

import helpers  # noqa: F401
import gradtune.torch as gtorch

HAVE_TORCH = importlib.util.find_spec("torch") is not None
SKIP = "torch is not installed (CI has none); the GPU paths run in python3 -m gradtune.selftest"


class LazyImport(unittest.TestCase):
    @unittest.skipIf(HAVE_TORCH, "torch is installed: the missing-torch message cannot be seen")
    def test_says_what_to_install(self):
        with self.assertRaisesRegex(ImportError, r"gradtune.torch needs PyTorch \(pip install torch\)"):
            gtorch.rms_norm

    def test_unknown_name(self):
        with self.assertRaises(AttributeError):
            gtorch.no_such_name


@unittest.skipUnless(HAVE_TORCH, SKIP)
class NF4(unittest.TestCase):
    def setUp(self):
        import torch

        self.torch = torch
        torch.manual_seed(0)

    def test_layout(self):
        torch = self.torch
        # One block of 64: element 2j in the high nibble of byte j.
        from gradtune._torch import NF4_CODEBOOK

        book = torch.tensor(NF4_CODEBOOK)
        codes = torch.arange(64) % 16
        w = (book[codes] * 0.5).view(1, 64)
        q = gtorch.NF4Weight.quantize(w, 64, double_quant=False)
        self.assertEqual(q.absmax.tolist(), [0.5])
        self.assertEqual(q.w4[:4].tolist(), [0x01, 0x23, 0x45, 0x67])
        self.assertEqual(q.w4.numel(), 32)
        self.assertTrue(torch.equal(q.dequantize(torch.float32), w))
        self.assertEqual(q.shape_text(m=4, n=1, k=64), "m=4,n=1,k=64")

    def test_round_trip(self):
        torch = self.torch
        w = torch.randn(96, 128) * 0.02
        for dq in (False, True):
            q = gtorch.NF4Weight.quantize(w, 64, double_quant=dq)
            self.assertEqual(set(q.buffers()), {"w4", "absmax"} if not dq else {"w4", "absmax_q", "code2", "absmax2", "dq_offset"})
            back = q.dequantize(torch.float32)
            blocks = w.abs().view(-1, 64).amax(1)
            # Half the widest gap of the codebook (0.304) of each block's absmax,
            # plus the double-quantized scale's error.
            err = (back - w).abs().view(-1, 64).amax(1)
            self.assertTrue(bool((err <= blocks * 0.16 + (5e-4 if dq else 0)).all()), err.max())
            if dq:
                # Half the widest gap of the dynamic map (0.9/64 near 1) of absmax2.
                self.assertLessEqual((q.scales() - blocks).abs().max().item(), 0.0071 * q.absmax2.max().item())
                self.assertEqual(q.shape_text(n=96, k=128), "n=96,k=128,scales=dq")

    def test_dynamic_map(self):
        from gradtune._torch import dynamic_map

        m = dynamic_map()
        self.assertEqual(len(m), 256)
        self.assertEqual(m, sorted(m))
        self.assertEqual(m[-1], 1.0)
        self.assertIn(0.0, m)
        self.assertTrue(all(-1 <= v <= 1 for v in m))


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Fallbacks(unittest.TestCase):
    """On CPU tensors every Function takes the torch path; its gradients are
    plain autograd's."""

    def setUp(self):
        import torch

        self.torch = torch
        torch.manual_seed(1)

    def grads(self, fn, *xs):
        xs = [x.detach().clone().requires_grad_(True) for x in xs]
        y = fn(*xs)
        y.backward(self.dy if self.dy.shape == y.shape else self.torch.ones_like(y))
        return [x.grad for x in xs]

    def check(self, ours, theirs, xs, rtol):
        torch = self.torch
        self.dy = torch.randn(ours(*xs).shape, dtype=xs[0].dtype)
        for a, b in zip(self.grads(ours, *xs), self.grads(theirs, *xs)):
            self.assertTrue(torch.allclose(a.float(), b.float(), rtol=rtol, atol=rtol * b.abs().max().item()), (a - b).abs().max())

    def test_activations(self):
        torch = self.torch
        x = torch.randn(8, 32)
        self.check(gtorch.silu, torch.nn.functional.silu, (x,), 1e-6)
        self.check(gtorch.relu, torch.relu, (x,), 0)
        self.check(gtorch.gelu_tanh, lambda x: torch.nn.functional.gelu(x, approximate="tanh"), (x,), 1e-6)

    def test_linear_cross_entropy(self):
        torch = self.torch
        x, w = torch.randn(12, 64), torch.randn(40, 64) * 0.1
        labels = torch.randint(0, 40, (12,))
        labels[3] = -100
        for eps, z in ((0.0, 0.0), (0.1, 1e-3)):
            def theirs(x, w):
                logits = x @ w.t()
                ce = torch.nn.functional.cross_entropy(logits, labels, ignore_index=-100, label_smoothing=eps, reduction="none")
                valid = labels != -100
                return (ce + z * torch.logsumexp(logits, -1).square() * valid).sum() / valid.sum()

            self.check(lambda x, w: gtorch.linear_cross_entropy(x, w, labels, eps, z), theirs, (x, w), 1e-5)
            self.assertAlmostEqual(gtorch.linear_cross_entropy(x, w, labels, eps, z).item(), theirs(x, w).item(), places=5)

    def test_smooth_text(self):
        from gradtune._torch import _smooth_text

        self.assertEqual([_smooth_text(e) for e in (0.0, 0.1, 0.05, 0.125, 0.1234, 1.0)], ["0", "0.1", "0.05", "0.125", None, None])

    def test_swiglu(self):
        torch = self.torch
        self.check(gtorch.swiglu, lambda g, u: torch.nn.functional.silu(g) * u, (torch.randn(8, 32), torch.randn(8, 32)), 1e-6)

    def test_rope(self):
        torch = self.torch
        t, d = 5, 16
        ang = torch.arange(t)[:, None] * torch.rand(d // 2)[None, :]
        cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()

        def plain(q, k):
            rot = lambda x: torch.cat((-x[..., d // 2:], x[..., :d // 2]), -1)  # noqa: E731
            c, s = cos[:, None, :], sin[:, None, :]
            return torch.cat(((q * c + rot(q) * s).flatten(), (k * c + rot(k) * s).flatten()))

        def ours(q, k):
            return torch.cat([y.flatten() for y in gtorch.rope(q, k, cos, sin)])

        self.check(ours, plain, (torch.randn(t, 3, d), torch.randn(t, 2, d)), 1e-6)
        with self.assertRaises(gtorch.BadTensor):
            gtorch.rope(torch.randn(t, 3, d), torch.randn(t, 2, d), cos[:, :4], sin)

    def test_rms_norm(self):
        torch = self.torch
        x, w = torch.randn(6, 64), torch.rand(64) + 0.5

        def ref(x, w):
            return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

        self.check(lambda x, w: gtorch.rms_norm(x, w, 1e-6), ref, (x, w), 1e-5)

    def test_linear(self):
        torch = self.torch
        self.check(lambda x, w, b: gtorch.linear(x, w, b), torch.nn.functional.linear,
                   (torch.randn(4, 5, 32), torch.randn(16, 32), torch.randn(16)), 1e-5)

    def test_nf4_lora(self):
        torch = self.torch
        q = gtorch.NF4Weight.quantize(torch.randn(48, 64) * 0.05, 64, True)
        x, a, b = torch.randn(10, 64), torch.randn(4, 64) * 0.1, torch.randn(48, 4) * 0.1

        def ref(x, a, b):
            return x @ q.dequantize(torch.float32).t() + 2.0 * ((x @ a.t()) @ b.t())

        self.check(lambda x, a, b: gtorch.nf4_lora_linear(x, q, a, b, 2.0), ref, (x, a, b), 1e-5)


@unittest.skipUnless(HAVE_TORCH, SKIP)
class TensorChecks(unittest.TestCase):
    def test_refuses(self):
        import torch
        from gradtune import table
        from gradtune._torch import BadTensor, Runner

        s = table.load(os.path.join(helpers.TESTDATA, "synthetic"))
        m = s.lookup(table.GPU("Test GPU A", "9.0"), "rows_bwd", "bf16", "m=100,n=1536")
        r = Runner.__new__(Runner)
        r.kernel, r.device, r.plan = "rows_bwd", torch.device("cpu"), m.plan(132)
        b = r.plan.buffer("dy")
        r._check(b, torch.empty(100 * 1536, dtype=torch.bfloat16))
        for t, want in ((torch.empty(100 * 1536, dtype=torch.float16), "dtype torch.float16, want torch.bfloat16"),
                        (torch.empty(99 * 1536, dtype=torch.bfloat16), "152064 elements"),
                        (torch.empty(1536, 100, dtype=torch.bfloat16).t(), "not contiguous"),
                        (torch.empty(100 * 1536 + 1, dtype=torch.bfloat16)[1:], "address 0x[0-9a-f]+ is not 16-byte aligned")):
            with self.subTest(want=want), self.assertRaisesRegex(BadTensor, "rows_bwd: buffer dy: " + want):
                r._check(b, t)

    def test_alloc(self):
        """A buffer the caller does not give is allocated with the entry's
        dtype and size, zeroed when it accumulates, never under 16 bytes."""
        import torch
        from gradtune.contract import BufferSpec
        from gradtune._torch import _alloc

        acc = _alloc(BufferSpec("dw", "f32", 1536, "accumulate"), torch.device("cpu"), zero=True)
        self.assertEqual((acc.dtype, acc.numel(), acc.abs().sum().item()), (torch.float32, 1536, 0.0))
        tiny = _alloc(BufferSpec("flag", "bf16", 1, "state"), torch.device("cpu"), zero=False)
        self.assertEqual(tiny.numel(), 1)
        self.assertGreaterEqual(tiny.untyped_storage().nbytes(), 16)


if __name__ == "__main__":
    unittest.main()
