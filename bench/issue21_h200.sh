#!/usr/bin/env bash
# Issue 21 on the H200: re-tune every committed table's families with
# programs that take the token dim at run time, then launch every table
# entry outside the harness and run the nightly gate.
#
# Run from the repository root on the GPU host with the stripped binaries
# gzipped in devbin/ (tune.gz, trainer.gz); writes into ${OUT:-out}.
#   PHASE=tune-small  activations, rows, pool: every dtype
#   PHASE=tune-big    gemm_bwd, nf4_dequant, nf4_gemm_bwd: bf16
#   PHASE=launch      examples/trainer --all; the nightly command twice and
#                     regress on the pair; a planted 5% slowdown; a planted
#                     failure; the old (baked) tables against the new ones
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out" bin
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for b in devbin/*.gz; do gunzip -c "$b" > "bin/$(basename "$b" .gz)"; chmod +x "bin/$(basename "$b" .gz)"; done
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/nvidia-smi.csv" 2>&1
source "$(dirname "${BASH_SOURCE[0]}")/tables.sh"
tables=$H200_TABLES
old=ab/old/activations.json,ab/old/rows.json,ab/old/pool.json,ab/old/gemm.json,ab/old/nf4.json
timed() { local s; s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s) - s )) s, exit $rc] $*"; return $rc; }
case "${PHASE:?}" in
tune-small)
	timed ./bin/tune --kernel relu_bwd,gelu_bwd,silu_bwd,softmax_bwd,rmsnorm_bwd,layernorm_bwd,lp_pool1d_bwd --shapes qwen1.5b \
		--final-rounds 2 --db "$out/h200-small.db" > "$out/tune-small.log" 2>&1
	tail -5 "$out/tune-small.log"; gzip -9 "$out/h200-small.db"
	;;
tune-big)
	timed ./bin/tune --kernel gemm_bwd,nf4_dequant,nf4_gemm_bwd --shapes qwen1.5b --dtype bf16 \
		--final-rounds 2 --db "$out/h200-big.db" > "$out/tune-big.log" 2>&1
	tail -5 "$out/tune-big.log"; gzip -9 "$out/h200-big.db"
	;;
launch)
	timed ./bin/trainer --all > "$out/trainer.log" 2>&1; tail -3 "$out/trainer.log"
	for night in a b; do
		timed ./bin/tune bench --configs "$tables" --db "$out/night-$night.db" > "$out/bench-$night.log" 2>&1
	done
	timed ./bin/tune regress --baseline "$out/night-a.db" --db "$out/night-b.db" > "$out/regress-ab.txt" 2>&1
	slow="${SLOW:-rmsnorm_bwd bf16 m=2048,n=1536}"
	timed ./bin/tune bench --configs "$tables" --plant-slowdown "$slow=5%" --db "$out/night-slow.db" > "$out/bench-slow.log" 2>&1
	timed ./bin/tune regress --baseline "$out/night-a.db" --db "$out/night-slow.db" > "$out/regress-slow.txt" 2>&1
	timed ./bin/tune bench --configs ab/broken/rows.json --db "$out/night-broken.db" > "$out/bench-broken.log" 2>&1
	timed ./bin/tune regress --baseline "$out/night-a.db" --db "$out/night-broken.db" > "$out/regress-broken.txt" 2>&1
	for rep in 1 2; do
		timed ./bin/tune bench --configs "$old" --db "$out/ab-old.db" > "$out/ab-old-$rep.log" 2>&1
		timed ./bin/tune bench --configs "$tables" --db "$out/ab-new.db" > "$out/ab-new-$rep.log" 2>&1
	done
	tail -2 "$out"/regress-*.txt
	;;
esac
