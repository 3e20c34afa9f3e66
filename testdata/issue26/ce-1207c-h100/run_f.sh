#!/usr/bin/env bash
# scratch: sixth call of the twenty-second session: CE default search at 2048 and 8192 tokens with the peers
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-300})) RESERVE=10
o=$OUT/f; rm -rf $OUT/*; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
for t in 2048 8192; do
  timed ./bin/tune-new --kernel cross_entropy_bwd --shapes "t=$t,v=151936" --dtype bf16 --final-rounds 2 --db $o/ce.db >> $o/ce-search.log 2>&1
done
./bin/tune-new show --db $o/ce.db > $o/ce-show.txt 2>&1; ./bin/tune-new show --db $o/ce.db --variants > $o/ce-variants.txt 2>&1
cut -c1-260 $o/ce-show.txt | head -6
tar czf $OUT/f.tgz -C $OUT f
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048,8192 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A10 "^kernel " $o/peers-ce.log
tar czf $OUT/f.tgz -C $OUT f
