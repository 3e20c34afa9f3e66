#!/usr/bin/env bash
# The nightly gate on real nights (issues 21 and 23), on the H200:
#
#   1. the README's nightly command, tune bench --configs over all five
#      committed tables, NIGHTS times (default 6: five consecutive A/A
#      pairs), each into its own database;
#   2. tune regress on each consecutive pair: every one must exit 0;
#   3. a night with relu_bwd bf16 m=2048,n=8960 made 5% slower
#      (--plant-slowdown) and a night with rows.json's layernorm_bwd f16
#      entry broken (its first launch's grid set to 1): regress against
#      night 1 must exit 1 naming each, and nothing else;
#   4. a summary: the exit codes, the drift of each pair and its largest
#      unplanted change.
#
# Run from the repository root on the GPU host with bin/tune built here;
# writes into ${OUT:-out}/nights. About 80 s a night.
set -uo pipefail
out=${OUT:-out}/nights
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tables=configs/h200/activations.json,configs/h200/rows.json,configs/h200/pool.json,configs/h200/gemm.json,configs/h200/nf4.json
nights=${NIGHTS:-6}
timed() { local s rc; s=$(date +%s); "$@"; rc=$?; echo "[$(($(date +%s) - s)) s, exit $rc] ${*:0:4}"; return $rc; }
summary="$out/summary.txt"
: > "$summary"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/nvidia-smi.csv" 2>&1
for i in $(seq 1 "$nights"); do
	timed ./bin/tune bench --configs "$tables" --db "$out/night-$i.db" > "$out/bench-$i.log" 2>&1
	echo "night $i: exit $?" >> "$summary"
done
for i in $(seq 2 "$nights"); do
	./bin/tune regress --baseline "$out/night-$((i - 1)).db" --db "$out/night-$i.db" > "$out/regress-$((i - 1))-$i.md" 2>&1
	rc=$?
	echo "regress night $((i - 1)) -> $i: exit $rc; $(grep -o 'divided by its drift of [^ ]*' "$out/regress-$((i - 1))-$i.md"); $(grep -o '[0-9]* regressed.*' "$out/regress-$((i - 1))-$i.md")" >> "$summary"
done
timed ./bin/tune bench --configs "$tables" --plant-slowdown "relu_bwd bf16 m=2048,n=8960=5%" --db "$out/night-slow.db" > "$out/bench-slow.log" 2>&1
./bin/tune regress --baseline "$out/night-1.db" --db "$out/night-slow.db" > "$out/regress-slow.md" 2>&1
echo "regress night 1 -> planted 5% slowdown: exit $? (want 1, naming relu_bwd bf16 m=2048,n=8960): $(grep -o '[0-9]* regressed.*' "$out/regress-slow.md")" >> "$summary"
mkdir -p "$out/broken"
python3 - "$out/broken/rows.json" <<'PY'
import json, shutil, sys, os
t = json.load(open("configs/h200/rows.json"))
for e in t["entries"]:
    shutil.copy(os.path.join("configs/h200", e["ptx"]), os.path.dirname(sys.argv[1]))
    if e["kernel"] == "layernorm_bwd" and e["dtype"] == "f16":
        e["launches"][0]["grid"] = [1, 1, 1]
json.dump(t, open(sys.argv[1], "w"), indent=1)
PY
broken=${tables/configs\/h200\/rows.json/$out/broken/rows.json}
timed ./bin/tune bench --configs "$broken" --db "$out/night-broken.db" > "$out/bench-broken.log" 2>&1
echo "bench with rows.json's layernorm_bwd f16 entry broken: exit $? (want 1)" >> "$summary"
./bin/tune regress --baseline "$out/night-1.db" --db "$out/night-broken.db" > "$out/regress-broken.md" 2>&1
echo "regress night 1 -> broken entry: exit $? (want 1, naming layernorm_bwd f16 failed): $(grep -o '[0-9]* regressed.*' "$out/regress-broken.md")" >> "$summary"
cat "$summary"
