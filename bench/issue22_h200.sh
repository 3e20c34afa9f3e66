#!/usr/bin/env bash
# Issue 22 on the H200: nf4_gemm_bwd with its per-tile, unfused and
# streamed paths against what QLoRA trainers run (bitsandbytes' path:
# dequantize, then torch's matmul), in one session.
#
#   1. bench/peers_nf4.py on every bf16 case below: the peer and the dense
#      floor (first, so that a call cut short keeps them);
#   2. the card's own command, tune --kernel nf4_gemm_bwd --shapes qwen1.5b
#      (default flags; bf16 and f16 at 2048 tokens), timed: the 3-minute bar;
#   3. the qwen1.5b projections at 512 and 8192 tokens, bf16, f32 and dq
#      scales;
#   4. held-out shapes of another model (Llama-3.2-1B: hidden 2048,
#      intermediate 8192, 8 KV heads of 64), bf16, 2048 tokens;
#   5. bench/issue22_ratios.py: the table (every case >= 1.0 against the
#      peer, geomean >= 1.15), with the harness's own dequant+cublas
#      baseline of the same run beside it.
#
# Run from the repository root on the GPU host with bin/tune built here;
# writes into ${OUT:-out}. PHASE=tune|peers|all (default all), ab (the
# split-K register-A path at 512 and 2048 tokens; see below), or card:
# the card's command with tune's default flags, timed, then the 512-token
# down case and the held-out shapes with their peers and the ratio table,
# then nf4_dequant at qwen1.5b (bf16).
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
db="$out/h200-nf4-22.db"
source "$(dirname "${BASH_SOURCE[0]}")/timed.sh"
heldout="m=2048,n=2048,k=2048;m=2048,n=512,k=2048;m=2048,n=8192,k=2048;m=2048,n=2048,k=8192"
heldout="$heldout;${heldout//;/,scales=dq;},scales=dq"
qwen() { # the qwen1.5b projections at $1 tokens, f32 and dq scales
	local t=$1
	for nk in 1536,1536 256,1536 8960,1536 1536,8960; do
		echo "m=$t,n=${nk%,*},k=${nk#*,}"
		echo "m=$t,n=${nk%,*},k=${nk#*,},scales=dq"
	done
}
phase=${PHASE:-all}
if [[ $phase == ab ]]; then
	# The lever added on 2026-12-05, not yet timed: split-K on the
	# register-A path (in the default space, below one wave of tiles: the
	# 512-token cases), on qwen1.5b at 512 and 2048 tokens, bf16, f32 and
	# dq scales, with the peer and the ratio table; then the register-A
	# path alone at 512 tokens
	mapfile -t cases < <(qwen 512; qwen 2048)
	shapes=$(IFS=';'; echo "${cases[*]}")
	timed python3 bench/peers_nf4.py "$out/peers-nf4-ab.jsonl" "${cases[@]}" > "$out/peers-nf4-ab.log" 2>&1
	timed ./bin/tune --kernel nf4_gemm_bwd --shapes "$shapes" --dtype bf16 --final-rounds 2 --db "$out/ab.db" > "$out/tune-ab.log" 2>&1
	tail -2 "$out/tune-ab.log"
	./bin/tune export --db "$out/ab.db" --format json --force -o "$out/nf4-ab.json"
	python3 bench/issue22_ratios.py "$out/nf4-ab.json" "$out/peers-nf4-ab.jsonl" "$out/h200-nf4-ab-ratios.txt" "$out/ab.db"
	cat "$out/h200-nf4-ab-ratios.txt"
	RESERVE=20 timed ./bin/tune --kernel nf4_gemm_bwd --shapes "$(qwen 512 | paste -sd';')" --dtype bf16 \
		--params mma=wgmma,dequant=consumer --final-rounds 2 --db "$out/registerA-512.db" > "$out/tune-registerA-512.log" 2>&1
	grep -a "^nf4_gemm_bwd " "$out/tune-registerA-512.log" | cut -c1-220
	exit 0
fi
if [[ $phase == card ]]; then
	timed ./bin/tune --kernel nf4_gemm_bwd --shapes qwen1.5b --db "$out/card.db" > "$out/tune-card.log" 2>&1
	tail -3 "$out/tune-card.log"
	down512="m=512,n=1536,k=8960;m=512,n=1536,k=8960,scales=dq" # the case under 1.0 on 2026-12-05
	mapfile -t cases < <(tr ';' '\n' <<< "$down512;$heldout")
	timed python3 bench/peers_nf4.py "$out/peers-nf4-heldout.jsonl" "${cases[@]}" > "$out/peers-nf4-heldout.log" 2>&1
	timed ./bin/tune --kernel nf4_gemm_bwd --shapes "$down512" --dtype bf16 --final-rounds 2 --db "$db" > "$out/tune-down512.log" 2>&1
	timed ./bin/tune --kernel nf4_gemm_bwd --shapes "$heldout" --dtype bf16 --final-rounds 2 --db "$db" > "$out/tune-heldout.log" 2>&1
	./bin/tune export --db "$db" --format json --force -o "$out/nf4-heldout.json"
	python3 bench/issue22_ratios.py "$out/nf4-heldout.json" "$out/peers-nf4-heldout.jsonl" "$out/h200-nf4-heldout-ratios.txt" "$db"
	cat "$out/h200-nf4-heldout-ratios.txt"
	# nf4_dequant with its unroll axis, against the Triton dequantization
	# the peers' file above holds (nf4_dequant rows)
	timed ./bin/tune --kernel nf4_dequant --shapes qwen1.5b --dtype bf16 --final-rounds 2 --db "$out/dequant.db" > "$out/tune-dequant.log" 2>&1
	tail -3 "$out/tune-dequant.log"
	exit 0
fi
if [[ $phase == peers || $phase == all ]]; then
	mapfile -t cases < <(qwen 512; qwen 2048; qwen 8192; tr ';' '\n' <<< "$heldout")
	timed python3 bench/peers_nf4.py "$out/peers-nf4.jsonl" "${cases[@]}" > "$out/peers-nf4.log" 2>&1
	tail -3 "$out/peers-nf4.log"
fi
if [[ $phase == tune || $phase == all ]]; then
	nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/nvidia-smi.csv" 2>&1
	timed ./bin/tune --kernel nf4_gemm_bwd --shapes qwen1.5b --db "$db" > "$out/tune-card.log" 2>&1
	tail -2 "$out/tune-card.log"
	timed ./bin/tune --kernel nf4_gemm_bwd --shapes qwen1.5b --tokens 512,8192 --dtype bf16 --final-rounds 2 --db "$db" > "$out/tune-512-8192.log" 2>&1
	tail -2 "$out/tune-512-8192.log"
	RESERVE=40 timed ./bin/tune --kernel nf4_gemm_bwd --shapes "$heldout" --dtype bf16 --final-rounds 2 --db "$db" > "$out/tune-heldout.log" 2>&1
	tail -2 "$out/tune-heldout.log"
	./bin/tune show --db "$db" --kernel nf4_gemm_bwd > "$out/show.txt" 2>&1
	./bin/tune export --db "$db" --format json --force -o "$out/nf4-22.json"
fi
if [[ $phase == all ]]; then
	python3 bench/issue22_ratios.py "$out/nf4-22.json" "$out/peers-nf4.jsonl" "$out/h200-nf4-22-ratios.txt" "$db"
	cat "$out/h200-nf4-22-ratios.txt"
fi
