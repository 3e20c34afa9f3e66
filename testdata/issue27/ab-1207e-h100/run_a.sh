#!/usr/bin/env bash
# scratch: first H200 call of the twenty-second session
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-260})) RESERVE=10
o=$OUT/a; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
T="t=2048,r=64,dx=base"
DN="$T,in=8960,out=1536"
PD="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
for r in 1 2; do for b in tune-old tune; do
  timed ./bin/$b --kernel lora_bwd --shapes "$DN" --params $PD --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/dn-$b.db >> $o/dn-$b.log 2>&1
done; done
for b in tune-old tune; do ./bin/$b show --db $o/dn-$b.db --variants --shapes "$DN" > $o/dn-$b-variants.txt 2>&1; grep -a "bt=" $o/dn-$b-variants.txt | cut -c1-20,100-200; done
GU="$T,in=1536,out=8960"; QO="$T,in=1536,out=1536"; KV="$T,in=1536,out=256"
P_GU="bt=64,dbsplit=1,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=4,tparts=0,warps=4,xload=tma"
P_QO="bt=64,dbsplit=4,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=3,tparts=0,warps=4,xload=tma"
P_KV="bt=64,dbsplit=8,dyload=tma,fold=0,isplit=12,maxnreg=0,mma=wgmma,osplit=1,pdl=1,rg=4,stages=4,tparts=0,warps=4,xload=tma"
D16="t=2048,r=16,dx=base,in=8960,out=1536"
P_D16="bt=256,dbsplit=0,dyload=cp,fold=0,isplit=12,maxnreg=0,mma=wgmma,osplit=16,pdl=1,rg=1,stages=3,tparts=0,warps=8,xload=tma"
for b in tune-old tune; do
  for s in GU QO KV D16; do
    sh=${!s}; p=P_$s; p=${!p}
    timed ./bin/$b --kernel lora_bwd --shapes "$sh" --params "$p" --dtype bf16 --final-rounds 2 --no-abandon --db $o/lora-$b.db >> $o/lora-$b.log 2>&1
  done
  ./bin/$b show --db $o/lora-$b.db > $o/lora-$b-show.txt 2>&1
done
cat $o/lora-tune-old-show.txt $o/lora-tune-show.txt | grep -a lora_bwd | cut -c1-40,170-230
timed python3 bench/peers_step.py --out $o/peers-lora-2048.jsonl --tokens 2048 --kernels lora_bwd --no-copy > $o/peers-lora-2048.log 2>&1
grep -a "dx=base torch 3" $o/peers-lora-2048.log
tar czf $OUT/a.tgz -C $OUT a
PC="block=256,copy=ld,pass=one,reverse=0,split=8,vec=8,vpt=2"
for r in 1 2 3; do for b in tune-7f02661 tune; do
  timed ./bin/$b --kernel cross_entropy_bwd --shapes "t=2048,v=151936" --params $PC --dtype bf16 --final-rounds 2 --fresh --db $o/ce-$b.db >> $o/ce-$b.log 2>&1
done; done
for b in tune-7f02661 tune; do ./bin/$b show --db $o/ce-$b.db > $o/ce-$b-show.txt 2>&1; done
grep -a -h "final\|median" $o/ce-*.log | tail -12
grep -a "cross_entropy_bwd  2048" $o/ce-*-show.txt | cut -c1-60,150-230
tar czf $OUT/a.tgz -C $OUT a
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A8 "^kernel " $o/peers-ce.log
tar czf $OUT/a.tgz -C $OUT a
