#!/usr/bin/env bash
# scratch: fifth call of the twenty-second session: CE copy=stream A/B and search; H200-only work after
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-330})) RESERVE=10
o=$OUT/e; rm -rf $OUT/*; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
S="t=2048,v=151936"
declare -A P=(
 [ld8]="block=256,copy=ld,pass=one,reverse=0,split=8,vec=8,vpt=2,regs=smem"
 [st8]="block=256,copy=stream,pass=one,reverse=0,split=8,vec=8,vpt=2,regs=smem"
 [in4]="block=512,copy=in,pass=one,reverse=0,split=4,vec=8,vpt=1,regs=free"
 [st4]="block=512,copy=stream,pass=one,reverse=0,split=4,vec=8,vpt=1,regs=free"
)
for r in 1 2; do for v in ld8 st8 in4 st4; do
  timed ./bin/tune-new --kernel cross_entropy_bwd --shapes $S --params ${P[$v]} --dtype bf16 --final-rounds 2 --fresh --db $o/ce-$v.db >> $o/ce-$v.log 2>&1
done; done
for v in ld8 st8 in4 st4; do echo $v; grep -a -h "best" $o/ce-$v.log | grep -o "best [0-9.]* µs"; done
tar czf $OUT/e.tgz -C $OUT e
timed ./bin/tune-new --kernel cross_entropy_bwd --shapes $S --params pass=one,vec=8,copy=stream --dtype bf16 --final-rounds 2 --db $o/ce-stream-search.db > $o/ce-stream-search.log 2>&1
./bin/tune-new show --db $o/ce-stream-search.db --variants > $o/ce-stream-search-variants.txt 2>&1
grep -a "copy=" $o/ce-stream-search-variants.txt | head -10 | cut -c1-150
tar czf $OUT/e.tgz -C $OUT e
if grep -q H200 $o/nvidia-smi.csv; then
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A8 "^kernel " $o/peers-ce.log
tar czf $OUT/e.tgz -C $OUT e
T="t=2048,r=64,dx=base"
DN="$T,in=8960,out=1536"
P_DN="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
for r in 1 2; do
  timed ./bin/tune-hd --kernel lora_bwd --shapes "$DN" --params $P_DN --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/dn.db >> $o/dn.log 2>&1
done
./bin/tune-hd show --db $o/dn.db --variants --shapes "$DN" > $o/dn-variants.txt 2>&1; grep -a "bt=" $o/dn-variants.txt | cut -c1-12,150-200
timed python3 bench/peers_step.py --out $o/peers-lora-2048.jsonl --tokens 2048 --kernels lora_bwd --no-copy > $o/peers-lora-2048.log 2>&1
grep -a "dx=base torch 3" $o/peers-lora-2048.log | grep -a "r=64"
tar czf $OUT/e.tgz -C $OUT e
PS="block=128,cache=default,ept=1,grid=once,maxnreg=32,vec=4"
for r in 1 2; do
  timed ./bin/tune-hd --kernel swiglu_bwd --shapes "m=2048,n=8960" --params $PS --dtype bf16 --final-rounds 3 --fresh --db $o/swiglu.db >> $o/swiglu.log 2>&1
done
./bin/tune-hd show --db $o/swiglu.db > $o/swiglu-show.txt 2>&1; grep -a swiglu $o/swiglu-show.txt | cut -c1-300
timed python3 bench/peers_step.py --out $o/peers-swiglu.jsonl --tokens 2048 --kernels swiglu_bwd --peers compile,liger --no-copy > $o/peers-swiglu.log 2>&1
grep -a -A6 "^kernel " $o/peers-swiglu.log
tar czf $OUT/e.tgz -C $OUT e
fi
