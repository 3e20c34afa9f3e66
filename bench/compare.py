#!/usr/bin/env python3
"""Joins a gradtune database with peer measurements into a Markdown table.

For every winner of the newest run of each (kernel, shape) in the database,
prints our median, GB/s, % of the run's copy bandwidth, the peer's median
and the speedup (peer time / our time).

Usage: python3 bench/compare.py --db tune.db --peers peers.jsonl [--out results.md]
"""
import argparse
import json
import sqlite3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--out")
    a = ap.parse_args()
    peers = {}
    copy = None
    for line in open(a.peers):
        r = json.loads(line)
        if r["kernel"] == "copy":
            copy = r
            continue
        peers[(r["kernel"], f"{r['shape']},dtype={r['dtype']}")] = r
    db = sqlite3.connect(a.db)
    q = """SELECT w.kernel, w.shape_key, v.params, e.median_us, e.ci_lo_us, e.ci_hi_us, e.throughput_gbps, r.copy_gbps, r.gpu_name
           FROM winners w JOIN variants v ON v.id = w.variant_id JOIN runs r ON r.id = w.run_id
           JOIN evaluations e ON e.variant_id = w.variant_id AND e.status = 'ok'
           WHERE w.run_id = (SELECT MAX(run_id) FROM winners w2 WHERE w2.kernel = w.kernel AND w2.shape_key = w.shape_key)
           GROUP BY w.kernel, w.shape_key ORDER BY w.kernel, w.shape_key"""
    lines = []
    gpu = None
    lines.append("| kernel | shape | best params | ours µs (95% CI) | ours GB/s | % copy | PyTorch µs | PyTorch GB/s | speedup |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for k, shape, params, med, lo, hi, gbps, copy_gbps, gpu in db.execute(q):
        p = peers.get((k, shape))
        pt = f"{p['median_us']:.2f} | {p['gbps']:.0f} | {p['median_us'] / med:.3f}×" if p else "- | - | -"
        pct = f"{100 * gbps / copy_gbps:.1f}%" if copy_gbps else "-"
        lines.append(f"| {k} | {shape} | {params} | {med:.2f} ({lo:.2f}–{hi:.2f}) | {gbps:.0f} | {pct} | {pt} |")
    head = [f"GPU: {gpu}"]
    if copy:
        head.append(f"PyTorch device-to-device copy (1 GiB, do_bench median): {copy['gbps']:.0f} GB/s")
    text = "\n".join(head + [""] + lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    main()
