#!/usr/bin/env bash
# scratch: H200 call of the twenty-first session (cut to the budget left)
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-200})) RESERVE=10
o=$OUT/b; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
(export PATH=/usr/local/cuda/bin:$PATH; nvcc -O3 -arch=sm_90a -o /tmp/evict bench/research/evict.cu && timeout 40 /tmp/evict) > $o/evict.txt 2>&1
cat $o/evict.txt
DN="t=2048,r=64,dx=base,in=8960,out=1536"
PD="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
for r in 1 2; do for b in tune-x tune-nb tune-ev; do
  timed ./bin/$b --kernel lora_bwd --shapes "$DN" --params $PD --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/nb-$b.db >> $o/nb-$b.log 2>&1
done; done
for b in tune-x tune-nb tune-ev; do ./bin/$b show --db $o/nb-$b.db --variants --shapes "$DN" > $o/nb-$b-variants.txt 2>&1; grep -a "bt=" $o/nb-$b-variants.txt | cut -c1-20,100-200; done
PS="block=128,ept=1,grid=once,maxnreg=32,vec=4"
for r in 1 2; do
  timed ./bin/tune --kernel swiglu_bwd --shapes "m=2048,n=8960" --params $PS,cache=default --dtype bf16 --final-rounds 3 --fresh --db $o/swab-tune.db >> $o/swab-tune.log 2>&1
  timed ./bin/tune-ev --kernel swiglu_bwd --shapes "m=2048,n=8960" --params $PS,cache=stream --dtype bf16 --final-rounds 3 --fresh --db $o/swab-tune-ev.db >> $o/swab-tune-ev.log 2>&1
done
for b in tune tune-ev; do ./bin/$b show --db $o/swab-$b.db > $o/swab-$b-show.txt 2>&1; done
grep -a "swiglu_bwd  2048" $o/swab-*-show.txt | cut -c1-40,150-260
tar czf $OUT/b.tgz -C $OUT b
PC="block=256,copy=ld,pass=one,reverse=0,split=8,vec=8,vpt=2"
for b in tune-1613997 tune-7f02661 tune; do
  timed ./bin/$b --kernel cross_entropy_bwd --shapes "t=2048,v=151936" --params $PC --dtype bf16 --final-rounds 2 --fresh --db $o/ce-$b.db >> $o/ce-$b.log 2>&1
done
for b in tune-1613997 tune-7f02661 tune; do ./bin/$b show --db $o/ce-$b.db > $o/ce-$b-show.txt 2>&1; done
grep -a "cross_entropy_bwd  2048" $o/ce-*-show.txt | cut -c1-60,150-230
tar czf $OUT/b.tgz -C $OUT b
timed ./bin/tune-x --kernel lora_bwd --shapes "$DN" --params bt=128,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,pdl=1,rg=4,tparts=0,warps=8,xload=tma --dtype bf16 --final-rounds 2 --no-abandon --db $o/dn.db > $o/dn.log 2>&1
./bin/tune-x show --db $o/dn.db --variants --shapes "$DN" > $o/dn-variants.txt 2>&1
grep -a "bt=" $o/dn-variants.txt | cut -c1-200 | head -24
tar czf $OUT/b.tgz -C $OUT b
