#!/usr/bin/env bash
# One device call (about 9.5 minutes, BUDGET=570) for issues 26 and 27 on
# an H200, ready since 2026-12-07 (twenty-sixth session, when no machine
# came): whether the driver's default carveout lets two CTAs of the
# zctas=2 logits GEMM share an SM (bench/research/carveout.cu); the LCE
# levers alternated against 3373847 with peers (bench/issue26_lce_ab.sh,
# which needs binz/tune-old.xz, see there); the LCE at 8192 tokens with
# torch.compile and the head GEMMs; the lora rank-64 winners (evict_first
# on x, never timed on an H200) with torch's three GEMMs; SwiGLU's
# stream-mix floor and search with peers (PHASE=mix). Then, in a second
# call, PHASE=ce of bench/session_h200.sh. Build here:
#   GOAMD64=v3 go build -ldflags='-s -w' -o bin/tune ./cmd/tune && xz -6 -T0 -c bin/tune > binz/tune.xz
# and run with carry ["binz"] (testdata/ moved aside); results in
# $OUT/lce.tgz and $OUT/b.tgz.
start=$(date +%s)
PATH=/usr/local/cuda/bin:$PATH nvcc -O3 -arch=sm_90a -o /tmp/carveout bench/research/carveout.cu && /tmp/carveout | tee /tmp/carveout.txt
BUDGET=250 bash bench/issue26_lce_ab.sh > /tmp/lce-ab.log 2>&1
tail -30 /tmp/lce-ab.log
cp /tmp/lce-ab.log /tmp/carveout.txt $OUT/lce/ 2>/dev/null; tar czf $OUT/lce.tgz -C $OUT lce; rm -rf $OUT/lce
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$((start + ${BUDGET:-575})) RESERVE=8
o=$OUT/b; mkdir -p $o
pack() { tar czf $OUT/b.tgz -C $OUT b; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
# LCE at 8192 tokens: the two candidates, then torch.compile and the head GEMMs
B="softmax=epilogue,ref=fixed,chunk=8192,dbm=128,dbn=192,dpers=0,sblock=128,wbm=128,wbn=128,zpers=0,pstore=quad,probe=2048"
for c in "pdl=1,zbm=256,zbn=128,zctas=1" "pdl=1,zbm=128,zbn=128,zctas=2"; do
  timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes t=8192,h=1536,v=151936 --dtype bf16 --params "$B,$c" --final-rounds 2 --no-abandon --fresh --db $o/lce8k-${c##*=}.db >> $o/lce8k.log 2>&1
  ./bin/tune show --db $o/lce8k-${c##*=}.db --variants 2>&1 | grep -a "softmax=" | head -1 | cut -c1-230
done
timed python3 bench/peers_step.py --out $o/peers-lce-8192.jsonl --tokens 8192 --kernels linear_cross_entropy --peers compile,mm --no-copy > $o/peers-lce-8192.log 2>&1
grep -a -A6 "^kernel " $o/peers-lce-8192.log
pack
T="t=2048,r=64,dx=base"
DN="$T,in=8960,out=1536"; GU="$T,in=1536,out=8960"; QO="$T,in=1536,out=1536"; KV="$T,in=1536,out=256"
P_DN="bt=128,dbsplit=4,dyload=tma,fold=0,isplit=33,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=4,tparts=0,warps=8,xload=tma"
P_GU="bt=64,dbsplit=1,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=4,tparts=0,warps=4,xload=tma"
P_QO="bt=64,dbsplit=4,dyload=tma,fold=0,isplit=8,maxnreg=0,mma=wgmma,osplit=4,pdl=1,rg=2,stages=3,tparts=0,warps=4,xload=tma"
P_KV="bt=64,dbsplit=8,dyload=tma,fold=0,isplit=12,maxnreg=0,mma=wgmma,osplit=1,pdl=1,rg=4,stages=4,tparts=0,warps=4,xload=tma"
for s in DN GU QO KV; do
  sh=${!s}; p=P_$s; p=${!p}
  timed ./bin/tune --kernel lora_bwd --shapes "$sh" --params "$p" --dtype bf16 --final-rounds 3 --no-abandon --fresh --db $o/w-$s.db >> $o/w.log 2>&1
  ./bin/tune show --db $o/w-$s.db --variants > $o/w-$s-variants.txt 2>&1
done
grep -a -h "bt=" $o/w-*-variants.txt | cut -c1-30,100-220
timed python3 bench/peers_step.py --out $o/peers-lora-2048.jsonl --tokens 2048 --kernels lora_bwd --no-copy > $o/peers-lora-2048.log 2>&1
grep -a "torch 3" $o/peers-lora-2048.log
pack
PHASE=mix OUT=$o BUDGET=120 bash bench/session_h200.sh > $o/mix-phase.log 2>&1
tail -12 $o/mix-phase.log
pack
pack
rm -rf $o
