#!/usr/bin/env bash
# scratch: first call of the twenty-third session
rm -rf $OUT/*
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-270})) RESERVE=10
o=$OUT/a; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
T="t=2048,r=64,dx=base"
DN="$T,in=8960,out=1536"; GU="$T,in=1536,out=8960"; QO="$T,in=1536,out=1536"; KV="$T,in=1536,out=256"
P_DN="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
P_GU="bt=64,dbsplit=1,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=4,tparts=0,warps=4,xload=tma"
P_QO="bt=64,dbsplit=4,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=3,tparts=0,warps=4,xload=tma"
P_KV="bt=64,dbsplit=8,dyload=tma,fold=0,isplit=12,maxnreg=0,mma=wgmma,osplit=1,pdl=1,rg=4,stages=4,tparts=0,warps=4,xload=tma"
# xpf (x prefetched into L2 by the dY kernel) off and on, alternated twice
for r in 1 2; do for x in 0 1; do for s in DN GU QO KV; do
  sh=${!s}; p=P_$s; p=${!p}
  timed ./bin/tune --kernel lora_bwd --shapes "$sh" --params "$p,xpf=$x" --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/xpf$x-$s.db >> $o/xpf$x.log 2>&1
done; done; done
for x in 0 1; do for s in DN GU QO KV; do ./bin/tune show --db $o/xpf$x-$s.db --variants > $o/xpf$x-$s-variants.txt 2>&1; done; done
grep -a -h "bt=" $o/xpf*-variants.txt | cut -c1-30,100-220
tar czf $OUT/a.tgz -C $OUT a
timed python3 bench/peers_step.py --out $o/peers-lora-2048.jsonl --tokens 2048 --kernels lora_bwd --no-copy > $o/peers-lora-2048.log 2>&1
grep -a "torch 3" $o/peers-lora-2048.log
tar czf $OUT/a.tgz -C $OUT a
PHASE=mix OUT=$o BUDGET=$((DEADLINE - $(date +%s) - 5)) bash bench/session_h200.sh > $o/mix-phase.log 2>&1
tail -30 $o/mix-phase.log
tar czf $OUT/a.tgz -C $OUT a
