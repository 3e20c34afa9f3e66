# Which cuBLAS kernels torch.mm runs for the qwen1.5b gemm_bwd cases (tile
# shape, cluster, stream-K in the kernel names), and their device times.
import torch
from torch.profiler import profile, ProfilerActivity
M = 2048
proj = [("q/o", 1536, 1536), ("k/v", 256, 1536), ("gate/up", 8960, 1536), ("down", 1536, 8960)]
for label, n, k in proj:
    dy = torch.randn(M, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(M, k, device="cuda", dtype=torch.bfloat16)
    for grad in ("dx", "dw"):
        fn = (lambda: torch.mm(dy, w)) if grad == "dx" else (lambda: torch.mm(dy.t(), x))
        for _ in range(5): fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10): fn()
            torch.cuda.synchronize()
        for e in prof.key_averages():
            if e.device_type.name == "CUDA" or "gemm" in e.key or "sm90" in e.key:
                print(f"{label:8} {grad}  {e.device_time_total/max(e.count,1):8.2f} us x{e.count}  {e.key[:200]}")
