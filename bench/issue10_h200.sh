#!/usr/bin/env bash
# Issue 10 (items 2 and 6), runner side: the H200 self-check of tensor maps,
# cluster launches and cuBLAS baselines. Run from the repository root on the
# GPU host (Go toolchain present); writes into ${OUT:-out}.
#
# Usage: bash bench/issue10_h200.sh [selfcheck] [driver] [tune]
# (no argument: all three).
#
#   selfcheck  the runner's GPU tests (runner/hopper_gpu_test.go, -tags gpu):
#              TestHopperTensorMapCluster   a TMA load (cuTensorMapEncodeTiled,
#                  the 128-byte map passed by value) in 2-block clusters with
#                  100 KiB of dynamic shared memory, through Session.Load and
#                  Validate as tune runs programs;
#              TestHopperClusterNonPortable clusters of 2, 8 and 16 blocks
#                  report their rank and size; 32 is refused;
#              TestHopperTensorMapEncode    the GEMMs' maps (bf16 2-D and 3-D
#                  with the 128B swizzle, f16 64B, f32 32B) encode, and the
#                  driver refuses a stride that is not a multiple of 16;
#              TestHopperCublasBaseline     cuBLAS GEMMs (A·Bᵀ, Aᵀ·B, A·B;
#                  f32 and bf16 C) validated against a float64 reference and
#                  timed by the worker's own stages.
#   driver     runner/cuda's GPU tests (the launch path they share with the
#              above: plain, dependent, argument packing).
#   tune       only when this build's catalog has gemm_bwd (issue 10's family):
#              tune one shape twice into one database; the second run reuses
#              the variants and the baseline.
#
# Expected output (selfcheck), one "--- PASS" per test, and log lines like:
#   NVIDIA H200: TMA 2-D f32 box 32×8 by value, clusters of 2, 100 KiB dynamic shared memory: valid (N registers)
#   clusters of 2 blocks: every block has its rank and cluster size   (then 8, then 16)
#   tensor maps: bf16 2-D/3-D 128B swizzle, f16 64B, f32 32B encoded; the driver refuses a stride of 3080 bytes too
#   cublas libcublas.so.13 (version 13xxxx) 2048×2048×2048 transA=false transB=true bf16→f32: valid (max abs err 0), median ~25 µs [...], N samples, ~700 TFLOP/s
#   (and three more cublas lines; "max abs err 0" for f32 C: the inputs are
#   small integers, exact in f32; a bf16 C has errors up to 2^-9 relative).
# The library is the first of libcublas.so.13/.12/.11 found by the loader,
# else in /usr/local/cuda/lib64, else $CUDA_HOME/lib64. Expect 500-750
# TFLOP/s for the two large GEMMs (the notes measured 660-753 at the gate/up/
# down shapes). A failure prints the test's error: "skipped: baseline library
# not available: ..." means no cuBLAS was found (the message lists every
# candidate and why); "TMA copy in clusters of 2: y[...] = NaN" means the TMA
# load never landed (map or by-value passing wrong).
set -euo pipefail
out=${OUT:-out}
mkdir -p "$out" bin
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
parts=${*:-selfcheck driver tune}
want() { [[ " $parts " == *" $1 "* ]]; }
status=0
if want selfcheck; then
  go test -c -tags gpu -o bin/runner-gpu.test ./runner/
  ./bin/runner-gpu.test -test.run Hopper -test.v -test.timeout 5m 2>&1 | tee "$out/issue10-selfcheck.log" || status=1
fi
if want driver; then
  go test -c -tags gpu -o bin/cuda-gpu.test ./runner/cuda/
  ./bin/cuda-gpu.test -test.run TestGPU -test.v -test.timeout 5m 2>&1 | tee "$out/issue10-driver.log" || status=1
fi
if want tune; then
  go build -o bin/tune ./cmd/tune
  if ./bin/tune list | grep -q '^  gemm_bwd '; then
    shapes=${SHAPES:-qwen1.5b}
    for i in 1 2; do
      ./bin/tune --kernel gemm_bwd --shapes "$shapes" --budget 4 --db "$out/issue10.db" 2>&1 | tee "$out/issue10-tune$i.log" || status=1
    done
    ./bin/tune show --db "$out/issue10.db" | tee "$out/issue10-show.log"
    # Expect: run 1's progress lines end "; cublas T µs" and its table has a
    # "vs baseline" column of "N.NN× cublas" (N.NN > 1: the winner is
    # faster); run 2's lines say "4 reused" and nothing is measured again,
    # the baseline included (its table still shows the column); tune show's
    # "vs baseline" column names cublas.
  else
    echo "tune: this build has no gemm_bwd family; skipped"
  fi
fi
exit $status
