#!/usr/bin/env bash
# NF4 on the H200 (issue 12): tune nf4_dequant and nf4_gemm_bwd on the
# qwen1.5b shapes (bf16, M = --tokens 2048, f32 and double-quantized
# scales). tune times cuBLAS on the already dequantized bf16 weight beside
# nf4_gemm_bwd (its stored baseline). The script then prints one row per
# projection: the fused kernel, the cuBLAS floor, the unfused path (our
# tuned nf4_dequant + that cuBLAS, summed: two launches, as bitsandbytes
# runs them) and the ratios floor/fused and unfused/fused (> 1: fused is
# faster). torch's bf16 matmul on the same shapes is timed as a cross-check
# of tune's cuBLAS figure (do_bench, L2 flushed, median).
# Target (issue 12): fused ≥ 1.0× the cuBLAS floor. The sync path is the
# first step; expect it below that until the wgmma path exists.
#
# Run from the repository root on the GPU host with bin/tune built and
# python3 + torch installed (triton optional); writes into ${OUT:-out}.
# BUDGET=N limits tune to N variants per shape (default: all of them).
set -euo pipefail
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
db="$out/h200-nf4.db"
budget=()
[ -n "${BUDGET:-}" ] && budget=(--budget "$BUDGET")
date -u +"run started %Y-%m-%dT%H:%MZ" | tee "$out/tune.log"
./bin/tune check --kernel nf4_dequant --shapes n=5,k=256,scales=dq 2>&1 | tee -a "$out/tune.log" | tail -1
./bin/tune check --kernel nf4_gemm_bwd --shapes m=37,n=128,k=192,scales=dq 2>&1 | tee -a "$out/tune.log" | tail -1
start=$(date +%s)
./bin/tune --kernel nf4_dequant,nf4_gemm_bwd --shapes qwen1.5b --dtype bf16 --db "$db" "${budget[@]}" | tee -a "$out/tune.log"
echo "tune wall time: $(( $(date +%s) - start )) s (issue 12: at most 180 s)" | tee -a "$out/tune.log"
./bin/tune export --db "$db" --format json --force -o "$out/nf4.json"
./bin/tune show --db "$db" --kernel nf4_gemm_bwd > "$out/show.txt" || true

python3 - "$out/nf4.json" "$out/ratios.txt" <<'PY'
import json, math, sys
import torch

def bench(fn):
    fn(); torch.cuda.synchronize()
    try:
        from triton.testing import do_bench
        return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
    except ImportError:
        cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        ts = []
        for _ in range(200):
            cache.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); torch.cuda.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        return sorted(ts)[len(ts) // 2]

def dims(shape):
    return dict(kv.split("=") for kv in shape.split(","))

table = json.load(open(sys.argv[1]))
deq, fused = {}, {}
for e in table["entries"]:
    d = dims(e["shape"])
    key = (int(d["n"]), int(d["k"]), d.get("scales", "f32"))
    if e["kernel"] == "nf4_dequant":
        deq[key] = e["median_us"]
    elif e["kernel"] == "nf4_gemm_bwd":
        fused[key] = (int(d["m"]), e["median_us"], e.get("baseline", {}).get("median_us"), e["params"])
rows, fl, un = [], [], []
hdr = f"{'n×k':>11} {'scales':>6} {'fused µs':>9} {'cuBLAS µs':>9} {'torch µs':>9} {'deq µs':>8} {'unfused':>8} {'floor/fused':>11} {'unfused/fused':>13}  params"
print(hdr); rows.append(hdr)
for key in sorted(fused):
    n, k, sc = key
    m, us, cub, params = fused[key]
    dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    tus = bench(lambda: dy @ w)
    d = deq.get(key)
    unf = d + cub if d and cub else None
    r1 = cub / us if cub else float("nan")
    r2 = unf / us if unf else float("nan")
    if cub: fl.append(r1)
    if unf: un.append(r2)
    line = f"{n:>5}×{k:<5} {sc:>6} {us:9.1f} {cub or float('nan'):9.1f} {tus:9.1f} {d or float('nan'):8.1f} {unf or float('nan'):8.1f} {r1:11.2f} {r2:13.2f}  {params}"
    print(line); rows.append(line)
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
tail = f"geomean floor/fused {g(fl):.2f}, unfused/fused {g(un):.2f} over {len(fl)} cases (target: floor/fused >= 1.0)"
print(tail); rows.append(tail)
open(sys.argv[2], "w").write("\n".join(rows) + "\n")
PY
