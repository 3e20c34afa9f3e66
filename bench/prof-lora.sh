#!/usr/bin/env bash
# bench/prof-lora.sh: Nsight Compute's per-kernel split of lora_bwd variants
# on the GPU machine: each SHAPE|PARAMS below is tuned alone with the tune
# worker under ncu (GRADTUNE_WORKER_WRAP; ncu's output goes to a file, since
# the worker talks to tune over stdin and stdout), skipping the first 24
# launches (validation) and recording the next 9 (three runs of the dY
# kernel, the x kernel and the finalize): duration, DRAM bytes, L2 red
# requests, tensor-pipe activity, shared-memory wavefronts, instructions.
# With FULL=1 it records ncu's sections instead (speed of light, memory,
# warp stalls, scheduler, occupancy, launch) for one run of the three
# kernels, and prints them whole; with FULL=stalls, each kernel's warp
# stall reasons (cycles per issued instruction, by reason).
# KERNEL=<family> profiles another family's variants (then name them);
# SKIP and COUNT change the launches skipped and recorded; NCU_ARGS adds
# ncu options (--clock-control none: durations at the card's own clocks);
# TUNE names another tune binary than bin/tune.
# Usage: OUT=/tmp/o [FULL=1] bash bench/prof-lora.sh ["SHAPE|PARAMS" ...]
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
PHASE=none bash "$(dirname "${BASH_SOURCE[0]}")/session_h200.sh" >/dev/null 2>&1 # unpacks binz/
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name --format=csv,noheader
metrics=gpu__time_duration.sum,lts__t_requests_op_red.sum,lts__t_sectors_op_red.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics=$metrics,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum
specs=("$@")
if ((${#specs[@]} == 0)); then
	specs=("t=2048,in=8960,out=1536,r=64,dx=base|bt=128,isplit=16,osplit=8,pdl=1,rg=2,stages=3,warps=8"
		"t=2048,in=8960,out=1536,r=64,dx=base|bt=256,isplit=16,osplit=8,pdl=1,rg=1,stages=3,warps=8"
		"t=2048,in=1536,out=1536,r=64,dx=base|bt=128,isplit=12,osplit=8,pdl=1,rg=2,stages=3,warps=8")
fi
i=0
for spec in "${specs[@]}"; do
	i=$((i + 1))
	shape=${spec%%|*} params=${spec##*|}
	what="--metrics $metrics --launch-count ${COUNT:-9}"
	if [[ ${FULL:-0} == stalls ]]; then
		st=""
		for r in barrier long_scoreboard short_scoreboard math_pipe_throttle mio_throttle wait not_selected dispatch_stall lg_throttle membar selected no_instruction branch_resolving drain sleeping tex_throttle; do
			st="$st,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
		done
		what="--metrics gpu__time_duration.sum,smsp__inst_executed.sum${st} --launch-count ${COUNT:-3}"
	elif [[ ${FULL:-0} == 1 ]]; then
		what="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --launch-count ${COUNT:-3}"
	fi
	GRADTUNE_WORKER_WRAP="ncu ${NCU_ARGS:-} --log-file $out/ncu-$i.txt $what --launch-skip ${SKIP:-24}" \
		timeout 150 "${TUNE:-./bin/tune}" --kernel "${KERNEL:-lora_bwd}" --shapes "$shape" --dtype bf16 --params "$params" --final-rounds 0 \
		--db "$out/prof-$i.db" >"$out/tune-$i.log" 2>&1
	echo "== $i rc=$? $shape $params"
	if [[ ${FULL:-0} != 0 ]]; then
		grep -a -v "^==PROF==\|^    ---" "$out/ncu-$i.txt" | grep -a -v "^ *$" | head -400
	else
		grep -a "${KERNEL:-lora_bwd}_\|gpu__time\|lts__t_req\|dram__bytes\|hmma\|wavefronts\|inst_exec" "$out/ncu-$i.txt" | head -30
	fi
done
