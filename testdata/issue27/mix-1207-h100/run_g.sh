#!/usr/bin/env bash
# scratch: seventh call of the twenty-second session: the stream-mix probe beside the harness's swiglu_bwd
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
export PATH=/usr/local/cuda/bin:$PATH
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-150})) RESERVE=10
o=$OUT/g; rm -rf $OUT/*; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
(nvcc -O3 -arch=sm_90a -o /tmp/mix bench/research/mix.cu && timeout 60 /tmp/mix) > $o/mix.txt 2>&1
cat $o/mix.txt
PS="block=128,cache=default,ept=1,grid=once,maxnreg=32,vec=4"
for r in 1 2; do
  timed ./bin/tune-new --kernel swiglu_bwd --shapes "m=2048,n=8960" --params $PS --dtype bf16 --final-rounds 3 --fresh --db $o/swiglu.db >> $o/swiglu.log 2>&1
done
./bin/tune-new show --db $o/swiglu.db > $o/swiglu-show.txt 2>&1; grep -a -h "best" $o/swiglu.log | grep -o "best [0-9.]* µs ([0-9]* GB/s)"; grep -a "copy" $o/swiglu-show.txt | head -2
tar czf $OUT/g.tgz -C $OUT g
