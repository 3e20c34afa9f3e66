"""Summaries for bench/issue13_h200.sh (see there).

  plan PREV P            kernel spec dtype today-params warm-params, per shape
  median DB KERNEL PARAMS the newest valid median of a variant
  summary PREV P         times, variants/s, speedups, winners, head to head
"""
import collections
import glob
import sqlite3
import sys


def connect(path):
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def winners(paths):
    """(kernel, shape key) -> (median, ci lo, ci hi, params) over databases."""
    out = {}
    for path in paths:
        for k, s, m, lo, hi, par in connect(path).execute(
                "select v.kernel, v.shape_key, e.median_us, e.ci_lo_us, e.ci_hi_us, v.params from winners w "
                "join variants v on v.id = w.variant_id join evaluations e on e.variant_id = v.id "
                "and e.run_id = w.run_id and e.status = 'ok'"):
            out[(k, s)] = (m, lo, hi, par)
    return out


def today_dbs(prev):
    return sorted(glob.glob(prev + "-all-today-*.db"))


def plan(prev, p):
    t, w = winners(today_dbs(prev)), winners([p + "-all-warm.db"])
    for (k, s), (_, _, _, par) in sorted(t.items()):
        dims = s.split(",")
        spec = ",".join(x for x in dims if not x.startswith("dtype="))
        dt = [x.split("=")[1] for x in dims if x.startswith("dtype=")][0]
        print(k, spec, dt, par, w.get((k, s), (0, 0, 0, par))[3])


def median(db, kernel, params):
    row = connect(db).execute(
        "select e.median_us from evaluations e join variants v on v.id = e.variant_id "
        "where v.kernel = ? and v.params = ? and e.status = 'ok' order by e.id desc limit 1",
        (kernel, params)).fetchone()
    print(row[0] if row else "nan")


def times(paths):
    out = {}
    for path in paths:
        for line in open(path):
            name, rc, s = line.split()
            out[name] = (int(rc), float(s))
    return out


def evals(db):
    return connect(db).execute("select count(*) from evaluations").fetchone()[0]


def summary(prev, p):
    t = times(glob.glob(prev + "-times-today-*.txt") + [p + "-times-new.txt"])
    print(f"{'run':<16} {'exit':>4} {'variants':>8} {'seconds':>8} {'variants/s':>10}")
    dbdir = {name: (prev if "today" in name else p) for name in t}
    for name, (rc, s) in sorted(t.items()):
        n = evals(f"{dbdir[name]}-{name}.db")
        print(f"{name:<16} {rc:>4} {n:>8} {s:>8.1f} {n / s:>10.1f}")
    today = sum(s for name, (_, s) in t.items() if name.startswith("all-today-"))
    rms = evals(p + "-rms-pool.db") / t["rms-pool"][1]
    cold, warm = today / t["all-cold"][1], today / t["all-warm"][1]
    print(f"three kernels, every dtype, today: {today:.1f} s (the sum of its per-dtype runs)")
    print(f"check rmsnorm f32 full space >= 60 variants/s: {rms:.1f} -> {'PASS' if rms >= 60 else 'FAIL'}")
    print(f"check three kernels, empty cubin cache >= 3x today: {cold:.2f}x -> {'PASS' if cold >= 3 else 'FAIL'}")
    print(f"check three kernels, warm cubin cache >= 10x today: {warm:.2f}x -> {'PASS' if warm >= 10 else 'FAIL'}")

    tw = winners(today_dbs(prev))
    cw, ww = winners([p + "-all-cold.db"]), winners([p + "-all-warm.db"])
    print()
    print(f"{'kernel':<14} {'shape':<26} {'today µs':>9} {'±CI%':>6} {'cold µs':>8} {'warm µs':>8}  params (today | warm)")
    for key, (m, lo, hi, par) in sorted(tw.items()):
        c, w = cw.get(key, (float("nan"),) * 4), ww.get(key, (float("nan"),) * 4)
        print(f"{key[0]:<14} {key[1]:<26} {m:>9.2f} {100 * (hi - lo) / 2 / m:>6.2f} {c[0]:>8.2f} {w[0]:>8.2f}  {par} | {w[3]}")

    meds = collections.defaultdict(list)
    for line in open(p + "-h2h.txt"):
        k, shape, who, _, med = line.split()
        meds[(k, shape, who)].append(float(med))
    print()
    print("head to head (each winner timed twice, alternating, fresh processes): the warm run's winner is")
    print("within the run-to-run spread when its median is at most max(today's spread, 0.5%) above today's")
    print(f"{'kernel':<14} {'shape':<26} {'today µs':>15} {'warm µs':>15} {'warm/today':>10} {'spread':>7} {'within':>6}")
    ok = True
    for k, shape in sorted({(k, s) for k, s, _ in meds}):
        a, b = meds[(k, shape, "today")], meds[(k, shape, "new")]
        am, bm = sum(a) / len(a), sum(b) / len(b)
        spread = (max(a) - min(a)) / am
        within = bm / am - 1 <= max(spread, 0.005)
        ok &= within
        print(f"{k:<14} {shape:<26} {' '.join(f'{x:.2f}' for x in a):>15} {' '.join(f'{x:.2f}' for x in b):>15} "
              f"{bm / am:>10.3f} {100 * spread:>6.2f}% {'yes' if within else 'NO':>6}")
    print(f"check winners within today's run-to-run spread: {'PASS' if ok else 'FAIL'}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"plan": plan, "median": median, "summary": summary}[cmd](*args)
