#!/usr/bin/env bash
# scratch: twenty-fifth session, call 2: SwiGLU floor (mix), lora winners + torch, nf4 early A/B
rm -rf $OUT/*
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-570})) RESERVE=10
o=$OUT/b; mkdir -p $o
pack() { tar czf $OUT/b.tgz -C $OUT b; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
# 1. SwiGLU's stream-mix floor, swiglu_bwd's search, its peers
PHASE=mix OUT=$o BUDGET=150 bash bench/session_h200.sh > $o/mix-phase.log 2>&1
tail -25 $o/mix-phase.log
pack
# 1b. rope_bwd at 2048 tokens and its peers
timed ./bin/tune --kernel rope_bwd --shapes qwen1.5b --tokens 2048 --dtype bf16 --final-rounds 2 --db $o/rope.db > $o/rope.log 2>&1
./bin/tune show --db $o/rope.db > $o/rope-show.txt 2>&1; grep -a "rope_bwd  " $o/rope-show.txt | head -2 | cut -c1-220
timed python3 bench/peers_step.py --out $o/peers-rope.jsonl --tokens 2048 --kernels rope_bwd --peers compile,liger > $o/peers-rope.log 2>&1
grep -a -A8 "^kernel " $o/peers-rope.log
pack
# 2. lora rank-64 winners, torch's GEMMs
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
# 3. nf4_gemm_bwd early=0/1 at three committed winners (unfused), alternated twice
N=(
"m=512,n=1536,k=1536|bk=64,bm=128,bn=64,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=8"
"m=512,n=8960,k=1536|bk=64,bm=128,bn=64,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=8"
"m=2048,n=1536,k=1536|bk=64,bm=192,bn=128,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=4"
)
for r in 1 2; do for e in 0 1; do i=0; for x in "${N[@]}"; do i=$((i+1))
  timed ./bin/tune --kernel nf4_gemm_bwd --shapes "${x%%|*}" --params "${x#*|},early=$e" --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/nf4-$r-$e-$i.db >> $o/nf4.log 2>&1
  ./bin/tune show --db $o/nf4-$r-$e-$i.db > $o/nf4-$r-$e-$i-show.txt 2>&1
done; done; done
grep -a -h "nf4_gemm_bwd  " $o/nf4-*-show.txt | cut -c1-40,180-330
pack
rm -rf $o
