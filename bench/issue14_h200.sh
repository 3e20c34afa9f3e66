#!/usr/bin/env bash
# Issue 14 on the H200: the nightly regression gate, GPU telemetry and
# planted faults, end to end on a GPU. Run from the repository root on the
# GPU host with bin/tune built; everything goes to ${OUT:-out}/issue14-*.
# Safe to re-run: it deletes its own databases first and writes nothing
# else. About 5 minutes of GPU time (three bench runs of the 31 committed
# configs and their baselines, about 75 s each; the fault run, about 40 s,
# most of it the watchdog's 22 s deadline on the kernel that never ends).
#
#   1. A/A: two bench runs of configs/h200/*.json           -> a.db, b.db
#   2. the gate on the pair                                 -> expect exit 0
#   3. a third run with one variant made 5% slower          -> c.db
#      (the pool f64 case, 189.5 µs: its program gets one more launch, a
#      single thread spinning on %globaltimer for 5% of the table's median,
#      so the measured slowdown is 5% plus one launch's cost, about 1%)
#   4. the gate on a.db and c.db                            -> expect exit 1
#      naming lp_pool1d_bwd f64
#   5. the planted faults (tune --faults --kernel fault)    -> expect the
#      hang as timeout, the OOB store, trap and brkpt as launch_error, the
#      copy measured, exit 0
#   6. telemetry: tune runs on every database               -> expect the
#      clock columns filled for every timed evaluation
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
tune=./bin/tune
p=$out/issue14
tables=configs/h200/activations.json,configs/h200/rows.json,configs/h200/pool.json
case='lp_pool1d_bwd f64 n=32,c=256,l=4096,window=4,stride=2,p=2'
rm -f "$p"-{a,b,c,faults}.db "$p"-{a,b,c,faults}.db-wal "$p"-{a,b,c,faults}.db-shm

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active \
  --format=csv > "$p-nvidia-smi.csv" 2>&1 || true

declare -A rc
step() { # step NAME COMMAND...: run, keep stdout and stderr, note the exit code
  local name=$1 start=$SECONDS
  shift
  "$@" > "$p-$name.out" 2> "$p-$name.err"
  rc[$name]=$?
  echo "$name: exit ${rc[$name]} ($((SECONDS - start)) s)"
}

step bench-a $tune bench --configs "$tables" --db "$p-a.db"
step bench-b $tune bench --configs "$tables" --db "$p-b.db"
step gate-aa $tune regress --baseline "$p-a.db" --db "$p-b.db"
$tune regress --baseline "$p-a.db" --db "$p-b.db" --format bench > "$p-gate-aa.bench.txt" 2>/dev/null
step bench-c $tune bench --configs "$tables" --db "$p-c.db" --plant-slowdown "$case=5%"
step gate-planted $tune regress --baseline "$p-a.db" --db "$p-c.db"
$tune regress --baseline "$p-a.db" --db "$p-c.db" --format bench > "$p-gate-planted.bench.txt" 2>/dev/null
step faults $tune --faults --kernel fault --shapes n=1048576 --db "$p-faults.db"
step faults-variants $tune show --db "$p-faults.db" --variants
for db in a b c faults; do
  step runs-$db $tune runs --db "$p-$db.db"
done

# The verdicts.
pass=0 fail=0
check() { # check DESCRIPTION CONDITION...
  local what=$1
  shift
  if "$@"; then echo "PASS  $what"; pass=$((pass + 1)); else echo "FAIL  $what"; fail=$((fail + 1)); fi
}
has() { grep -qF -- "$2" "$p-$1"; }
check "bench A, B and C exit 0" test "${rc[bench-a]}${rc[bench-b]}${rc[bench-c]}" = 000
check "A/A: the gate passes (exit 0)" test "${rc[gate-aa]}" = 0
check "A/A: no case regressed" has gate-aa.out "0 regressed, 0 missing"
check "planted: the gate fails (exit 1)" test "${rc[gate-planted]}" = 1
check "planted: it names $case" has gate-planted.err "$case regressed"
check "planted: no other case failed" has gate-planted.err "1 of 31 cases"
check "faults: the run goes on and exits 0" test "${rc[faults]}" = 0
check "faults: hang recorded as timeout" has faults-variants.out "fault=hang  timeout"
check "faults: OOB store recorded as launch_error" has faults-variants.out "fault=oob  launch_error"
check "faults: trap recorded as launch_error" has faults-variants.out "fault=trap  launch_error"
check "faults: brkpt recorded as launch_error" has faults-variants.out "fault=illegal  launch_error"
check "faults: the working variant measured" has runs-faults.out "(ok 1, launch_error 3, timeout 1)"
for db in a b c; do
  read -r got total < <(grep -o 'telemetry: [0-9]* of [0-9]*' "$p-runs-$db.out" | awk '{print $2, $4}'; echo 0 -1)
  check "telemetry filled in $db.db ($got of $total timed evaluations)" test "$got" -gt 0 -a "$got" = "$total"
done
check "the run header shows the clocks" has bench-a.out "clocks: SM "

echo
echo "== nvidia-smi before the runs"; cat "$p-nvidia-smi.csv"
echo "== bench A (head)"; head -4 "$p-bench-a.out"
echo "== gate A/A (summary)"; grep -E "regressed,|^- " "$p-gate-aa.out"
echo "== gate planted"; grep -E "regressed|^- " "$p-gate-planted.out" | head -5; cat "$p-gate-planted.err"
echo "== bench C notes"; cat "$p-bench-c.err"
echo "== faults"; cat "$p-faults.out"; cat "$p-faults-variants.out"
echo "== runs"; cat "$p-runs-a.out" "$p-runs-faults.out"
echo
echo "issue 14 on the H200: $pass passed, $fail failed"
