"""Times rsprobe's kernels (go run ./bench/research/rsprobe DIR) on the GPU
through the driver API: python3 rsprobe.py DIR [kt]. Prints µs per launch
(median of 20) and the tensor rate against a 132-SM grid's FLOPs, for
every mode DIR/modes lists."""
import ctypes, statistics, sys

cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise SystemExit(f"{what}: CUresult {r}")

ck(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx")
ck(cu.cuCtxSetCurrent(ctx), "setcurrent")
out = ctypes.c_uint64()
ck(cu.cuMemAlloc_v2(ctypes.byref(out), 132 * 256 * 4), "alloc")
d, kt = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 140
smem = 64 * 1024 + 1024
flops = 132 * 2 * kt * 4 * 64 * 192 * 16 * 2
for mode in open(f"{d}/modes").read().split():
    ptx = open(f"{d}/probe_{mode}.ptx", "rb").read() + b"\0"
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), ptx), "load " + mode)
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, f"probe_{mode}".encode()), "fn")
    ck(cu.cuFuncSetAttribute(fn, 8, smem), "smem attr")
    a_out, a_kt = ctypes.c_uint64(out.value), ctypes.c_uint32(kt)
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(a_out), ctypes.c_void_p), ctypes.cast(ctypes.byref(a_kt), ctypes.c_void_p))
    e0, e1 = ctypes.c_void_p(), ctypes.c_void_p()
    ck(cu.cuEventCreate(ctypes.byref(e0), 0), "ev"); ck(cu.cuEventCreate(ctypes.byref(e1), 0), "ev")
    times = []
    for i in range(25):
        ck(cu.cuEventRecord(e0, None), "rec")
        ck(cu.cuLaunchKernel(fn, 132, 1, 1, 256, 1, 1, smem, None, params, None), "launch " + mode)
        ck(cu.cuEventRecord(e1, None), "rec")
        ck(cu.cuEventSynchronize(e1), "sync")
        ms = ctypes.c_float()
        ck(cu.cuEventElapsedTime(ctypes.byref(ms), e0, e1), "elapsed")
        if i >= 5:
            times.append(ms.value * 1000)
    us = statistics.median(times)
    print(f"{mode:6s} kt={kt}: {us:8.2f} µs  {flops / us / 1e6:7.1f} TFLOP/s")
