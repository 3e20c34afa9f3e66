#!/usr/bin/env bash
# The H200 runs the open issues wait for, in the order their device time
# is worth spending, one phase per device command (each within the
# device's 10-minute limit). Build here first:
#   GOAMD64=v3 go build -o bin/tune ./cmd/tune && CGO_ENABLED=0 go build -o bin/trainer ./examples/trainer
#   go test -c -o bin/runner.test ./runner
# then, on the GPU host, PHASE="<name> [<name>...]" bash bench/session_h200.sh
# with carry ["bin"]; everything goes to ${OUT:-out}. Where the tracked
# tree leaves too little room for bin/, carry binz/ instead: each binary
# xz-compressed (xz -9e), unpacked here into bin/ (tune 6.4 MB, trainer
# 1.3 MB, runner.test 2.4 MB); the device takes 64 MiB in all and the
# tracked tree is 61 MiB, so move testdata/tunefast (13 MB, nothing here
# reads it) aside for the calls and back after. BUDGET=<seconds> stops
# every timed step (SIGINT: tune keeps what it measured) that would run
# past the call's end, keeping 30 s for the steps after it.
#
#   diag    issue 21: why the trainer's medians of kernels under 10 µs sit
#           0.3-1 µs over the table: nf4_dequant's entries by the trainer
#           with --warm-ms 0 and 200 (idle clocks?), then by tune bench (the harness's
#           protocol) with --warm-ms 0 and 100 in the same call, the SM
#           clock sampled throughout
#                                                             ~1.5 min
#   dequantgap  issue 21: nf4_dequant [256x1536]'s 0.4 us over the table
#           in the trainer's walk: the harness and the entry alone in a
#           fresh trainer at several warm-ups, the walk over nf4_dequant
#                                                              ~1.5 min
#   dqlayout  issue 21: nf4_dequant [256x1536] alone in fresh trainers,
#           timed 4 times in a row, with its buffers allocated apart,
#           packed, and after paddings of 64 KiB to 32 MiB      ~1 min
#   gemmgap issue 21: the trainer against the harness on tensor-core GEMMs
#           (testdata/issue21/gap-1205-h100): three GEMM entries and one
#           memory-bound control by the trainer (the tables' protocol, then
#           200 runs back to back after 2 s of continuous work; again
#           without the warm time), every sample traced, then by tune
#           bench; the SM clock, power and clock event reasons logged
#           every 20 ms                                        ~3 min
#   nf4     issue 22: bench/issue22_h200.sh (the card's command timed,
#           512 and 8192 tokens, held-out shapes, bitsandbytes' path as
#           the peer, the ratio table)                        ~8 min
#   nf4ab   issue 22: bench/issue22_h200.sh PHASE=ab: qwen1.5b at 512 and
#           2048 tokens with split-K on the register-A path in the space,
#           the peer and the ratio table; the register-A path alone at
#           512                                                ~5 min
#   nf4card issue 22, after the first H200 run (testdata/nf4/h200-nf4-22*):
#           the card's command as a user runs it (default flags, bf16 and
#           f16) timed against the 3-minute bar with the search rules, then
#           the eight held-out Llama-3.2-1B shapes and their peers ~6 min
#   cardtime  issue 22: the card's command alone (default flags), each
#           shape's wall time split by phase (search, baselines, final
#           round; preparing inputs, starting workers)          ~3.5 min
#   refresh issue 21: the trainer at every entry's tuned shape against the
#           committed tables, then against the same tables re-measured on
#           this machine (tune bench, tune export --ptx)         ~6 min
#           (REFRESH_COMMITTED=0: only against this machine's ~4 min)
#   rows    issue 21: rmsnorm/layernorm/softmax backward re-tuned here and
#           exported over configs/h200/rows.json for the phases after it
#           (rows-table.tgz comes back to be committed)       ~2 min
#   launch  issue 21: examples/trainer --all over every committed entry
#           at its tuned token count and two others (LAUNCH_ONLY=kernels
#           splits it over calls; LAUNCH_TUNED_ONLY=1: the tuned count alone)                          ~8 min in all
#   shard   issue 29: relu_bwd and rmsnorm_bwd (bf16, qwen1.5b) tuned
#           whole, then as --shard 1/2 and 2/2, merged; the winners
#           compared by bench/compare_winners.py               ~2 min
#   exact   issue 23: runner/exact_gpu_test.go's exactness on the GPU alone
#   gemm    issue 23: gemm_bwd on qwen1.5b and held-out shapes against
#           the best of cuBLASLt's algorithms, from the interleaved final
#           round; runner/exact_gpu_test.go's exactness on the GPU ~5 min
#   nights  issues 21 and 23: bench/nights_h200.sh (six nights, five A/A
#           pairs, a planted slowdown, a planted failure); 92-104 s a
#           night over five tables on 2026-12-05, 88 s of it preparing
#           inputs and float64 references on the host, more with
#           nf4_gemm.json (34 entries: about 4-5 s each at 8192 tokens).
#           The nights share --ref-cache /tmp/gradtune-refs, so only the
#           first computes references; if a call still runs out, a second
#           with PLANTED=0 runs A/A nights alone
#   pytorch issue 25: python's tests, gradtune.selftest (committed entries
#           launched through gradtune.torch), examples/pytorch's
#           Qwen2.5-1.5B layer, tuned Functions against torch +
#           dequantize                                         ~2 min
#   step    issues 26/27: tune swiglu_bwd, rope_bwd, cross_entropy_bwd and lora_bwd at
#           STEP_TOKENS (default "2048 8192") into step.db
#   lce     issue 26: tune linear_cross_entropy_bwd (the fused LM head
#           and loss) at 2048 tokens by the model strategy into lce.db
#           (the float64 reference takes ~40 s of the host's 16 cores),
#           then 8192 with LCE_TOKENS=8192 in a second command  ~8 min each
#   attn    issue 28: tune flash_attn_bwd at Qwen's heads, causal, bf16,
#           s = 1024/2048/4096/8192 with b·s = 8192 tokens into attn.db,
#           then SDPA's backends at the same keys (bench/peers_step.py
#           --kernels flash_attn_bwd)                            ~8 min
#   gemmfix gemm_bwd on qwen1.5b re-tuned by bin/tune-fix (branch
#           fix-setmaxnreg's binary: no setmaxnreg.inc below the registers
#           held at launch) into h200-gemm-fix.db, the database the gemm
#           table is regenerated from when the branch lands      ~3 min
#   lora    issue 27: lora_bwd on qwen1.5b at 2048 tokens into lora.db,
#           then torch's GEMMs (bench/peers_step.py --kernels lora_bwd),
#           then bench/research/lora_x.cu (what the x kernel's loads
#           can read), compiled there by nvcc                  ~6 min
#   ce      issue 26: cross_entropy_bwd alone, 2048 and 8192 tokens (bf16,
#           the default search), then torch.compile's and Liger's forward +
#           backward at both (bench/peers_step.py --kernels cross_entropy
#           --peers compile,liger) and the one-pass winner's Nsight Compute
#           sections at 2048 (bench/prof-lora.sh)                ~5 min
#   mix     issue 27: bench/research/mix.cu (what SwiGLU backward's stream
#           mix of 3 reads and 2 writes reaches under the cold protocol's
#           memset flush, and after a clean one), then swiglu_bwd's default
#           search at [2048 x 8960] bf16 and its peers (torch.compile,
#           Liger) in the same call                             ~2 min
#   steppeers  right after step, in the same session: bench/peers_step.py,
#           the peers of the step's backward kernels (swiglu_bwd, rope_bwd, cross-entropy, linear cross-entropy):
#           torch eager, torch.compile, Liger-Kernel and Cut Cross-Entropy
#           (carried in bench/third_party), at STEP_TOKENS (default
#           "2048 8192"), one process and one peers-step-T.jsonl each;
#           rows are written as measured                     ~6 min
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
source "$(dirname "${BASH_SOURCE[0]}")/timed.sh"
source "$(dirname "${BASH_SOURCE[0]}")/tables.sh"
if [[ -n ${BUDGET:-} ]]; then
	export DEADLINE=$(($(date +%s) + BUDGET))
