#!/usr/bin/env bash
# scratch: twenty-fifth session, call 1: LCE ref=running/fixed A/B, LCE peers, CE and its peers
rm -rf $OUT/*
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-570})) RESERVE=10
o=$OUT/a; mkdir -p $o
pack() { tar czf $OUT/a.tgz -C $OUT a; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $o/nvidia-smi.csv
cat $o/nvidia-smi.csv
S="t=2048,h=1536,v=151936"; R="--ref-cache /tmp/lce-refs"
PE="softmax=epilogue,pdl=1,chunk=8192,dbm=128,dbn=192,dpers=0,sblock=128,wbm=128,wbn=128,zbm=128,zbn=256,zpers=0"
lce() { timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "$1" "${@:3}" --final-rounds 2 --db $o/$2.db > $o/$2.log 2>&1
  ./bin/tune show --db $o/$2.db --variants > $o/$2-variants.txt 2>&1; grep -a "softmax=" $o/$2-variants.txt | head -4 | cut -c1-170; }
# 1. LCE at the H100 winner's tiles: ref=running and ref=fixed alternated twice
for r in 1 2; do for ref in running fixed; do lce "$PE,ref=$ref" le-$r-$ref --no-abandon --fresh; done; done
pack
timed python3 bench/peers_step.py --out $o/peers-lce.jsonl --tokens 2048 --kernels linear_cross_entropy --peers compile,liger,gemm,matmul --no-copy > $o/peers-lce.log 2>&1
grep -a -A12 "^kernel " $o/peers-lce.log
pack
# 2. cross-entropy on given logits at 2048 and 8192 tokens, and its peers
for t in 2048 8192; do
  timed ./bin/tune --kernel cross_entropy_bwd --shapes "t=$t,v=151936" --dtype bf16 --final-rounds 2 --db $o/ce-$t.db > $o/ce-$t.log 2>&1
  ./bin/tune show --db $o/ce-$t.db > $o/ce-$t-show.txt 2>&1; grep -a "cross_entropy_bwd  " $o/ce-$t-show.txt | head -1 | cut -c1-220
done
pack
timed python3 bench/peers_step.py --out $o/peers-ce.jsonl --tokens 2048,8192 --kernels cross_entropy --peers compile,liger --no-copy > $o/peers-ce.log 2>&1
grep -a -A12 "^kernel " $o/peers-ce.log
pack
rm -rf $o
