#!/usr/bin/env bash
# scratch: the session's last call. H200: issue 26/27 judging figures; else: linxent's kernels under Nsight Compute
rm -rf $OUT/*
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-330})) RESERVE=8
o=$OUT/c; mkdir -p $o
pack() { tar czf $OUT/c.tgz -C $OUT c; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
S="t=2048,h=1536,v=151936"; R="--ref-cache /tmp/lce-refs"
PE="softmax=epilogue,pdl=1,chunk=8192,dbm=128,dbn=192,dpers=0,sblock=128,zbm=128,zbn=256,zpers=0"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ $gpu == *H200* ]]; then
  timed ./bin/tune --kernel cross_entropy_bwd --shapes "t=2048,v=151936" --dtype bf16 --final-rounds 2 --db $o/ce-2048.db > $o/ce-2048.log 2>&1
  ./bin/tune show --db $o/ce-2048.db > $o/ce-2048-show.txt 2>&1; grep -a "cross_entropy_bwd  " $o/ce-2048-show.txt | cut -c1-220
  timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
  grep -a -A8 "^kernel " $o/peers-ce.log
  pack
  PHASE=mix OUT=$o BUDGET=100 bash bench/session_h200.sh > $o/mix-phase.log 2>&1
  tail -22 $o/mix-phase.log
  pack
  timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "$PE" --final-rounds 2 --no-abandon --fresh --db $o/le.db > $o/le.log 2>&1
  ./bin/tune show --db $o/le.db > $o/le-show.txt 2>&1; grep -a "linear_cross" $o/le-show.txt | head -1 | cut -c1-220
  timed python3 bench/peers_step.py --out $o/peers-lce.jsonl --tokens 2048 --kernels linear_cross_entropy --peers compile,gemm --no-copy > $o/peers-lce.log 2>&1
  grep -a -A6 "^kernel " $o/peers-lce.log
  pack
else
  # one run of the epilogue winner's 41 launches (after validation's 41), durations and DRAM bytes
  timed env KERNEL=linear_cross_entropy_bwd SKIP=41 COUNT=41 OUT=$o/prof bash bench/prof-lora.sh "$S|$PE" > $o/prof.log 2>&1
  tail -60 $o/prof.log | cut -c1-200
  pack
fi
rm -rf $o
