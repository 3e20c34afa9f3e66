#!/usr/bin/env bash
# scratch: first H200 call of the twenty-first session
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-540})) RESERVE=15
o=$OUT/a; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
T="t=2048,r=64,dx=base"
GU="$T,in=1536,out=8960"; DN="$T,in=8960,out=1536"; QO="$T,in=1536,out=1536"; KV="$T,in=1536,out=256"
P_GU="bt=64,dbsplit=1,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=4,tparts=0,warps=4,xload=tma"
P_DN="bt=128,dbsplit=4,dyload=tma,fold=0,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,stages=3,tparts=0,warps=8,xload=tma"
P_QO="bt=64,dbsplit=4,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=3,tparts=0,warps=4,xload=tma"
P_KV="bt=64,dbsplit=8,dyload=tma,fold=0,isplit=12,maxnreg=0,mma=wgmma,osplit=1,pdl=1,rg=4,stages=4,tparts=0,warps=4,xload=tma"
for b in tune-old tune; do
  for s in GU DN QO KV; do
    sh=${!s}; p=P_$s; p=${!p}
    timed ./bin/$b --kernel lora_bwd --shapes "$sh" --params "$p" --dtype bf16 --final-rounds 2 --no-abandon --db $o/lora-$b.db >> $o/lora-$b.log 2>&1
  done
  ./bin/$b show --db $o/lora-$b.db > $o/lora-$b-show.txt 2>&1
  ./bin/$b show --db $o/lora-$b.db --variants --shapes "$DN" > $o/lora-$b-down-variants.txt 2>&1
done
cat $o/lora-tune-old-show.txt $o/lora-tune-show.txt | cut -c1-20,60-300
grep -a "isplit" $o/lora-tune-down-variants.txt | head -20 | cut -c1-250
timed python3 bench/peers_step.py --out $o/peers-lora-2048.jsonl --tokens 2048 --kernels lora_bwd --no-copy > $o/peers-lora-2048.log 2>&1
grep -a -A12 "^kernel " $o/peers-lora-2048.log
PS="block=128,cache=default,ept=1,grid=once,maxnreg=32,vec=4"
for b in tune-old tune tune-old tune; do
  timed ./bin/$b --kernel swiglu_bwd --shapes "m=2048,n=8960" --params $PS --dtype bf16 --final-rounds 3 --fresh --db $o/swiglu-$b.db >> $o/swiglu-$b.log 2>&1
done
for b in tune-old tune; do ./bin/$b show --db $o/swiglu-$b.db > $o/swiglu-$b-show.txt 2>&1; done
grep -a "swiglu" $o/swiglu-*-show.txt | cut -c1-300
timed python3 bench/peers_step.py --out $o/peers-swiglu.jsonl --tokens 2048 --kernels swiglu_bwd --peers compile,liger --no-copy > $o/peers-swiglu.log 2>&1
grep -a -A8 "^kernel " $o/peers-swiglu.log
timed ./bin/tune --kernel cross_entropy_bwd --shapes "t=2048,v=151936" --params pass=one,split=8,copy=ld,block=256,vec=8,vpt=2,reverse=0 --dtype bf16 --final-rounds 2 --db $o/ce.db > $o/ce-tune.log 2>&1
./bin/tune show --db $o/ce.db > $o/ce-show.txt 2>&1; cut -c1-300 $o/ce-show.txt | head -6
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A8 "^kernel " $o/peers-ce.log
tar czf $OUT/a.tgz -C $OUT a
P_DN33="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,stages=4,tparts=0,warps=8,xload=tma"
P_DN28="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=28,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,stages=3,tparts=0,warps=8,xload=tma"
OUT=$o/prof NCU_ARGS="--clock-control none --cache-control none" timeout 100 bash bench/prof-lora.sh "$DN|$P_DN33" "$DN|$P_DN28" > $o/prof-down.log 2>&1
cat $o/prof-down.log | head -60
OUT=$o/stall FULL=stalls NCU_ARGS="--clock-control none --cache-control none" timeout 80 bash bench/prof-lora.sh "$DN|$P_DN33" > $o/stall-down.log 2>&1
cat $o/stall-down.log | head -60
tar czf $OUT/a.tgz -C $OUT a
