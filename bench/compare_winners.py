"""Issue 29 on the H200: do the shards of a tune, merged, give the winners
of the unsplit run? Compares two `tune export --format json` tables entry
by entry (kernel, dtype, shape): the same params, or different params
whose medians lie within each other's 95% CI, agree; anything else, or an
entry only one table has, does not.

Usage: python3 bench/compare_winners.py UNSPLIT.json MERGED.json
Standard library only. Exit 1 when an entry disagrees or is missing.
"""
import json
import sys


def entries(path):
    return {(e["kernel"], e["dtype"], e["shape"]): e for e in json.load(open(path))["entries"]}


def verdict(a, b):
    if a["params"] == b["params"]:
        return "same winner"
    lo_a, hi_a = a["ci_us"]
    lo_b, hi_b = b["ci_us"]
    if lo_a <= b["median_us"] <= hi_a and lo_b <= a["median_us"] <= hi_b:
        return "other winner, within each other's CI"
    return None


def main():
    unsplit, merged = entries(sys.argv[1]), entries(sys.argv[2])
    bad = 0
    for key in sorted(set(unsplit) | set(merged)):
        a, b = unsplit.get(key), merged.get(key)
        name = " ".join(key)
        if a is None or b is None:
            print(f"{name}: only in the {'merged' if a is None else 'unsplit'} run")
            bad += 1
            continue
        v = verdict(a, b)
        print(f"{name}: {v or 'DISAGREE'} ({a['params']} {a['median_us']:.2f} µs, {b['params']} {b['median_us']:.2f} µs)")
        bad += v is None
    print(f"{len(set(unsplit) | set(merged))} entries, {bad} disagree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
