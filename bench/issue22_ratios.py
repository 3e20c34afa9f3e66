"""Issue 22's table: nf4_gemm_bwd's tuned winners against bitsandbytes'
path (dequantize, then torch's matmul) and against torch's matmul on the
already dequantized weight, measured in the same session.

Usage: python3 bench/issue22_ratios.py TABLE.json PEERS.jsonl OUT.txt [RUN.db]
TABLE.json is `tune export --format json` of the run (its medians are the
final round's); PEERS.jsonl is bench/peers_nf4.py's output. With RUN.db
(the run's database) the table also gives each winner against the
harness's own dequant+cublas baseline of the same run (nf4_dequant's
kernel, then cuBLAS, timed as one run in the worker): a stronger
unfused path than the peer's, whose dequantization is Triton's.
Standard library only. Exit 1 when a case has no peer row.
"""
import json
import math
import sqlite3
import sys


def key(shape):
    d = dict(kv.split("=") for kv in shape.split(","))
    return int(d["m"]), int(d["n"]), int(d["k"]), d.get("scales", "f32")


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def harness_unfused(db):
    """The last valid dequant+cublas median of each bf16 shape in db."""
    rows = sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute(
        "select v.shape_key, e.median_us from evaluations e join variants v on v.id = e.variant_id "
        "where v.kernel = 'nf4_gemm_bwd' and v.params = 'baseline=dequant+cublas' and e.status = 'ok' "
        "and e.mode = 'cold' order by e.id")
    got = {}
    for shape, us in rows:
        d = dict(kv.split("=") for kv in shape.split(","))
        if d.pop("dtype") == "bf16":
            got[key(",".join(f"{k}={v}" for k, v in d.items()))] = us
    return got


def main():
    table, peers_path, out = sys.argv[1:4]
    harness = harness_unfused(sys.argv[4]) if len(sys.argv) > 4 else {}
    tuned = {}
    for e in json.load(open(table))["entries"]:
        if e["kernel"] == "nf4_gemm_bwd" and e["dtype"] == "bf16":
            path = dict(kv.split("=") for kv in e["params"].split(","))["dequant"]
            tuned[key(e["shape"])] = (e["median_us"], path, e["params"])
    unfused, dense = {}, {}
    for line in open(peers_path):
        r = json.loads(line)
        if r["kernel"] != "nf4_gemm_bwd":
            continue
        (dense if "bf16 W" in r["peer"] else unfused)[key(r["shape"])] = r["median_us"]
    lines = [f"{'m×n×k':>16} {'scales':>6} {'tuned µs':>9} {'deq+mm µs':>9} {'mm µs':>8} {'vs deq+mm':>9} {'vs mm':>6} {'vs h-deq':>8}  winner"]
    vs_unfused, vs_dense, vs_harness, missing = [], [], [], []
    for k in sorted(tuned, key=lambda k: (k[0], k[1], k[2], k[3])):
        us, path, params = tuned[k]
        if k not in unfused or k not in dense:
            missing.append(k)
            continue
        a, b = unfused[k] / us, dense[k] / us
        vs_unfused.append(a)
        vs_dense.append(b)
        flag = "  < 1.0" if a < 1 else ""
        h = ""
        if k in harness:
            vs_harness.append(harness[k] / us)
            h = f"{vs_harness[-1]:8.3f}"
        lines.append(f"{k[0]:>5}×{k[1]:>5}×{k[2]:<5} {k[3]:>6} {us:9.2f} {unfused[k]:9.2f} {dense[k]:8.2f} {a:9.3f} {b:6.3f} {h:>8}  {path}{flag}  [{params}]")
    lines.append(f"geomean over {len(vs_unfused)} cases: {geomean(vs_unfused):.3f} vs dequantize + matmul (issue 22: every case >= 1.0, "
                 f"geomean >= 1.15), {geomean(vs_dense):.3f} vs matmul on the bf16 weight (beyond the issue: >= 0.95); "
                 f"lowest {min(vs_unfused, default=float('nan')):.3f}")
    if vs_harness:
        lines.append(f"against the harness's dequant+cublas ({len(vs_harness)} cases): geomean {geomean(vs_harness):.3f}, "
                     f"lowest {min(vs_harness):.3f}")
    for k in missing:
        lines.append(f"no peer row for m={k[0]},n={k[1]},k={k[2]} scales={k[3]}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    open(out, "w").write(text)
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
