#!/usr/bin/env bash
# scratch: lora x-kernel lag A/B/C (old c0c46db, head, head without the x kernel's lag)
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-400})) RESERVE=15
o=$OUT/b; mkdir -p $o
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
T="t=2048,r=64,dx=base"
GU="$T,in=1536,out=8960"; DN="$T,in=8960,out=1536"; QO="$T,in=1536,out=1536"; KV="$T,in=1536,out=256"
P_GU="bt=64,dbsplit=1,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,tparts=0,warps=4,xload=tma"
P_DN="bt=128,dbsplit=4,dyload=tma,fold=0,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
P_QO="bt=64,dbsplit=4,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=3,tparts=0,warps=4,xload=tma"
P_KV="bt=64,dbsplit=8,dyload=tma,fold=0,isplit=12,maxnreg=0,mma=wgmma,osplit=1,pdl=1,rg=4,stages=4,tparts=0,warps=4,xload=tma"
for b in tune-old tune tune-nolag; do
  for s in DN GU QO KV; do
    sh=${!s}; p=P_$s; p=${!p}
    timed ./bin/$b --kernel lora_bwd --shapes "$sh" --params "$p" --dtype bf16 --final-rounds 2 --no-abandon --db $o/lora-$b.db >> $o/lora-$b.log 2>&1
  done
  ./bin/$b show --db $o/lora-$b.db > $o/lora-$b-show.txt 2>&1
  for s in DN GU; do ./bin/$b show --db $o/lora-$b.db --variants --shapes "${!s}" > $o/lora-$b-$s-variants.txt 2>&1; done
  cut -c1-20,60-300 $o/lora-$b-show.txt | grep lora_bwd
done
head -12 $o/lora-*-DN-variants.txt | cut -c1-200
tar czf $OUT/b.tgz -C $OUT b
