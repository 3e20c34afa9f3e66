#!/usr/bin/env bash
# scratch: the H200 lottery of the twenty-second session: on an H200 a short judging batch, else nothing
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
if [[ $gpu != *H200* ]]; then
  # an H100: the review mend's copy=in and copy=stream against the binary timed before it
  export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
  source bench/timed.sh
  export DEADLINE=$(($(date +%s) + 120)) RESERVE=5
  o=$OUT/j; rm -rf $OUT/*; mkdir -p $o
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
  for r in 1 2; do for b in tune-st tune; do for c in stream in; do
    timed ./bin/$b --kernel cross_entropy_bwd --shapes t=2048,v=151936 --params block=512,copy=$c,pass=one,reverse=0,split=4,vec=8,vpt=2,regs=free --dtype bf16 --final-rounds 2 --fresh --db $o/ce-$b-$c.db >> $o/ce-$b-$c.log 2>&1
  done; done; done
  for f in $o/ce-*.log; do echo $(basename $f) $(grep -a -h "best" $f | grep -o "best [0-9.]* µs" | tr '\n' ' '); done
  tar czf $OUT/j.tgz -C $OUT j
  exit 0
fi
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-200})) RESERVE=10
o=$OUT/i; rm -rf $OUT/*; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
S="t=2048,v=151936"
timed ./bin/tune --kernel cross_entropy_bwd --shapes $S --params pass=one,vec=8 --dtype bf16 --final-rounds 2 --db $o/ce.db > $o/ce.log 2>&1
./bin/tune show --db $o/ce.db > $o/ce-show.txt 2>&1; ./bin/tune show --db $o/ce.db --variants > $o/ce-variants.txt 2>&1
cut -c1-250 $o/ce-show.txt | head -4
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A6 "^kernel " $o/peers-ce.log
tar czf $OUT/i.tgz -C $OUT i
(PATH=/usr/local/cuda/bin:$PATH nvcc -O3 -arch=sm_90a -o /tmp/mix bench/research/mix.cu && timeout 40 /tmp/mix) > $o/mix.txt 2>&1
cat $o/mix.txt
PS="block=128,cache=default,ept=1,grid=once,maxnreg=32,vec=4"
for r in 1 2; do
  timed ./bin/tune --kernel swiglu_bwd --shapes "m=2048,n=8960" --params $PS --dtype bf16 --final-rounds 3 --fresh --db $o/swiglu.db >> $o/swiglu.log 2>&1
done
./bin/tune show --db $o/swiglu.db > $o/swiglu-show.txt 2>&1; grep -a -h "best" $o/swiglu.log | grep -o "best [0-9.]* µs ([0-9]* GB/s)"
tar czf $OUT/i.tgz -C $OUT i
timed python3 bench/peers_step.py --out $o/peers-swiglu.jsonl --tokens 2048 --kernels swiglu_bwd --peers compile,liger --no-copy > $o/peers-swiglu.log 2>&1
grep -a -A6 "^kernel " $o/peers-swiglu.log
DN="t=2048,r=64,dx=base,in=8960,out=1536"
P_DN="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
for r in 1 2; do
  timed ./bin/tune --kernel lora_bwd --shapes "$DN" --params $P_DN --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/dn.db >> $o/dn.log 2>&1
done
grep -a -h "best" $o/dn.log | grep -o "best [0-9.]* µs"
timed python3 bench/peers_step.py --out $o/peers-lora-2048.jsonl --tokens 2048 --kernels lora_bwd --no-copy > $o/peers-lora-2048.log 2>&1
grep -a "dx=base torch 3" $o/peers-lora-2048.log | grep -a "r=64"
tar czf $OUT/i.tgz -C $OUT i
