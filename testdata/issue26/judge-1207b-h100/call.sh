#!/usr/bin/env bash
# The third call of 2026-12-07 (twenty-seventh session; about 4 minutes,
# BUDGET=255): the LCE winner (pstore=quad, probe=2048) at 2048 tokens
# with torch.compile, torch's head GEMMs and Liger in the same call; then
# at 8192 tokens passes over blocks of 2048 rows (tblock=2048) against
# one pass (tblock=0), one reference between them. Build and carry as
# bench/h200_judge.sh says; results in $OUT/j3.tgz.
start=$(date +%s)
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1 # unpacks binz/ into bin/
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$((start + ${BUDGET:-255})) RESERVE=6
o=$OUT/j3; mkdir -p "$o"
pack() { tar czf "$OUT/j3.tgz" -C "$OUT" j3; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$o/nvidia-smi.csv"
W="softmax=epilogue,ref=fixed,chunk=8192,dbm=128,dbn=192,dpers=0,sblock=128,wbm=128,wbn=128,zpers=0,pdl=1,zbm=256,zbn=128,zctas=1,pstore=quad,probe=2048"
lce() { timed ./bin/tune --kernel linear_cross_entropy_bwd --shapes "$1" --dtype bf16 --ref-cache /tmp/lce-refs --params "$W,tblock=$2" \
	--final-rounds 2 --no-abandon --fresh --db "$o/$3.db" > "$o/$3.log" 2>&1
  ./bin/tune show --db "$o/$3.db" --variants 2>&1 | grep -a "softmax=" | head -1 | cut -c1-260; }
lce t=2048,h=1536,v=151936 0 lce2k
timed python3 bench/peers_step.py --out "$o/peers-lce.jsonl" --tokens 2048 --kernels linear_cross_entropy --peers compile,mm,liger --no-copy > "$o/peers-lce.log" 2>&1
grep -a -A6 "^kernel " "$o/peers-lce.log"
pack
lce t=8192,h=1536,v=151936 2048 lce8k-tb2048
pack
lce t=8192,h=1536,v=151936 0 lce8k-tb0
pack
rm -rf "$o"
