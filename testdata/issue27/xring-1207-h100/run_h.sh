#!/usr/bin/env bash
# scratch: eighth call of the twenty-second session: the TMA x kernel's own ring depth (xstages) at rank 64
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-280})) RESERVE=10
o=$OUT/h; rm -rf $OUT/*; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
T="t=2048,r=64,dx=base"
DN="$T,in=8960,out=1536"
B="bt=128,dbsplit=4,dyload=tma,fold=0,maxnreg=0,mma=wgmma,osplit=4,pdl=1,tparts=0,warps=8,xload=tma"
V=("rg=4,isplit=33,stages=3,xstages=0" "rg=4,isplit=33,stages=3,xstages=6" "rg=2,isplit=16,stages=3,xstages=0" "rg=2,isplit=16,stages=3,xstages=8" "rg=2,isplit=16,stages=3,xstages=10")
for r in 1 2; do for i in 0 1 2 3 4; do
  timed ./bin/tune-new --kernel lora_bwd --shapes "$DN" --params $B,${V[$i]} --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/dn-$i.db >> $o/dn-$i.log 2>&1
done; done
for i in 0 1 2 3 4; do echo "${V[$i]}"; grep -a -h "best" $o/dn-$i.log | grep -o "best [0-9.]* µs"; done
tar czf $OUT/h.tgz -C $OUT h
timed ./bin/tune-new --kernel lora_bwd --shapes "$DN" --params $B --dtype bf16 --final-rounds 2 --db $o/dn-search.db > $o/dn-search.log 2>&1
./bin/tune-new show --db $o/dn-search.db --variants > $o/dn-search-variants.txt 2>&1
grep -a "bt=" $o/dn-search-variants.txt | head -12 | cut -c1-12,100-210
tar czf $OUT/h.tgz -C $OUT h
GU="$T,in=1536,out=8960"; QO="$T,in=1536,out=1536"; KV="$T,in=1536,out=256"
P_GU="bt=64,dbsplit=1,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=4,tparts=0,warps=4,xload=tma"
P_QO="bt=64,dbsplit=4,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=3,tparts=0,warps=4,xload=tma"
P_KV="bt=64,dbsplit=8,dyload=tma,fold=0,isplit=12,maxnreg=0,mma=wgmma,osplit=1,pdl=1,rg=4,stages=4,tparts=0,warps=4,xload=tma"
for s in GU QO KV; do sh=${!s}; p=P_$s; p=${!p}
  timed ./bin/tune-new --kernel lora_bwd --shapes "$sh" --params "$p" --dtype bf16 --final-rounds 2 --no-abandon --db $o/xs-$s.db > $o/xs-$s.log 2>&1
  ./bin/tune-new show --db $o/xs-$s.db --variants > $o/xs-$s-variants.txt 2>&1
  grep -a "bt=" $o/xs-$s-variants.txt | head -5 | cut -c1-12,100-210
done
tar czf $OUT/h.tgz -C $OUT h
