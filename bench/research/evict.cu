// bench/research/evict.cu: does an L2 eviction hint on a streaming
// kernel's loads change its time under the harness's cold protocol (a
// 128 MB memset before every sample, which leaves L2 full of dirty
// lines)? A SwiGLU backward of [2048 x 8960] bf16 (read dy, gate, up;
// write dgate, dup: 183.5 MB), 16-byte accesses, one vector a thread,
// with loads and stores plain, evict_first or evict_last by
// createpolicy + L2::cache_hint. Build and run on the GPU host:
//   nvcc -O3 -arch=sm_90a -o /tmp/evict bench/research/evict.cu && /tmp/evict
// An H100's answer: testdata/issue27/ab-1207d-h100/evict.txt (no mix beats
// plain loads and stores on a kernel whose every line is streamed).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

enum Pol { PLAIN = 0, FIRST = 1, LAST = 2 };

__device__ __forceinline__ uint64_t policy(int p) {
  uint64_t r = 0;
  if (p == FIRST) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(r));
  if (p == LAST) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(r));
  return r;
}
__device__ __forceinline__ uint4 ld(const void* a, int p, uint64_t pol) {
  uint4 v;
  if (p == PLAIN)
    asm volatile("ld.global.nc.v4.b32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a));
  else
    asm volatile("ld.global.nc.L2::cache_hint.v4.b32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a), "l"(pol));
  return v;
}
__device__ __forceinline__ void st(void* a, uint4 v, int p, uint64_t pol) {
  if (p == PLAIN)
    asm volatile("st.global.v4.b32 [%0], {%1,%2,%3,%4};" :: "l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
  else
    asm volatile("st.global.L2::cache_hint.v4.b32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol) : "memory");
}

template <int LP, int SP>
__global__ void __launch_bounds__(128) swiglu(const uint4* dy, const uint4* g, const uint4* u, uint4* dg, uint4* du, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  uint64_t lp = policy(LP), sp = policy(SP);
  uint4 a = ld(dy + i, LP, lp), b = ld(g + i, LP, lp), c = ld(u + i, LP, lp);
  const __nv_bfloat162* A = (const __nv_bfloat162*)&a; const __nv_bfloat162* B = (const __nv_bfloat162*)&b; const __nv_bfloat162* C = (const __nv_bfloat162*)&c;
  uint4 o1, o2; __nv_bfloat162* O1 = (__nv_bfloat162*)&o1; __nv_bfloat162* O2 = (__nv_bfloat162*)&o2;
  for (int j = 0; j < 4; j++) {
    float2 x = __bfloat1622float2(A[j]), y = __bfloat1622float2(B[j]), z = __bfloat1622float2(C[j]);
    float s0 = 1.f / (1.f + __expf(-y.x)), s1 = 1.f / (1.f + __expf(-y.y));
    O2[j] = __floats2bfloat162_rn(x.x * y.x * s0, x.y * y.y * s1);
    O1[j] = __floats2bfloat162_rn(x.x * z.x * s0 * (1.f + y.x * (1.f - s0)), x.y * z.y * s1 * (1.f + y.y * (1.f - s1)));
  }
  st(dg + i, o1, SP, sp); st(du + i, o2, SP, sp);
}

static void* flushBuf; static const size_t flushN = 128u << 20;
static float bench(std::function<void()> f, bool cold, int iters = 60) {
  std::vector<cudaEvent_t> a(iters), b(iters);
  for (int i = 0; i < iters; i++) { CK(cudaEventCreate(&a[i])); CK(cudaEventCreate(&b[i])); }
  for (int i = 0; i < 5; i++) f();
  for (int i = 0; i < iters; i++) {
    if (cold) CK(cudaMemsetAsync(flushBuf, i + 1, flushN));
    CK(cudaEventRecord(a[i])); f(); CK(cudaEventRecord(b[i]));
  }
  CK(cudaEventSynchronize(b[iters - 1]));
  std::vector<float> t;
  for (int i = 0; i < iters; i++) { float ms; CK(cudaEventElapsedTime(&ms, a[i], b[i])); t.push_back(ms * 1000); }
  std::sort(t.begin(), t.end());
  return t[iters / 2];
}

int main() {
  const int M = 2048, N = 8960; const size_t E = (size_t)M * N, B = E * 2; const int n = E / 8;
  CK(cudaMalloc(&flushBuf, flushN));
  void *buf[5];
  for (int i = 0; i < 5; i++) { CK(cudaMalloc(&buf[i], B)); CK(cudaMemset(buf[i], 0x3c + i, B)); }
  void *cs, *cd; size_t cn = 1u << 30; CK(cudaMalloc(&cs, cn)); CK(cudaMalloc(&cd, cn)); CK(cudaMemset(cs, 1, cn));
  float cu = bench([&] { CK(cudaMemcpyAsync(cd, cs, cn, cudaMemcpyDeviceToDevice)); }, false, 10);
  double copy = 2.0 * cn / (cu * 1e-6) / 1e9;
  printf("copy of 1 GiB: %.1f us, %.0f GB/s\n", cu, copy);
  const double bytes = 5.0 * B;
  auto run = [&](const char* name, void (*k)(const uint4*, const uint4*, const uint4*, uint4*, uint4*, int)) {
    for (int cold = 1; cold >= 0; cold--) {
      float us = bench([&] { k<<<(n + 127) / 128, 128>>>((const uint4*)buf[0], (const uint4*)buf[1], (const uint4*)buf[2], (uint4*)buf[3], (uint4*)buf[4], n); CK(cudaGetLastError()); }, cold);
      printf("%-34s %s %8.2f us %6.0f GB/s %5.1f%% of copy\n", name, cold ? "cold" : "hot ", us, bytes / (us * 1e-6) / 1e9, 100 * bytes / (us * 1e-6) / 1e9 / copy);
    }
  };
  for (int rep = 0; rep < 2; rep++) {
    run("loads plain, stores plain", swiglu<PLAIN, PLAIN>);
    run("loads evict_first, stores plain", swiglu<FIRST, PLAIN>);
    run("loads evict_first, stores last", swiglu<FIRST, LAST>);
    run("loads plain, stores evict_last", swiglu<PLAIN, LAST>);
    run("loads evict_first, stores first", swiglu<FIRST, FIRST>);
  }
  return 0;
}
