#!/usr/bin/env bash
# scratch: twenty-fourth session, one call in priority order (H200 wanted)
rm -rf $OUT/*
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-560})) RESERVE=10
o=$OUT/a; mkdir -p $o
pack() { tar czf $OUT/a.tgz -C $OUT a; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ $gpu == *H200* ]]; then
# 0. cross-entropy on given logits (default search) at 2048 and 8192 tokens, and its peers
for t in 2048 8192; do
  timed ./bin/tune --kernel cross_entropy_bwd --shapes "t=$t,v=151936" --dtype bf16 --final-rounds 2 --db $o/ce-$t.db > $o/ce-$t.log 2>&1
  ./bin/tune show --db $o/ce-$t.db > $o/ce-$t-show.txt 2>&1; grep -a "cross_entropy_bwd  " $o/ce-$t-show.txt | head -1 | cut -c1-220
done
pack
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048,8192 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A12 "^kernel " $o/peers-ce.log
pack
# 3. SwiGLU's stream-mix floor, swiglu_bwd's search, its peers
PHASE=mix OUT=$o BUDGET=$((DEADLINE - $(date +%s) - 60)) bash bench/session_h200.sh > $o/mix-phase.log 2>&1
tail -30 $o/mix-phase.log
pack
# 2. lora rank-64 winners (evict_first x), torch's GEMMs
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
# 1. LCE: softmax=kernel at the H100 winner, softmax=epilogue by the model strategy, kernel again
S="t=2048,h=1536,v=151936"; R="--ref-cache /tmp/lce-refs"
PK="softmax=kernel,chunk=8192,dbm=128,dbn=192,dpers=0,sblock=128,zbm=256,zbn=128,zpers=1"
timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "$PK" --final-rounds 2 --no-abandon --fresh --db $o/lk1.db > $o/lk1.log 2>&1
timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "softmax=epilogue,dbm=128,dbn=192,dpers=0" --strategy model --budget 16 --final-rounds 2 --db $o/le.db > $o/le.log 2>&1
./bin/tune show --db $o/le.db --variants > $o/le-variants.txt 2>&1; head -10 $o/le-variants.txt | cut -c1-150
timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "$PK" --final-rounds 2 --no-abandon --fresh --db $o/lk2.db > $o/lk2.log 2>&1
for d in lk1 lk2; do ./bin/tune show --db $o/$d.db > $o/$d-show.txt 2>&1; grep -a "linear_cross" $o/$d-show.txt | head -1 | cut -c1-200; done
pack
# 4. nf4_gemm_bwd early=0/1 at the committed winners (unfused), alternated twice
N=(
"m=512,n=1536,k=1536|bk=64,bm=128,bn=64,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=8"
"m=512,n=8960,k=1536|bk=64,bm=128,bn=64,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=8"
"m=512,n=1536,k=8960|bk=64,bm=192,bn=128,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=grouped,persistent=1,splitk=1,stages=4"
"m=2048,n=1536,k=1536|bk=64,bm=192,bn=128,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=4"
"m=2048,n=8960,k=1536|bk=64,bm=128,bn=192,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=4"
"m=2048,n=1536,k=8960|bk=64,bm=192,bn=128,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=grouped,persistent=1,splitk=1,stages=4"
)
for r in 1 2; do for e in 0 1; do i=0; for x in "${N[@]}"; do i=$((i+1))
  timed ./bin/tune --kernel nf4_gemm_bwd --shapes "${x%%|*}" --params "${x#*|},early=$e" --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/nf4-$r-$e-$i.db >> $o/nf4.log 2>&1
  ./bin/tune show --db $o/nf4-$r-$e-$i.db > $o/nf4-$r-$e-$i-show.txt 2>&1
done; done; done
grep -a -h "nf4_gemm_bwd  " $o/nf4-*-show.txt | cut -c1-40,180-330
pack
else
# 4. nf4_gemm_bwd early=0/1 at the committed winners (unfused), alternated twice
N=(
"m=512,n=1536,k=1536|bk=64,bm=128,bn=64,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=8"
"m=512,n=8960,k=1536|bk=64,bm=128,bn=64,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=8"
"m=512,n=1536,k=8960|bk=64,bm=192,bn=128,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=grouped,persistent=1,splitk=1,stages=4"
"m=2048,n=1536,k=1536|bk=64,bm=192,bn=128,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=4"
"m=2048,n=8960,k=1536|bk=64,bm=128,bn=192,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=m,persistent=0,splitk=1,stages=4"
"m=2048,n=1536,k=8960|bk=64,bm=192,bn=128,cluster=1,codes=tma,dequant=unfused,epilogue=tma,lookup=prmt,mma=wgmma,order=grouped,persistent=1,splitk=1,stages=4"
)
for r in 1 2; do for e in 0 1; do i=0; for x in "${N[@]}"; do i=$((i+1))
  timed ./bin/tune --kernel nf4_gemm_bwd --shapes "${x%%|*}" --params "${x#*|},early=$e" --dtype bf16 --final-rounds 2 --no-abandon --fresh --db $o/nf4-$r-$e-$i.db >> $o/nf4.log 2>&1
  ./bin/tune show --db $o/nf4-$r-$e-$i.db > $o/nf4-$r-$e-$i-show.txt 2>&1
done; done; done
grep -a -h "nf4_gemm_bwd  " $o/nf4-*-show.txt | cut -c1-40,180-330
pack
# 1. LCE: softmax=kernel at the H100 winner, softmax=epilogue by the model strategy, kernel again
S="t=2048,h=1536,v=151936"; R="--ref-cache /tmp/lce-refs"
PK="softmax=kernel,chunk=8192,dbm=128,dbn=192,dpers=0,sblock=128,zbm=256,zbn=128,zpers=1"
timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "$PK" --final-rounds 2 --no-abandon --fresh --db $o/lk1.db > $o/lk1.log 2>&1
timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "softmax=epilogue,pdl=1,chunk=8192" --strategy model --budget 16 --final-rounds 2 --db $o/le.db > $o/le.log 2>&1
./bin/tune show --db $o/le.db --variants > $o/le-variants.txt 2>&1; head -10 $o/le-variants.txt | cut -c1-150
timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "$PK" --final-rounds 2 --no-abandon --fresh --db $o/lk2.db > $o/lk2.log 2>&1
for d in lk1 lk2; do ./bin/tune show --db $o/$d.db > $o/$d-show.txt 2>&1; grep -a "linear_cross" $o/$d-show.txt | head -1 | cut -c1-200; done
pack
fi
rm -rf $o
