#!/usr/bin/env bash
# The H200 run behind testdata/h200-rows.* and testdata/h200-pool.*: tune the
# row families on the qwen1.5b shapes and lp_pool1d_bwd on its benchmark
# shape, measure PyTorch's eager backward for the same shapes in the same
# session, join both into Markdown tables, and cross-check GPU and
# interpreter outputs. Run from the repository root on the GPU host with
# bin/tune built; writes into ${OUT:-out}.
#
# Usage: bash bench/issue4_h200.sh [rows] [pool] [crosscheck]
# (no argument: all three parts). rows is the sum of softmax, rmsnorm,
# layernorm and rowpeers (PyTorch and the tables), which may also be run
# one or a few at a time into the same $OUT, e.g. where one command may
# not take the whole rows part's nine minutes.
set -euo pipefail
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
parts=${*:-rows pool crosscheck}
want() { [[ " $parts " == *" $1 "* ]]; }
pool="n=32,c=256,l=4096,window=4,stride=2,p=2"
for k in softmax rmsnorm layernorm; do
  if want rows || want $k; then
    ./bin/tune --kernel ${k}_bwd --shapes qwen1.5b --db "$out/h200-rows.db" >> "$out/h200-rows.log" 2>&1 || echo "tune $k: exit $?"
  fi
done
if want rows || want rowpeers; then
  python3 bench/peers_rows.py --out "$out/peers-rows.jsonl" > /dev/null
  ./bin/tune report --db "$out/h200-rows.db" --peers "$out/peers-rows.jsonl" --force -o "$out/report-rows"
fi
if want pool; then
  ./bin/tune --kernel lp_pool1d_bwd --shapes "$pool" --db "$out/h200-pool.db" > "$out/h200-pool.log" 2>&1 || echo "tune pool: exit $?"
  python3 bench/peers_pool.py --out "$out/peers-pool.jsonl" --shapes "$pool" > /dev/null
  ./bin/tune report --db "$out/h200-pool.db" --peers "$out/peers-pool.jsonl" --force -o "$out/report-pool"
fi
if want crosscheck; then
  ./bin/tune crosscheck --kernel all --cases 240 --seed 1 --out "$out/crosscheck.jsonl" > "$out/crosscheck.log" 2>&1 || echo "crosscheck: exit $?"
  tail -40 "$out/crosscheck.log"
fi
