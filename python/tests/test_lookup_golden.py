"""The lookup golden file (written by `go test ./configs -run
TestLookupGolden -update`): the Python lookup, hint and resolve give the Go
answers for every ask, on the committed tables and the synthetic ones."""

import hashlib
import json
import math
import os
import unittest

from helpers import REPO, TESTDATA
from gradtune import errors, table

_ERRORS = {"unknown_gpu": errors.UnknownGPU, "unknown_kernel": errors.UnknownKernel, "no_config": errors.NoConfig}


def _ints(vs):
    return "[" + " ".join(str(v) for v in vs) + "]"


def arg_text(a):
    if a.kind == "pointer":
        return f"pointer {a.buffer}+{a.offset}"
    if a.kind == "tensor_map":
        m = a.tensor_map
        off = f" offset={m.offset}" if m.offset else ""
        return (f"tensor_map {m.buffer}{off} {m.dtype} dims={_ints(m.dims)} strides={_ints(m.strides)} box={_ints(m.box)} "
                f"element_strides={_ints(m.elem_strides)} swizzle={m.swizzle} interleave={m.interleave} "
                f"l2_promotion={m.l2_promotion} oob_fill={m.oob_fill}")
    return f"{a.type} {a.scalar}"


def plan_of(match, sms):
    try:
        p = match.plan(sms)
    except errors.GradtuneError as e:
        return {"buffers": None, "launches": None, "error": str(e)}
    return {
        "buffers": [f"{b.name} {b.dtype} {b.elems} {b.role}" for b in p.buffers],
        "launches": [{"launch": f"{l.entry} grid={_ints(l.grid)} block={_ints(l.block)} cluster={_ints(l.cluster)} "
                                f"shared={l.shared_bytes} opt_in={str(l.opt_in).lower()} dependent={str(l.dependent).lower()}",
                      "args": [arg_text(a) for a in l.args] or None} for l in p.launches],
    }


class LookupGolden(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(TESTDATA, "lookups.json")) as f:
            cls.golden = json.load(f)

    def test_sets(self):
        self.assertEqual([s["name"] for s in self.golden["sets"]], ["committed", "synthetic"])
        for s in self.golden["sets"]:
            with self.subTest(set=s["name"]):
                self.check_set(s)

    def check_set(self, g):
        paths = [os.path.join(REPO, p) for p in g["tables"]]
        for rel, path in zip(g["tables"], paths):
            with open(path, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), g["sha256"][rel],
                                 f"{rel} changed since the golden file was written: go test ./configs -run TestLookupGolden -update")
        s = table.load_files(*paths)
        self.assertGreater(len(g["asks"]), 100)
        if g["name"] == "committed":
            # Every committed entry is asked for at its tuned shape.
            asked = {(a["kernel"], a["dtype"], a["shape"]) for a in g["asks"]}
            for t in s.tables:
                for e in t.entries:
                    self.assertIn((e.kernel, e.dtype, str(e.tuned_shape())), asked)
        failures = []
        for a in g["asks"]:
            gpu = table.GPU(a["gpu"]["name"], a["gpu"]["cc"])
            for name, find, want in (("lookup", s.lookup, a["lookup"]), ("hint", s.hint, a["hint"])):
                got = self.answer(s, find, gpu, a, want)
                if got is not None:
                    failures.append(f"{name} {a['gpu']} {a['kernel']} {a['dtype']} {a['shape']}: {got}")
        self.assertEqual(failures[:10], [], f"{len(failures)} answers differ")

    def answer(self, s, find, gpu, a, want):
        """None when the answer is the golden one, else what differs."""
        try:
            m = find(gpu, a["kernel"], a["dtype"], a["shape"])
        except errors.NoEntry as e:
            if "error" not in want:
                return f"raised {e!r}, want {want['rule']} {want['entry']}"
            if not isinstance(e, _ERRORS[want["error"]]) or str(e) != want["message"]:
                return f"raised {type(e).__name__}: {e}\n want {want['error']}: {want['message']}"
            return None
        if "error" in want:
            return f"found {m.rule} {m.entry.key}, want {want['error']}"
        got = (m.rule, s.tables.index(m.table), m.entry.key)
        if got != (want["rule"], want["table"], want["entry"]):
            return f"found {got}, want {(want['rule'], want['table'], want['entry'])}"
        if not math.isclose(m.distance, want["distance"], rel_tol=1e-9, abs_tol=1e-9):
            return f"distance {m.distance}, want {want['distance']}"
        for sms, plan in want.get("plans", {}).items():
            p = plan_of(m, int(sms))
            if p.get("error") or plan.get("error"):
                if p.get("error") != plan.get("error"):
                    return f"plan at {sms} SMs: {p.get('error')}, want {plan.get('error')}"
                continue
            if p != {k: plan[k] for k in ("buffers", "launches")}:
                return f"plan at {sms} SMs:\n got  {json.dumps(p)}\n want {json.dumps(plan)}"
        return None


if __name__ == "__main__":
    unittest.main()


class ExpressionsAndRefusalsGolden(unittest.TestCase):
    """The golden file's expression cases (printed form, value, errors word
    for word) and the tables configs.Parse refuses (the same exception, the
    same message where it is not encoding/json's)."""

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(TESTDATA, "lookups.json")) as f:
            cls.golden = json.load(f)

    def test_expressions(self):
        from gradtune import expr

        self.assertGreater(len(self.golden["expressions"]), 40)
        for c in self.golden["expressions"]:
            with self.subTest(text=c["text"]):
                try:
                    e = expr.parse(c["text"])
                except expr.ExprError as err:
                    self.assertEqual(str(err), c.get("parse_error"))
                    continue
                self.assertNotIn("parse_error", c)
                self.assertEqual(str(e), c["printed"])
                self.assertEqual(expr.parse(str(e)), e, "the printed form reads back as the same expression")
                try:
                    self.assertEqual(e.eval(c["env"]), c["value"])
                    self.assertNotIn("eval_error", c)
                except expr.ExprError as err:
                    self.assertEqual(str(err), c.get("eval_error"))

    def test_refusals(self):
        kinds = {"malformed": errors.Malformed, "schema_too_new": errors.SchemaTooNew, "schema_too_old": errors.SchemaTooOld}
        self.assertGreater(len(self.golden["refusals"]), 20)
        for c in self.golden["refusals"]:
            with self.subTest(case=c["name"]):
                with self.assertRaises(kinds[c["error"]]) as cm:
                    table.parse(c["table"])
                if c["exact"]:
                    self.assertEqual(str(cm.exception), c["message"])
