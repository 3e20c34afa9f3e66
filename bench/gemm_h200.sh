#!/usr/bin/env bash
# gemm_bwd on the H200: tune the family on the qwen1.5b shapes (bf16, M =
# --tokens 2048), time cuBLAS through torch in the same session with
# triton.testing.do_bench (L2 flushed before every repetition, median, as
# tune's cold mode), and print one row per shape: our best variant, cuBLAS,
# and the throughput ratio cuBLAS µs / ours µs (> 1: we are faster), with
# the geometric mean over the 8 cases.
# Targets (issue 10): geomean ≥ 1.0, none below 0.9, k/v cases ≥ 1.2.
#
# Run from the repository root on the GPU host with bin/tune built and
# python3 + torch + triton installed; writes into ${OUT:-out}.
# BUDGET=N limits tune to N variants per shape (default: all of them).
set -euo pipefail
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
db="$out/h200-gemm.db"
budget=()
[ -n "${BUDGET:-}" ] && budget=(--budget "$BUDGET")
start=$(date +%s)
./bin/tune --kernel gemm_bwd --shapes qwen1.5b --dtype bf16 --db "$db" "${budget[@]}" | tee "$out/tune.log"
echo "tune wall time: $(( $(date +%s) - start )) s (issue 10: at most 180 s)" | tee -a "$out/tune.log"
./bin/tune export --db "$db" --format json --force -o "$out/gemm.json"
./bin/tune show --db "$db" --kernel gemm_bwd > "$out/show.txt" || true

python3 - "$out/gemm.json" "$out/ratios.txt" <<'PY'
import json, math, sys
import torch
from triton.testing import do_bench

def bench(fn):
    fn(); torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3

table = json.load(open(sys.argv[1]))
ours = {}
for e in table["entries"]:
    if e["kernel"] == "gemm_bwd" and e["dtype"] == "bf16":
        ours[e["shape"]] = (e["median_us"], e["params"])

# The shapes tune ran, in preset order: projections q·o, k·v, gate·up, down.
M = 2048
proj = [("q/o", 1536, 1536), ("k/v", 256, 1536), ("gate/up", 8960, 1536), ("down", 1536, 8960)]
rows, logs = [], []
for label, n, k in proj:
    dy = torch.randn(M, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(M, k, device="cuda", dtype=torch.bfloat16)
    for grad in ("dx", "dw"):
        if grad == "dx":   # dX[M×K] = dY·W
            out = torch.empty(M, k, device="cuda", dtype=torch.bfloat16)
            fn = lambda: torch.mm(dy, w, out=out)
        else:              # dW[N×K] = dYᵀ·X
            out = torch.empty(n, k, device="cuda", dtype=torch.bfloat16)
            fn = lambda: torch.mm(dy.t(), x, out=out)
        cublas = bench(fn)
        key = f"m={M},n={n},k={k},grad={grad}"
        us, params = ours.get(key, (float("nan"), "(no result)"))
        tflops = 2 * M * n * k / (us * 1e-6) / 1e12 if us == us else float("nan")
        rows.append((label, grad, key, us, cublas, cublas / us, tflops, params))

lines = [f"{'proj':8} {'grad':4} {'ours µs':>9} {'cuBLAS µs':>10} {'ratio':>6} {'TFLOP/s':>8}  params"]
for label, grad, key, us, cb, r, tf, params in rows:
    lines.append(f"{label:8} {grad:4} {us:9.2f} {cb:10.2f} {r:6.3f} {tf:8.0f}  {params}")
ok = [r[5] for r in rows if r[5] == r[5]]
if ok:
    gm = math.exp(sum(math.log(v) for v in ok) / len(ok))
    kv = [r[5] for r in rows if r[0] == "k/v"]
    lines.append(f"geomean ratio {gm:.3f} over {len(ok)} cases; min {min(ok):.3f}; k/v {', '.join(f'{v:.3f}' for v in kv)}")
    lines.append("targets: geomean >= 1.0, none < 0.9, k/v >= 1.2")
lines.append(f"{torch.cuda.get_device_name()} torch {torch.__version__}")
print("\n".join(lines))
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
