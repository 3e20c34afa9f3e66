// bench/research/mix.cu: what an elementwise kernel's stream mix can reach
// under gradtune's cold protocol. Pure data movement over arrays of
// [2048 x 8960] bf16 (36.7 MB each), 16-byte accesses, one vector a
// thread, 128-thread CTAs: R arrays read, W written (the XOR of the reads,
// so no load is dead), for the mixes (1,1), (2,1), (3,2) - SwiGLU
// backward's - and (2,2); then SwiGLU backward itself (evict.cu's plain
// kernel); then nf4_dequant's mix (expand, expand4: a quarter-size input
// read, the output written). Each under three flushes before every
// sample: none (hot), a 128 MB memset (gradtune's and do_bench's: L2 left
// full of dirty lines, written back during the timed kernel) and a 128 MB
// read (L2 left full of clean lines). Rates are against a 1 GiB
// cudaMemcpy (gradtune's copy bandwidth, measured hot). Build and run on
// the GPU host:
//   nvcc -O3 -arch=sm_90a -o /tmp/mix bench/research/mix.cu && /tmp/mix
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ uint4 ld(const uint4* a) {
  uint4 v;
  asm volatile("ld.global.nc.v4.b32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a));
  return v;
}
__device__ __forceinline__ void st(uint4* a, uint4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1,%2,%3,%4};" :: "l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

template <int R, int W>
__global__ void __launch_bounds__(128) move(const uint4* const* in, uint4* const* out, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  uint4 x = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int r = 0; r < R; r++) { uint4 v = ld(in[r] + i); x.x ^= v.x; x.y ^= v.y; x.z ^= v.z; x.w ^= v.w; }
#pragma unroll
  for (int w = 0; w < W; w++) { uint4 v = x; v.x += w; st(out[w] + i, v); }
}

__global__ void __launch_bounds__(128) swiglu(const uint4* const* in, uint4* const* out, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  uint4 a = ld(in[0] + i), b = ld(in[1] + i), c = ld(in[2] + i);
  const __nv_bfloat162* A = (const __nv_bfloat162*)&a; const __nv_bfloat162* B = (const __nv_bfloat162*)&b; const __nv_bfloat162* C = (const __nv_bfloat162*)&c;
  uint4 o1, o2; __nv_bfloat162* O1 = (__nv_bfloat162*)&o1; __nv_bfloat162* O2 = (__nv_bfloat162*)&o2;
  for (int j = 0; j < 4; j++) {
    float2 x = __bfloat1622float2(A[j]), y = __bfloat1622float2(B[j]), z = __bfloat1622float2(C[j]);
    float s0 = 1.f / (1.f + __expf(-y.x)), s1 = 1.f / (1.f + __expf(-y.y));
    O2[j] = __floats2bfloat162_rn(x.x * y.x * s0, x.y * y.y * s1);
    O1[j] = __floats2bfloat162_rn(x.x * z.x * s0 * (1.f + y.x * (1.f - s0)), x.y * z.y * s1 * (1.f + y.y * (1.f - s1)));
  }
  st(out[0] + i, o1); st(out[1] + i, o2);
}

// expand: nf4_dequant's stream shape, one byte read for four written: a
// thread reads 4 bytes and writes 16 (a quarter-size input array), or
// (expand4) reads 16 and writes 64 as four 16-byte stores a warp apart.
__global__ void __launch_bounds__(128) expand(const uint4* const* in, uint4* const* out, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  unsigned c;
  asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(c) : "l"((const unsigned*)in[0] + i));
  st(out[0] + i, make_uint4(c, c + 1, c + 2, c + 3));
}
__global__ void __launch_bounds__(128) expand4(const uint4* const* in, uint4* const* out, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n / 4) return;
  uint4 c = ld(in[0] + i);
  int base = (i / 32) * 128 + i % 32;
  st(out[0] + base, make_uint4(c.x, c.x, c.x, c.x));
  st(out[0] + base + 32, make_uint4(c.y, c.y, c.y, c.y));
  st(out[0] + base + 64, make_uint4(c.z, c.z, c.z, c.z));
  st(out[0] + base + 96, make_uint4(c.w, c.w, c.w, c.w));
}

