#!/usr/bin/env bash
# scratch: fourth call of the twenty-second session: CE regs A/B, CE search, then H200-only work
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-330})) RESERVE=10
o=$OUT/d; rm -rf $OUT/*; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
PC="block=256,copy=ld,pass=one,reverse=0,split=8,vec=8,vpt=2"
for r in 1 2; do for b in tune-7f02661 tune-hd tune-new:free tune-new:smem; do
  bin=${b%%:*}; reg=${b#*:}; p=$PC; [[ $b == *:* ]] && p=$PC,regs=$reg
  timed ./bin/$bin --kernel cross_entropy_bwd --shapes "t=2048,v=151936" --params $p --dtype bf16 --final-rounds 2 --fresh --db $o/ce-${b/:/-}.db >> $o/ce-${b/:/-}.log 2>&1
done; done
for b in tune-7f02661 tune-hd tune-new-free tune-new-smem; do echo $b; grep -a -h "best" $o/ce-$b.log | grep -o "best [0-9.]* µs"; done
tar czf $OUT/d.tgz -C $OUT d
if grep -q H200 $o/nvidia-smi.csv; then
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A8 "^kernel " $o/peers-ce.log
T="t=2048,r=64,dx=base"
DN="$T,in=8960,out=1536"
P_DN="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
for r in 1 2; do
  timed ./bin/tune-hd --kernel lora_bwd --shapes "$DN" --params $P_DN --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/dn.db >> $o/dn.log 2>&1
done
./bin/tune-hd show --db $o/dn.db --variants --shapes "$DN" > $o/dn-variants.txt 2>&1; grep -a "bt=" $o/dn-variants.txt | cut -c1-12,150-200
timed python3 bench/peers_step.py --out $o/peers-lora-2048.jsonl --tokens 2048 --kernels lora_bwd --no-copy > $o/peers-lora-2048.log 2>&1
grep -a "dx=base torch 3" $o/peers-lora-2048.log | grep -a "r=64"
tar czf $OUT/d.tgz -C $OUT d
PS="block=128,cache=default,ept=1,grid=once,maxnreg=32,vec=4"
for r in 1 2; do
  timed ./bin/tune-hd --kernel swiglu_bwd --shapes "m=2048,n=8960" --params $PS --dtype bf16 --final-rounds 3 --fresh --db $o/swiglu.db >> $o/swiglu.log 2>&1
done
./bin/tune-hd show --db $o/swiglu.db > $o/swiglu-show.txt 2>&1; grep -a swiglu $o/swiglu-show.txt | cut -c1-300
timed python3 bench/peers_step.py --out $o/peers-swiglu.jsonl --tokens 2048 --kernels swiglu_bwd --peers compile,liger --no-copy > $o/peers-swiglu.log 2>&1
grep -a -A6 "^kernel " $o/peers-swiglu.log
tar czf $OUT/d.tgz -C $OUT d
fi
timed ./bin/tune-new --kernel cross_entropy_bwd --shapes "t=2048,v=151936" --dtype bf16 --db $o/ce-search.db > $o/ce-search.log 2>&1
./bin/tune-new show --db $o/ce-search.db > $o/ce-search-show.txt 2>&1; ./bin/tune-new show --db $o/ce-search.db --variants > $o/ce-search-variants.txt 2>&1
cut -c1-250 $o/ce-search-show.txt | head -5; grep -a "regs=" $o/ce-search-variants.txt | head -12 | cut -c1-200
tar czf $OUT/d.tgz -C $OUT d
