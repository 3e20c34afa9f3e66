#!/usr/bin/env bash
# Issue 13 on the H200: tuning off the JIT's critical path. Run from the
# repository root on the GPU host with bin/tune built from this branch;
# everything goes to ${OUT:-out}/issue13-*. Safe to re-run (it deletes its
# own databases and cubin cache first). About 12 minutes of GPU time.
#
# "Today" is the same binary run as before this branch: the worker
# JIT-compiles every variant itself (--compile-helpers 0) and samples every
# variant to convergence (--no-abandon); TUNE_BASE=path runs another binary
# (a build of main) for it instead. All runs use CUDA_CACHE_DISABLE=1, so
# the driver's own compute cache never answers.
#
#   1. rmsnorm_bwd f32 [2048x1536], the full space: today, then with the
#      compile pool (8 helpers on 16 cores) and an empty cubin cache
#   2. tune --kernel rmsnorm_bwd,layernorm_bwd,softmax_bwd --shapes qwen1.5b:
#      today, pool with an empty cubin cache, pool with the warm cache
#   3. the summary: variants/s, speedups, the done-when checks, and each
#      shape's winner today and with the pool (medians, CI, difference)
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export CUDA_CACHE_DISABLE=1
tune=./bin/tune
base=${TUNE_BASE:-$tune}
p=$out/issue13
cache=$p-cubins
for n in rms-today rms-pool all-today all-cold all-warm; do rm -f "$p-$n.db" "$p-$n.db-wal" "$p-$n.db-shm"; done
rm -rf "$cache"
rows='rmsnorm_bwd,layernorm_bwd,softmax_bwd'
# DTYPES=f32 limits the whole-preset runs to one dtype (a third of the
# time), for a device session that cannot spend 12 minutes on them.
dtypes=()
[ -n "${DTYPES:-}" ] && dtypes=(--dtype "$DTYPES")
today_flags=(--compile-helpers 0 --no-abandon)
[ "$base" != "$tune" ] && today_flags=()

timed() { # timed NAME COMMAND...: run, keep the output, record seconds and exit code
  local name=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$@" > "$p-$name.out" 2> "$p-$name.err"
  local rc=$?
  t1=$(date +%s.%N)
  echo "$name $rc $(python3 -c "print(f'{$t1-$t0:.1f}')")" >> "$p-times.txt"
  echo "== $name: exit $rc, $(tail -1 "$p-times.txt" | cut -d' ' -f3) s"
}
: > "$p-times.txt"

timed rms-today "$base" --kernel rmsnorm_bwd --shapes m=2048,n=1536 --dtype f32 "${today_flags[@]}" --db "$p-rms-today.db"
timed rms-pool  "$tune" --kernel rmsnorm_bwd --shapes m=2048,n=1536 --dtype f32 --cubin-cache "$cache-rms" --db "$p-rms-pool.db"
timed all-today "$base" --kernel "$rows" --shapes qwen1.5b "${dtypes[@]}" "${today_flags[@]}" --db "$p-all-today.db"
timed all-cold  "$tune" --kernel "$rows" --shapes qwen1.5b "${dtypes[@]}" --cubin-cache "$cache" --db "$p-all-cold.db"
timed all-warm  "$tune" --kernel "$rows" --shapes qwen1.5b "${dtypes[@]}" --cubin-cache "$cache" --db "$p-all-warm.db"
grep -h "compile pool" "$p"-*.out

python3 - "$p" <<'PY'
import sqlite3, sys
p = sys.argv[1]
times = {l.split()[0]: (int(l.split()[1]), float(l.split()[2])) for l in open(p + "-times.txt")}
def evals(name):
    db = sqlite3.connect(f"file:{p}-{name}.db?mode=ro", uri=True)
    n = db.execute("select count(*) from evaluations").fetchone()[0]
    w = {(k, s): (m, lo, hi, par) for k, s, m, lo, hi, par in db.execute(
        "select v.kernel, v.shape_key, e.median_us, e.ci_lo_us, e.ci_hi_us, v.params from winners w "
        "join variants v on v.id = w.variant_id join evaluations e on e.variant_id = v.id and e.run_id = w.run_id and e.status = 'ok'")}
    return n, w
print(f"{'run':<12} {'exit':>4} {'variants':>8} {'seconds':>8} {'variants/s':>10}")
res = {}
for name in ["rms-today", "rms-pool", "all-today", "all-cold", "all-warm"]:
    rc, s = times[name]
    n, w = evals(name)
    res[name] = (n, s, w)
    print(f"{name:<12} {rc:>4} {n:>8} {s:>8.1f} {n/s:>10.1f}")
rms = res["rms-pool"][0] / res["rms-pool"][1]
cold = res["all-today"][1] / res["all-cold"][1]
warm = res["all-today"][1] / res["all-warm"][1]
print(f"check rmsnorm f32 full space >= 60 variants/s: {rms:.1f} -> {'PASS' if rms >= 60 else 'FAIL'}")
print(f"check three kernels, empty cubin cache >= 3x today: {cold:.2f}x -> {'PASS' if cold >= 3 else 'FAIL'}")
print(f"check three kernels, warm cubin cache >= 10x today: {warm:.2f}x -> {'PASS' if warm >= 10 else 'FAIL'}")
print(f"{'kernel':<14} {'shape':<26} {'today µs':>9} {'±CI%':>6} {'cold µs':>8} {'warm µs':>8} {'cold/today':>10} {'within':>6}")
ok = True
for key, (m, lo, hi, par) in sorted(res["all-today"][2].items()):
    half = (hi - lo) / 2 / m
    row = [res[r][2].get(key) for r in ("all-cold", "all-warm")]
    meds = [x[0] if x else float("nan") for x in row]
    # within the run-to-run spread: the new winner's median inside today's
    # winner's CI widened by 1% (the A/A spread of a whole run, issue 14)
    within = all(abs(x / m - 1) <= half + 0.01 for x in meds)
    ok &= within
    print(f"{key[0]:<14} {key[1]:<26} {m:>9.2f} {100*half:>6.2f} {meds[0]:>8.2f} {meds[1]:>8.2f} {meds[0]/m:>10.3f} {'yes' if within else 'NO':>6}")
print(f"check winners within the run-to-run spread of today's: {'PASS' if ok else 'FAIL'}")
PY
