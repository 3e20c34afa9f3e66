#!/usr/bin/env bash
# Issue 26: the linear cross-entropy's epilogue-path levers of 2026-12-07
# (twenty-fifth session), built and validated on the interpreter but not
# timed (no device machine came), in one device call of about 4 minutes:
# the binary of 3373847 (ref=fixed alone, 16% faster than ref=running on
# an H100) against the head's two chains, pstore=quad, probe=2048, pdl=2
# and zctas=2 (two logits-GEMM CTAs an SM), alternated; then
# torch.compile's and torch's head GEMMs; then the model strategy over
# the new axes. Build here:
#   go build -o bin/tune ./cmd/tune   (the head; xz into binz/tune.xz)
#   git worktree add /tmp/old 3373847 && (cd /tmp/old && go build -o /tmp/tune-old ./cmd/tune)
#   xz -c /tmp/tune-old > binz/tune-old.xz
# then run it with carry ["binz"]; results go to ${OUT}/lce.tgz.
rm -rf "${OUT:?}"/*
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1 # unpacks binz/ into bin/
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + ${BUDGET:-560})) RESERVE=10
o=$OUT/lce; mkdir -p "$o"
pack() { tar czf "$OUT/lce.tgz" -C "$OUT" lce; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee "$o/nvidia-smi.csv"
S="t=2048,h=1536,v=151936"; R="--ref-cache /tmp/lce-refs"
B="softmax=epilogue,ref=fixed,chunk=8192,dbm=128,dbn=192,dpers=0,sblock=128,wbm=128,wbn=128,zpers=0"
lce() { timed "./bin/$1" --kernel linear_cross_entropy_bwd --shapes "$S" --dtype bf16 $R --params "$2" "${@:4}" --final-rounds 2 --db "$o/$3.db" > "$o/$3.log" 2>&1
  "./bin/$1" show --db "$o/$3.db" --variants > "$o/$3-variants.txt" 2>&1; grep -a "softmax=" "$o/$3-variants.txt" | head -1 | cut -c1-200; }
for r in 1 2; do
  lce tune-old "$B,pdl=1,zbm=128,zbn=256" old-$r --no-abandon --fresh
  lce tune "$B,pdl=1,zbm=256,zbn=128,pstore=quad,probe=2048" quadp-$r --no-abandon --fresh
  lce tune "$B,pdl=2,zbm=256,zbn=128,pstore=quad,probe=2048" quadp2-$r --no-abandon --fresh
  lce tune "$B,pdl=1,zbm=128,zbn=128,zctas=2,pstore=quad,probe=2048" two-$r --no-abandon --fresh
  lce tune "$B,pdl=2,zbm=128,zbn=128,zctas=2,pstore=quad,probe=2048" two2-$r --no-abandon --fresh
  pack
done
timed python3 bench/peers_step.py --out "$o/peers-lce.jsonl" --tokens 2048 --kernels linear_cross_entropy --peers compile,mm,liger --no-copy > "$o/peers-lce.log" 2>&1
grep -a -A6 "^kernel " "$o/peers-lce.log"
pack
lce tune "softmax=epilogue,ref=fixed,chunk=8192" model --strategy model --budget 16
pack
