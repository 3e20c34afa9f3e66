#!/usr/bin/env bash
# scratch: third call of the twenty-second session: CE bisect + SASS + ncu
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
export PATH=/usr/local/cuda/bin:$PATH
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-240})) RESERVE=10
o=$OUT/c; rm -rf $OUT/*; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
for f in old new fix; do ptxas -arch=sm_90a -v xptx/$f.ptx -o /tmp/$f.cubin > $o/ptxas-$f.txt 2>&1; cuobjdump -sass /tmp/$f.cubin > $o/$f.sass 2>&1; grep Used $o/ptxas-$f.txt; done
PC="block=256,copy=ld,pass=one,reverse=0,split=8,vec=8,vpt=2"
for r in 1 2; do for b in tune-7f02661 tune-73128a3 tune-hd tune-new; do
  timed ./bin/$b --kernel cross_entropy_bwd --shapes "t=2048,v=151936" --params $PC --dtype bf16 --final-rounds 2 --fresh --db $o/ce-$b.db >> $o/ce-$b.log 2>&1
done; done
for b in tune-7f02661 tune-73128a3 tune-hd tune-new; do echo $b; grep -a -h "best" $o/ce-$b.log | grep -o "best [0-9.]* µs"; done
tar czf $OUT/c.tgz -C $OUT c
for b in tune-7f02661 tune-new; do
  OUT=$o/prof-$b TUNE=./bin/$b KERNEL=cross_entropy_bwd SKIP=6 COUNT=3 NCU_ARGS="--clock-control none" timeout 60 bash bench/prof-lora.sh "t=2048,v=151936|$PC" > $o/prof-$b.log 2>&1
  grep -a -E "gpu__time|dram__bytes|inst_executed" $o/prof-$b/ncu-1.txt | head -12
done
tar czf $OUT/c.tgz -C $OUT c
