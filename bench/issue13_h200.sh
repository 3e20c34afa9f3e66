#!/usr/bin/env bash
# Issue 13 on the H200: tuning off the JIT's critical path. Run from the
# repository root on the GPU host with bin/tune built from this branch and
# bin/tune-base from main before it (f41ce93: the worker JIT-compiles every
# variant and samples every variant to convergence). All runs use
# CUDA_CACHE_DISABLE=1, so the driver's own compute cache never answers.
# Everything goes to ${OUT:-out}/issue13-*; each phase deletes what it is
# about to write.
#
# A device command runs at most 10 minutes, so the work is in phases
# (PHASE=...), one command each, in one device session; a later phase reads
# the earlier ones' files from $PREV (default $OUT):
#
#   today-f32   rmsnorm_bwd f32 [2048x1536] full space, then the three
#               kernels on qwen1.5b f32, with bin/tune-base
#   today-half  the three kernels on qwen1.5b bf16, then f16, bin/tune-base
#   new         bin/tune: rmsnorm f32 with the compile pool and an empty
#               cubin cache; the three kernels, every dtype, cache empty
#               (cold), then warm; each shape's winners today and warm
#               timed head to head (two alternations, fresh processes);
#               the summary and the done-when checks
#
# Today's whole-preset time is the sum of its per-dtype runs (three
# processes: two more starts than one run would take, counted against it).
set -uo pipefail
out=${OUT:-out}
prev=${PREV:-$out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export CUDA_CACHE_DISABLE=1
tune=./bin/tune
base=${TUNE_BASE:-./bin/tune-base}
p=$out/issue13
rows='rmsnorm_bwd,layernorm_bwd,softmax_bwd'

timed() { # timed NAME COMMAND...: run, keep the output, record seconds and exit code
  local name=$1 t0 t1
  shift
  rm -f "$p-$name.db" "$p-$name.db-wal" "$p-$name.db-shm"
  t0=$(date +%s.%N)
  "$@" > "$p-$name.out" 2> "$p-$name.err"
  local rc=$?
  t1=$(date +%s.%N)
  echo "$name $rc $(python3 -c "print(f'{$t1-$t0:.1f}')")" >> "$p-times-$phase.txt"
  echo "== $name: exit $rc, $(tail -1 "$p-times-$phase.txt" | cut -d' ' -f3) s"
}

phase=${PHASE:?set PHASE to today-f32, today-half or new}
: > "$p-times-$phase.txt"
case $phase in
today-f32)
  timed rms-today "$base" --kernel rmsnorm_bwd --shapes m=2048,n=1536 --dtype f32 --db "$p-rms-today.db"
  timed all-today-f32 "$base" --kernel "$rows" --shapes qwen1.5b --dtype f32 --db "$p-all-today-f32.db"
  ;;
today-half)
  for d in bf16 f16; do
    timed "all-today-$d" "$base" --kernel "$rows" --shapes qwen1.5b --dtype $d --db "$p-all-today-$d.db"
  done
  ;;
new)
  cache=$p-cubins
  rm -rf "$cache" "$cache-rms"
  timed rms-pool "$tune" --kernel rmsnorm_bwd --shapes m=2048,n=1536 --dtype f32 --cubin-cache "$cache-rms" --db "$p-rms-pool.db"
  timed all-cold "$tune" --kernel "$rows" --shapes qwen1.5b --cubin-cache "$cache" --db "$p-all-cold.db"
  timed all-warm "$tune" --kernel "$rows" --shapes qwen1.5b --cubin-cache "$cache" --db "$p-all-warm.db"
  grep -h "compile pool" "$p"-rms-pool.out "$p"-all-*.out
  python3 bench/issue13_summary.py plan "$prev/issue13" "$p" > "$p-h2h-plan.txt"
  rm -f "$p-h2h.db"
  : > "$p-h2h.txt"
  while read -r k spec dt today new; do
    for rep in 1 2; do
      for who in today new; do
        par=$today
        [ $who = new ] && par=$new
        "$tune" --kernel "$k" --shapes "$spec" --dtype "$dt" --params "$par" --fresh --no-abandon --db "$p-h2h.db" > "$p-h2h-run.out" 2>&1
        echo "$k $spec,dtype=$dt $who $rep $(python3 bench/issue13_summary.py median "$p-h2h.db" "$k" "$par")" >> "$p-h2h.txt"
      done
    done
  done < "$p-h2h-plan.txt"
  python3 bench/issue13_summary.py summary "$prev/issue13" "$p"
  ;;
*)
  echo "unknown PHASE $phase" >&2
  exit 2
  ;;
esac
