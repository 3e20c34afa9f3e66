T=dgamma=partial,maxnreg=0,pdl=1,prefetch=0,rows=4,rpg=4,store=async,unroll=1,vec=8,vpt=2
W=dgamma=partial,maxnreg=0,pdl=1,prefetch=1,rows=4,rpg=4,store=regs,unroll=1,vec=8,vpt=2
for rep in 1 2 3 4 5; do for who in T W; do par=${!who}; ./bin/tune --kernel layernorm_bwd --shapes m=2048,n=1536 --dtype f16 --params $par --fresh --no-abandon --db $OUT/h2h.db > /dev/null 2>&1; echo "$who $rep $(python3 bench/issue13_summary.py median $OUT/h2h.db layernorm_bwd $par)"; done; done
