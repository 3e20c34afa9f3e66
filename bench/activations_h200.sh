#!/usr/bin/env bash
# The H200 run behind testdata/h200-activations.*: tune the activation
# backward families on the qwen1.5b shapes, measure PyTorch's kernels for the
# same shapes in the same session, and report both (report-activations/report.md).
# Run from the repository root on the GPU host with bin/tune built; writes
# into ${OUT:-out}.
set -euo pipefail
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
./bin/tune --kernel relu_bwd,gelu_bwd,silu_bwd --shapes qwen1.5b --db "$out/h200-activations.db" | tee "$out/tune.log"
python3 bench/peers.py --out "$out/peers-activations.jsonl"
./bin/tune report --db "$out/h200-activations.db" --peers "$out/peers-activations.jsonl" --force -o "$out/report-activations" # the Peers table of report.md
