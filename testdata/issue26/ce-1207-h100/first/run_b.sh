#!/usr/bin/env bash
# scratch: second call of the twenty-second session
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-280})) RESERVE=10
o=$OUT/b; rm -rf $OUT/a; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
PC="block=256,copy=ld,pass=one,reverse=0,split=8,vec=8,vpt=2"
for r in 1 2 3; do for b in tune-7f02661 tune-hd tune-new; do
  timed ./bin/$b --kernel cross_entropy_bwd --shapes "t=2048,v=151936" --params $PC --dtype bf16 --final-rounds 2 --fresh --db $o/ce-$b.db >> $o/ce-$b.log 2>&1
done; done
for b in tune-7f02661 tune-hd tune-new; do ./bin/$b show --db $o/ce-$b.db > $o/ce-$b-show.txt 2>&1; echo $b; grep -a -h "best" $o/ce-$b.log | grep -o "best [0-9.]* µs"; done
tar czf $OUT/b.tgz -C $OUT b
grep -q H200 $o/nvidia-smi.csv || exit 0
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A8 "^kernel " $o/peers-ce.log
T="t=2048,r=64,dx=base"
DN="$T,in=8960,out=1536"; GU="$T,in=1536,out=8960"; QO="$T,in=1536,out=1536"; KV="$T,in=1536,out=256"
P_DN="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
P_GU="bt=64,dbsplit=1,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=4,tparts=0,warps=4,xload=tma"
P_QO="bt=64,dbsplit=4,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=3,tparts=0,warps=4,xload=tma"
P_KV="bt=64,dbsplit=8,dyload=tma,fold=0,isplit=12,maxnreg=0,mma=wgmma,osplit=1,pdl=1,rg=4,stages=4,tparts=0,warps=4,xload=tma"
for r in 1 2; do for b in tune-hd tune-new; do
  timed ./bin/$b --kernel lora_bwd --shapes "$DN" --params $P_DN --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/dn-$b.db >> $o/dn-$b.log 2>&1
done; done
for s in GU QO KV; do sh=${!s}; p=P_$s; p=${!p}
  timed ./bin/tune-new --kernel lora_bwd --shapes "$sh" --params "$p" --dtype bf16 --final-rounds 2 --no-abandon --db $o/lora.db >> $o/lora.log 2>&1
done
./bin/tune-new show --db $o/lora.db > $o/lora-show.txt 2>&1
for b in tune-hd tune-new; do ./bin/$b show --db $o/dn-$b.db --variants --shapes "$DN" > $o/dn-$b-variants.txt 2>&1; grep -a "bt=" $o/dn-$b-variants.txt | cut -c1-12,150-200; done
grep -a lora_bwd $o/lora-show.txt | cut -c1-40,170-230
timed python3 bench/peers_step.py --out $o/peers-lora-2048.jsonl --tokens 2048 --kernels lora_bwd --no-copy > $o/peers-lora-2048.log 2>&1
grep -a "dx=base torch 3" $o/peers-lora-2048.log | grep -a "r=64"
tar czf $OUT/b.tgz -C $OUT b
PS="block=128,cache=default,ept=1,grid=once,maxnreg=32,vec=4"
for r in 1 2; do
  timed ./bin/tune-new --kernel swiglu_bwd --shapes "m=2048,n=8960" --params $PS --dtype bf16 --final-rounds 3 --fresh --db $o/swiglu.db >> $o/swiglu.log 2>&1
done
./bin/tune-new show --db $o/swiglu.db > $o/swiglu-show.txt 2>&1; grep -a swiglu $o/swiglu-show.txt | cut -c1-300
timed python3 bench/peers_step.py --out $o/peers-swiglu.jsonl --tokens 2048 --kernels swiglu_bwd --peers compile,liger --no-copy > $o/peers-swiglu.log 2>&1
grep -a -A6 "^kernel " $o/peers-swiglu.log
tar czf $OUT/b.tgz -C $OUT b
