#!/usr/bin/env bash
# scratch: the warm H100's last minutes: lora rank 16, dx=base, the default search
rm -rf $OUT/*
PHASE=none bash bench/session_h200.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64
source bench/timed.sh
export DEADLINE=$(($(date +%s) + 160)) RESERVE=8
o=$OUT/b; mkdir -p $o
S=""; for io in "in=8960,out=1536" "in=1536,out=8960" "in=1536,out=1536" "in=1536,out=256"; do S="$S;t=2048,r=16,dx=base,$io"; done
timed ./bin/tune --kernel lora_bwd --shapes "${S#;}" --dtype bf16 --final-rounds 2 --db $o/lora16.db > $o/lora16-tune.log 2>&1
./bin/tune show --db $o/lora16.db > $o/lora16-show.txt 2>&1
grep -a lora_bwd $o/lora16-show.txt | cut -c1-50,140-200
tar czf $OUT/b.tgz -C $OUT b