fi
for z in binz/*.xz; do
	[[ -f $z ]] || continue
	mkdir -p bin
	python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$z" "bin/$(basename "$z" .xz)"
	chmod +x "bin/$(basename "$z" .xz)"
done
# The tables are the H200's: on another GPU (a call for nvidia-h200 may
# get an H100) the trainer looks them up as the H200's, so that every
# launch is still made and validated; its timings are then that GPU's.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "GPU: ${gpu:-none seen}"
as_h200=()
if [[ $gpu != *H200* ]]; then
	as_h200=(--gpu "NVIDIA H200" --cc 9.0)
	echo "not an H200: the trainer looks up the H200's tables (${as_h200[*]})"
fi
# outside5 LOG: how many of a trainer log's ratios to the table (its
# entries at their tuned shape) lie outside 5%
outside5() {
	grep -a -o "[0-9.]*× the table" "$1" | awk '{r=$1+0; n++; if (r>1.05||r<0.95) o++} END {printf "%d ratios at the tuned shape, %d outside 5%%\n", n, o}'
}
for phase in ${PHASE:?PHASE=diag|dequantgap|dqlayout|gemmgap|nf4|nf4ab|nf4card|cardtime|refresh|rows|launch|shard|exact|gemm|nights|pytorch|step|lce|attn|lora|ce|mix|steppeers|gemmfix}; do
case $phase in
nf4)
	PHASE=all OUT=$out bash bench/issue22_h200.sh
	;;
nf4ab)
	PHASE=ab OUT=$out bash bench/issue22_h200.sh
	;;
diag)
	nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate --format=csv -lms 100 > "$out/diag-smi.csv" 2>&1 &
	smi=$!
	for w in 0 200; do
		timed ./bin/trainer --all --only nf4_dequant --warm-ms "$w" "${as_h200[@]}" > "$out/diag-trainer-warm$w.log" 2>&1
		grep -a -o "median of the launches.*" "$out/diag-trainer-warm$w.log" | head -24
	done
	for w in 0 100; do
		timed ./bin/tune bench --configs configs/h200/nf4.json --warm-ms "$w" --db "$out/diag-bench-warm$w.db" > "$out/diag-bench-warm$w.log" 2>&1
		grep -a "^nf4_dequant" "$out/diag-bench-warm$w.log" | cut -c1-150
	done
	kill "$smi"
	;;
dequantgap)
	# issue 21: nf4_dequant [256x1536] is 0.4 us (9%) over its table in
	# the trainer on the H200 while tune bench reproduces the table
	# (testdata/issue21/launch-1205-h200; level on an H100,
	# dequantgap-1205-h100). The trainer warms 100 ms by default, tune
	# bench 0: the harness at --warm-ms 0 and 100, the trainer on the entry
	# alone in a fresh process at --warm-ms 0, 100 and 1000 (every sample
	# traced), the walk over nf4_dequant's entries, the harness again
	for pass in before after; do
		[[ $pass == after ]] && {
			for w in 0 100 1000; do
				for s in "n=256,k=1536" "n=256,k=1536,scales=dq"; do
					timed ./bin/trainer --kernel nf4_dequant --shape "$s" --warm-ms "$w" --trace "$out/dq-trace-${s//[=,]/-}-warm$w.jsonl" "${as_h200[@]}" > "$out/dq-alone.log" 2>&1
					echo "alone $s warm $w: $(grep -a -o "median of the launches.*" "$out/dq-alone.log")"
				done
			done
			timed ./bin/trainer --all --tuned-only --only nf4_dequant "${as_h200[@]}" > "$out/dq-walk.log" 2>&1
			grep -a -o "median of the launches.*" "$out/dq-walk.log"
		}
		for w in 0 100; do
			timed ./bin/tune bench --configs configs/h200/nf4.json --kernel nf4_dequant --warm-ms "$w" --db "$out/dq-bench-$pass-warm$w.db" > "$out/dq-bench-$pass-warm$w.log" 2>&1
			echo "bench $pass warm $w:"
			grep -a "^nf4_dequant    n=256" "$out/dq-bench-$pass-warm$w.log" | cut -c1-150
		done
	done
	;;
dqlayout)
	# issue 21: does nf4_dequant [256x1536]'s time depend on where its
	# buffers lie? The entry alone in fresh trainers, each timed 4 times
	# in a row: as allocated by default, packed into one allocation, and
	# after paddings that move the buffers to other pages
	for l in "" "--packed" "--pad-bytes 65536" "--pad-bytes 1048576" "--pad-bytes 2097152" "--pad-bytes 4194560" "--pad-bytes 33554432" "--packed --pad-bytes 2097152" ""; do
		# shellcheck disable=SC2086 # $l is the flag list
		timed ./bin/trainer --kernel nf4_dequant --shape n=256,k=1536 --repeat 4 $l "${as_h200[@]}" > "$out/dql.log" 2>&1
		echo "layout [${l:-default}]: $(grep -a -o "median of the launches.*" "$out/dql.log")" | tee -a "$out/dqlayout.txt"
	done
	;;
gemmgap)
	nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 20 > "$out/gap-smi.csv" 2>&1 &
	smi=$!
	nvidia-smi --query-gpu=timestamp,clocks_event_reasons.active --format=csv -lms 20 > "$out/gap-reasons.csv" 2>&1 &
	smi2=$!
	gap_cases=("gemm_bwd m=2048,n=8960,k=1536,grad=dx" "nf4_gemm_bwd m=8192,n=8960,k=1536,scales=dq"
		"nf4_gemm_bwd m=8192,n=1536,k=8960" "relu_bwd m=2048,n=8960")
	for c in "${gap_cases[@]}"; do
		read -r k s <<< "$c"
		for v in "table:--sustained-ms 2000" "nowarm:--warm-ms 0"; do
			echo "$(date +%T.%N) $k $s ${v%%:*}" >> "$out/gap-marks.txt"
			rm -f "$out/gap-trace.jsonl.tmp" "$out/gap-run.log"
			# shellcheck disable=SC2086 # ${v#*:} is the flag list
			timed ./bin/trainer --kernel "$k" --shape "$s" ${v#*:} --trace "$out/gap-trace.jsonl.tmp" "${as_h200[@]}" > "$out/gap-run.log" 2>&1
			cat "$out/gap-run.log" >> "$out/gap-trainer.log"
			[[ -f $out/gap-trace.jsonl.tmp ]] && sed "s/^{/{\"variant\":\"${v%%:*}\",/" "$out/gap-trace.jsonl.tmp" >> "$out/gap-trace.jsonl"
			grep -a -o "median of the launches.*\|FAILED.*" "$out/gap-run.log" | sed "s/^/$k $s ${v%%:*}: /"
		done
	done
	rm -f "$out/gap-trace.jsonl.tmp" "$out/gap-run.log"
	echo "$(date +%T.%N) bench" >> "$out/gap-marks.txt"
	timed ./bin/tune bench --configs "$H200_TABLES" --kernel gemm_bwd,nf4_gemm_bwd,relu_bwd \
		--shapes "m=2048,n=8960,k=1536,grad=dx;m=8192,n=8960,k=1536,scales=dq;m=8192,n=1536,k=8960;m=2048,n=8960" \
		--db "$out/gap-bench.db" > "$out/gap-bench.log" 2>&1
	grep -a "^gemm_bwd\|^nf4_gemm_bwd\|^relu_bwd" "$out/gap-bench.log" | cut -c1-160
	echo "$(date +%T.%N) end" >> "$out/gap-marks.txt"
	kill "$smi" "$smi2"
	wait "$smi" "$smi2" 2>/dev/null
	gzip -9 "$out/gap-smi.csv" "$out/gap-reasons.csv"
	;;
shard)
	k="--kernel relu_bwd,rmsnorm_bwd --shapes qwen1.5b --dtype bf16 --final-rounds 2"
	# shellcheck disable=SC2086 # $k is the flag list
	timed ./bin/tune $k --db "$out/shard-whole.db" > "$out/shard-whole.log" 2>&1
	for i in 1 2; do
		# shellcheck disable=SC2086
		timed ./bin/tune $k --shard "$i/2" --db "$out/shard-$i.db" > "$out/shard-$i.log" 2>&1
	done
	./bin/tune merge -o "$out/shard-merged.db" "$out/shard-1.db" "$out/shard-2.db"
	for d in whole merged; do
		./bin/tune export --db "$out/shard-$d.db" --format json -o "$out/shard-$d.json"
	done
	python3 bench/compare_winners.py "$out/shard-whole.json" "$out/shard-merged.json" | tee "$out/shard-compare.txt"
	;;
exact)
	(cd runner && timed ../bin/runner.test -test.run TestGPUExactInputs -test.v) > "$out/exact-gpu.log" 2>&1
	tail -5 "$out/exact-gpu.log"
	;;
nf4card)
	PHASE=card OUT=$out bash bench/issue22_h200.sh
	;;
cardtime)
	rm -f "$out/cardtime.db"
	timed ./bin/tune --kernel nf4_gemm_bwd --shapes qwen1.5b --db "$out/cardtime.db" > "$out/tune-cardtime.log" 2>&1
	grep -a -o "^nf4_gemm_bwd   [^ ]*\|\[[0-9.]*s: search.*\]" "$out/tune-cardtime.log" | paste - - | cut -c1-330
	tail -2 "$out/tune-cardtime.log"
	;;
refresh)
	# the 5% check of issue 21 on one machine: every entry at its tuned
	# shape by the trainer against the committed tables (another H200's
	# figures), then the same tables re-measured here by tune bench and
	# exported, and the trainer against those
	if [[ ${REFRESH_COMMITTED:-1} == 1 ]]; then
		timed ./bin/trainer --all --tuned-only "${as_h200[@]}" > "$out/refresh-trainer-committed.log" 2>&1
		tail -1 "$out/refresh-trainer-committed.log"
	fi
	timed ./bin/tune bench --configs "$H200_TABLES" --ref-cache /tmp/gradtune-refs --db "$out/refresh.db" > "$out/refresh-bench.log" 2>&1
	tail -1 "$out/refresh-bench.log"
	rm -rf /tmp/fresh && mkdir -p /tmp/fresh
	if ! ./bin/tune export --db "$out/refresh.db" --format json --ptx -o /tmp/fresh/h200.json > "$out/refresh-export.log" 2>&1; then
		echo "refresh: the export failed (refresh-export.log)"
		continue
	fi
	cp /tmp/fresh/h200.json "$out/refresh-table.json"
	timed ./bin/trainer --all --tuned-only --configs /tmp/fresh/h200.json "${as_h200[@]}" > "$out/refresh-trainer-here.log" 2>&1
	tail -1 "$out/refresh-trainer-here.log"
	for f in committed here; do
		[[ -f $out/refresh-trainer-$f.log ]] || continue
		echo "$f: $(outside5 "$out/refresh-trainer-$f.log")"
	done
	;;
launch)
	# LAUNCH_ONLY=k1,k2 splits the walk over calls (default every entry)
	only=()
	[[ -n ${LAUNCH_ONLY:-} ]] && only=(--only "$LAUNCH_ONLY")
	log="$out/trainer-all${LAUNCH_TAG:+-$LAUNCH_TAG}.log"
	[[ -n ${LAUNCH_TUNED_ONLY:-} ]] && only+=(--tuned-only)
	RESERVE=${LAUNCH_RESERVE:-30} timed ./bin/trainer --all "${only[@]}" "${as_h200[@]}" > "$log" 2>&1
	tail -3 "$log"
	outside5 "$log"
	;;
rows)
	# issue 21: the rows family re-tuned here under the tables' protocol and
	# exported over configs/h200/rows.json (its PTX beside it), so that the
	# phases after it in this call, and the commit of rows-table.tgz, use it
	timed ./bin/tune --kernel rmsnorm_bwd,layernorm_bwd,softmax_bwd --shapes qwen1.5b --final-rounds 2 \
		--db "$out/rows.db" > "$out/rows-tune.log" 2>&1
	tail -12 "$out/rows-tune.log" | cut -c1-170
	rm -rf /tmp/rows && mkdir -p /tmp/rows
	if ./bin/tune export --db "$out/rows.db" --format json --ptx -o /tmp/rows/rows.json > "$out/rows-export.log" 2>&1; then
		rm -f configs/h200/rmsnorm_bwd-*.ptx configs/h200/layernorm_bwd-*.ptx configs/h200/softmax_bwd-*.ptx
		cp /tmp/rows/* configs/h200/
		tar czf "$out/rows-table.tgz" -C /tmp/rows .
	else
		echo "rows: the export failed (rows-export.log); configs/h200/rows.json left as committed"
	fi
	;;
gemm)
	heldout="m=2048,n=2048,k=2048,grad=dx;m=2048,n=2048,k=2048,grad=dw;m=2048,n=8192,k=2048,grad=dx;m=2048,n=8192,k=2048,grad=dw"
	heldout="$heldout;m=2048,n=2048,k=8192,grad=dx;m=2048,n=2048,k=8192,grad=dw;m=2048,n=512,k=2048,grad=dx;m=2048,n=512,k=2048,grad=dw"
	timed ./bin/tune --kernel gemm_bwd --shapes qwen1.5b --dtype bf16 --final-rounds 2 --db "$out/h200-gemm-23.db" > "$out/tune-gemm.log" 2>&1
	timed ./bin/tune --kernel gemm_bwd --shapes "$heldout" --dtype bf16 --final-rounds 2 --db "$out/h200-gemm-23.db" > "$out/tune-gemm-heldout.log" 2>&1
	./bin/tune show --db "$out/h200-gemm-23.db" > "$out/show-gemm.txt" 2>&1
	tail -25 "$out/show-gemm.txt"
	(cd runner && timed ../bin/runner.test -test.run TestGPUExactInputs -test.v) > "$out/exact-gpu.log" 2>&1
	tail -5 "$out/exact-gpu.log"
	;;
gemmfix)
	timed ./bin/tune-fix --kernel gemm_bwd --shapes qwen1.5b --dtype bf16 --final-rounds 2 --db "$out/h200-gemm-fix.db" > "$out/tune-gemmfix.log" 2>&1
	tail -3 "$out/tune-gemmfix.log"
	./bin/tune-fix show --db "$out/h200-gemm-fix.db" > "$out/show-gemmfix.txt" 2>&1
	tail -12 "$out/show-gemmfix.txt"
	;;
nights)
	OUT=$out bash bench/nights_h200.sh
	;;
pytorch)
	timed python3 -m unittest discover -s python/tests > "$out/python-tests.log" 2>&1
	tail -4 "$out/python-tests.log"
	timed env PYTHONPATH=python python3 -m gradtune.selftest configs/h200 > "$out/python-selftest.log" 2>&1
	tail -4 "$out/python-selftest.log"
	for t in ${LAYER_TOKENS:-2048 8192}; do
		timed env PYTHONPATH=python python3 examples/pytorch/qwen_layer.py --tokens "$t" > "$out/pytorch-layer-$t.log" 2>&1
		grep -a "^backward\|^CUDA graph\|of kernels\|OUT OF\|^fallback" "$out/pytorch-layer-$t.log" | cut -c1-200
	done
	;;
step)
	tokens=${STEP_TOKENS:-2048 8192}
	timed ./bin/tune --kernel swiglu_bwd,rope_bwd,cross_entropy_bwd,lora_bwd --shapes qwen1.5b --dtype bf16 --tokens "${tokens// /,}" \
		--final-rounds 2 --db "$out/step.db" > "$out/step-tune.log" 2>&1
	tail -3 "$out/step-tune.log"
	./bin/tune show --db "$out/step.db" > "$out/step-show.txt" 2>&1
	cat "$out/step-show.txt"
	;;
lce)
	t=${LCE_TOKENS:-2048}
	timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes qwen1.5b --dtype bf16 --tokens "$t" \
		--strategy model --budget 48 --final-rounds 2 --db "$out/lce-$t.db" > "$out/lce-tune-$t.log" 2>&1
	tail -3 "$out/lce-tune-$t.log"
	./bin/tune show --db "$out/lce-$t.db" > "$out/lce-show-$t.txt" 2>&1
	cat "$out/lce-show-$t.txt"
	;;
attn)
	shapes="b=8,s=1024,hq=12,hk=2,d=128,causal=1;b=4,s=2048,hq=12,hk=2,d=128,causal=1"
	shapes="$shapes;b=2,s=4096,hq=12,hk=2,d=128,causal=1;s=8192,hq=12,hk=2,d=128,causal=1"
	timed ./bin/tune --kernel flash_attn_bwd --shapes "$shapes" --dtype bf16 --final-rounds 2 --db "$out/attn.db" > "$out/attn-tune.log" 2>&1
	tail -3 "$out/attn-tune.log"
	./bin/tune show --db "$out/attn.db" > "$out/attn-show.txt" 2>&1
	cat "$out/attn-show.txt"
	timed python3 bench/peers_step.py --out "$out/peers-attn.jsonl" --tokens 8192 --kernels flash_attn_bwd > "$out/peers-attn.log" 2>&1
	grep -a -A12 "^kernel " "$out/peers-attn.log"
	;;
lora)
	timed ./bin/tune --kernel lora_bwd --shapes qwen1.5b --dtype bf16 --tokens 2048 \
		--final-rounds 2 --db "$out/lora.db" > "$out/lora-tune.log" 2>&1
	./bin/tune show --db "$out/lora.db" > "$out/lora-show.txt" 2>&1
	cat "$out/lora-show.txt"
	timed python3 bench/peers_step.py --out "$out/peers-lora-2048.jsonl" --tokens 2048 --kernels lora_bwd > "$out/peers-lora-2048.log" 2>&1
	grep -a -A20 "^kernel " "$out/peers-lora-2048.log"
	PATH=/usr/local/cuda/bin:$PATH nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/lora_x bench/research/lora_x.cu &&
		timeout 120 /tmp/lora_x > "$out/lora_x.txt" 2>&1
	cat "$out/lora_x.txt"
	;;
ce)
	timed ./bin/tune --kernel cross_entropy_bwd --shapes "t=2048,v=151936;t=8192,v=151936" --dtype bf16 \
		--final-rounds 2 --db "$out/ce.db" > "$out/ce-tune.log" 2>&1
	./bin/tune show --db "$out/ce.db" > "$out/ce-show.txt" 2>&1
	cat "$out/ce-show.txt"
	timed python3 bench/peers_step.py --out "$out/peers-ce.jsonl" --tokens 2048,8192 --kernels cross_entropy \
		--peers compile,liger --no-copy > "$out/peers-ce.log" 2>&1
	grep -a -A12 "^kernel " "$out/peers-ce.log"
	best=$(./bin/tune show --db "$out/ce.db" --shapes "t=2048,v=151936" 2>/dev/null | awk '/cross_entropy_bwd  / {print $4; exit}')
	[[ -n $best ]] && timed env KERNEL=cross_entropy_bwd SKIP=12 COUNT=1 FULL=1 OUT="$out/prof" \
		bash bench/prof-lora.sh "t=2048,v=151936|$best" > "$out/ce-prof.log" 2>&1
	;;
mix)
	PATH=/usr/local/cuda/bin:$PATH nvcc -O3 -arch=sm_90a -o /tmp/mix bench/research/mix.cu &&
		timeout 60 /tmp/mix > "$out/mix.txt" 2>&1
	cat "$out/mix.txt"
	timed ./bin/tune --kernel swiglu_bwd --shapes "m=2048,n=8960" --dtype bf16 --final-rounds 3 \
		--db "$out/swiglu.db" > "$out/swiglu-tune.log" 2>&1
	./bin/tune show --db "$out/swiglu.db" > "$out/swiglu-show.txt" 2>&1
	cat "$out/swiglu-show.txt"
	timed python3 bench/peers_step.py --out "$out/peers-swiglu.jsonl" --tokens 2048 --kernels swiglu_bwd \
		--peers compile,liger --no-copy > "$out/peers-swiglu.log" 2>&1
	grep -a -A8 "^kernel " "$out/peers-swiglu.log"
	;;
steppeers)
	for t in ${STEP_TOKENS:-2048 8192}; do
		timed python3 bench/peers_step.py --out "$out/peers-step-$t.jsonl" --tokens "$t" > "$out/peers-step-$t.log" 2>&1
		grep -a "FAILED" "$out/peers-step-$t.log" | cut -c1-300
		grep -a -A40 "^kernel " "$out/peers-step-$t.log"
	done
	;;
*)
	echo "PHASE=$phase: want diag, dequantgap, gemmgap, nf4, nf4card, cardtime, refresh, rows, launch, shard, exact, gemm, nights, pytorch, step, lce, attn, lora, ce, mix, steppeers or gemmfix" >&2
	exit 2
	;;
esac
done