__global__ void readAll(const uint4* p, size_t n, unsigned* sink) {
  uint4 x = make_uint4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) { uint4 v = ld(p + i); x.x ^= v.x; }
  if (x.x == 0x12345678u) *sink = x.x;
}

enum Flush { HOT, DIRTY, CLEAN };
static const char* flushName[] = {"hot  ", "dirty", "clean"};
static void* flushBuf; static unsigned* sink; static const size_t flushN = 128u << 20;
static float bench(std::function<void()> f, Flush fl, int iters = 100) {
  std::vector<cudaEvent_t> a(iters), b(iters);
  for (int i = 0; i < iters; i++) { CK(cudaEventCreate(&a[i])); CK(cudaEventCreate(&b[i])); }
  for (int i = 0; i < 5; i++) f();
  for (int i = 0; i < iters; i++) {
    if (fl == DIRTY) CK(cudaMemsetAsync(flushBuf, i + 1, flushN));
    if (fl == CLEAN) readAll<<<132 * 8, 256>>>((const uint4*)flushBuf, flushN / 16, sink);
    CK(cudaEventRecord(a[i])); f(); CK(cudaEventRecord(b[i]));
  }
  CK(cudaEventSynchronize(b[iters - 1]));
  std::vector<float> t;
  for (int i = 0; i < iters; i++) { float ms; CK(cudaEventElapsedTime(&ms, a[i], b[i])); t.push_back(ms * 1000); }
  std::sort(t.begin(), t.end());
  for (int i = 0; i < iters; i++) { CK(cudaEventDestroy(a[i])); CK(cudaEventDestroy(b[i])); }
  return t[iters / 2];
}

int main() {
  const int M = 2048, N = 8960; const size_t E = (size_t)M * N, B = E * 2; const int n = E / 8;
  CK(cudaMalloc(&flushBuf, flushN)); CK(cudaMemset(flushBuf, 7, flushN)); CK(cudaMalloc(&sink, 4));
  uint4* buf[6];
  for (int i = 0; i < 6; i++) { CK(cudaMalloc(&buf[i], B)); CK(cudaMemset(buf[i], 0x3c + i, B)); }
  uint4 **din, **dout; CK(cudaMalloc(&din, 3 * sizeof(uint4*))); CK(cudaMalloc(&dout, 3 * sizeof(uint4*)));
  CK(cudaMemcpy(din, buf, 3 * sizeof(uint4*), cudaMemcpyHostToDevice)); CK(cudaMemcpy(dout, buf + 3, 3 * sizeof(uint4*), cudaMemcpyHostToDevice));
  void *cs, *cd; size_t cn = 1u << 30; CK(cudaMalloc(&cs, cn)); CK(cudaMalloc(&cd, cn)); CK(cudaMemset(cs, 1, cn));
  float cu = bench([&] { CK(cudaMemcpyAsync(cd, cs, cn, cudaMemcpyDeviceToDevice)); }, HOT, 10);
  double copy = 2.0 * cn / (cu * 1e-6) / 1e9;
  printf("copy of 1 GiB: %.1f us, %.0f GB/s\n", cu, copy);
  // threads: the kernel's threads (n, one 16-byte vector of the output
  // each, unless it says otherwise).
  auto run = [&](const char* name, double arrays, void (*k)(const uint4* const*, uint4* const*, int), int threads) {
    for (Flush fl : {HOT, DIRTY, CLEAN}) {
      float us = bench([&] { k<<<(threads + 127) / 128, 128>>>(din, dout, n); CK(cudaGetLastError()); }, fl);
      double gbs = arrays * (double)B / (us * 1e-6) / 1e9;
      printf("%-22s %s %8.2f us %6.0f GB/s %5.1f%% of copy\n", name, flushName[fl], us, gbs, 100 * gbs / copy);
    }
  };
  for (int rep = 0; rep < 2; rep++) {
    run("move 1 read, 1 write", 2, move<1, 1>, n);
    run("move 2 reads, 1 write", 3, move<2, 1>, n);
    run("move 3 reads, 2 writes", 5, move<3, 2>, n);
    run("move 2 reads, 2 writes", 4, move<2, 2>, n);
    run("swiglu_bwd (3r 2w)", 5, swiglu, n);
    run("expand 4 B -> 16 B", 1.25, expand, n);
    run("expand4 16 B -> 64 B", 1.25, expand4, n / 4);
  }
  return 0;
}
