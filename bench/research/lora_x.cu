// Prototype timings (research only, not part of gradtune): what sets the
// pace of lora_bwd's x kernel at rank 64 (down: x [2048 × 8960] bf16,
// 36.7 MB). Both of gradtune's x kernels (mma.sync over row groups,
// wgmma streaming dh) read x in 16 KB tiles at about 1.2 TB/s with their
// math and their red.add partials changed; this asks the memory system
// alone, under gradtune's cold-L2 protocol:
//   1. cp.async tiles of 16 KB, [R rows × C columns], R·C = 8192, into a
//      ring of S slots per CTA, nothing computed: the bandwidth each tile
//      shape and ring depth reach, with tiles taken row-block-major by
//      the grid (neighbouring CTAs on neighbouring columns) or as the x
//      kernel takes them (a CTA's chunks of one row group in turn);
//   2. red.global.add.v4.f32 of P partial [64 × 8960] f32 sums (what dA's
//      partials cost alone);
//   3. both: the tiles of 1 with a [64 × 64] partial added every K tiles.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <functional>

#define CK(x) do{cudaError_t e_=(x); if(e_!=cudaSuccess){printf("ERR %s @%d: %s\n",#x,__LINE__,cudaGetErrorString(e_)); exit(1);}}while(0)

static void* flushBuf; static size_t flushN = 128u<<20;
static cudaEvent_t evA[100], evB[100];

static float bench(std::function<void()> f, int iters=50){
  for(int i=0;i<3;i++) f();
  CK(cudaDeviceSynchronize());
  for(int i=0;i<iters;i++){
    CK(cudaMemsetAsync(flushBuf, i+1, flushN));
    CK(cudaEventRecord(evA[i])); f(); CK(cudaEventRecord(evB[i]));
  }
  CK(cudaEventSynchronize(evB[iters-1]));
  CK(cudaGetLastError());
  std::vector<float> t;
  for(int i=0;i<iters;i++){ float ms; CK(cudaEventElapsedTime(&ms,evA[i],evB[i])); t.push_back(ms*1000);}
  std::sort(t.begin(),t.end());
  return t[iters/2];
}

const int T = 2048, IN = 8960, RANK = 64;

__device__ __forceinline__ void cp16(unsigned dst, const void* src){
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void commit(){ asm volatile("cp.async.commit_group;" ::: "memory"); }
template<int N> __device__ __forceinline__ void waitg(){ asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }

// Tile i of the CTA's list: ORDER 0 takes tiles blockIdx.x + k·gridDim.x of
// the row-block-major order (tile = rowBlock·ncols + col); ORDER 1 gives
// CTA c row group c / SPLIT (GROUP row blocks) and chunk share c % SPLIT,
// chunk-major over the group's row blocks (the x kernel's order).
template<int R, int C, int S, int ORDER, int RED>
__global__ void __launch_bounds__(256) tiles(const __nv_bfloat16* __restrict__ x, float* da, int split, int group, int redEvery){
  extern __shared__ __align__(128) unsigned char smem[];
  const int ncols = IN / C, nrows = T / R, ntiles = ncols * nrows;
  const int tid = threadIdx.x;
  unsigned base = (unsigned)__cvta_generic_to_shared(smem);
  int first, cnt, share = 0, rg = 0;
  if (ORDER == 0) {
    first = blockIdx.x; cnt = (ntiles - first + gridDim.x - 1) / gridDim.x;
  } else {
    rg = blockIdx.x / split; share = blockIdx.x % split;
    int per = (ncols + split - 1) / split;
    first = share * per; cnt = min(per, ncols - first) * group;
  }
  auto tileOf = [&](int i, int& row0, int& col0) {
    if (ORDER == 0) { int t = first + i * gridDim.x; row0 = (t / ncols) * R; col0 = (t % ncols) * C; }
    else { int ch = first + i / group, j = i % group; row0 = (rg * group + j) * R; col0 = ch * C; }
  };
  auto load = [&](int i, int slot) {
    int row0, col0; tileOf(i, row0, col0);
    for (int q = tid; q < R * C / 8; q += 256) {
      int r = q / (C / 8), c = q % (C / 8);
      cp16(base + slot * R * C * 2 + q * 16, x + (size_t)(row0 + r) * IN + col0 + c * 8);
    }
  };
  for (int s = 0; s < S - 1; s++) { if (s < cnt) load(s, s); commit(); }
  float acc = 0;
  for (int i = 0; i < cnt; i++) {
    waitg<S - 2>();
    __syncthreads();
    if (i + S - 1 < cnt) load(i + S - 1, (i + S - 1) % S);
    commit();
    acc += ((float*)(smem + (i % S) * R * C * 2))[tid];  // touch the slot
    if (RED && (i + 1) % redEvery == 0) {
      // a [64 × 64] f32 partial: 1024 v4 reds, 4 a thread
      int row0, col0; tileOf(i, row0, col0);
      for (int q = tid; q < RANK * 64 / 4; q += 256) {
        int r = q / 16, c = (q % 16) * 4;
        float* p = da + (size_t)r * IN + (col0 % IN) + c % C;
        asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(acc), "f"(acc), "f"(acc), "f"(acc) : "memory");
      }
    }
  }
  waitg<0>();
  if (acc == 12345.f) da[0] = acc;  // keeps the loop's loads alive
}

// P partials of da [64 × IN] f32 by red.add.v4, one [64 × 64] block a CTA.
__global__ void __launch_bounds__(256) reds(float* da, int parts) {
  const int nb = IN / 64, blk = blockIdx.x % nb;
  for (int q = threadIdx.x; q < RANK * 16; q += 256) {
    int r = q / 16, c = (q % 16) * 4;
    float* p = da + (size_t)r * IN + blk * 64 + c;
    asm volatile("red.global.add.v4.f32 [%0], {%1, %1, %1, %1};" :: "l"(p), "f"(1.0f) : "memory");
  }
}

template<int R, int C, int S, int ORDER, int RED>
static void runTiles(const char* what, const __nv_bfloat16* x, float* da, int grid, int split, int group, int redEvery) {
  auto k = tiles<R, C, S, ORDER, RED>;
  int sm = S * R * C * 2;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
  float us = bench([&] { k<<<grid, 256, sm>>>(x, da, split, group, redEvery); });
  printf("%-44s R=%3d C=%3d S=%d grid=%4d: %8.2f us  %6.0f GB/s\n", what, R, C, S, grid, us, (double)T * IN * 2 / us / 1e3);
}

int main() {
  CK(cudaMalloc(&flushBuf, flushN));
  for (int i = 0; i < 100; i++) { CK(cudaEventCreate(&evA[i])); CK(cudaEventCreate(&evB[i])); }
  __nv_bfloat16* x; float* da;
  CK(cudaMalloc(&x, (size_t)T * IN * 2)); CK(cudaMemset(x, 0, (size_t)T * IN * 2));
  CK(cudaMalloc(&da, (size_t)RANK * IN * 4)); CK(cudaMemset(da, 0, (size_t)RANK * IN * 4));
  int dev; CK(cudaGetDevice(&dev)); cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, dev));
  printf("%s, %d SMs\n", pr.name, pr.multiProcessorCount);
  float us = bench([&] { CK(cudaMemcpyAsync(da, x, (size_t)RANK * IN * 4, cudaMemcpyDeviceToDevice)); });
  printf("(memcpy of 2.3 MB: %.2f us)\n", us);
  // 1. tile shapes and ring depths, grid-stride row-block-major, 132 and 264 CTAs
  for (int g : {132, 264}) {
    runTiles<128, 64, 3, 0, 0>("1 tiles, row-block-major", x, da, g, 0, 0, 0);
    runTiles<128, 64, 6, 0, 0>("1 tiles, row-block-major", x, da, g, 0, 0, 0);
    runTiles<64, 128, 3, 0, 0>("1 tiles, row-block-major", x, da, g, 0, 0, 0);
    runTiles<64, 128, 6, 0, 0>("1 tiles, row-block-major", x, da, g, 0, 0, 0);
    runTiles<32, 256, 3, 0, 0>("1 tiles, row-block-major", x, da, g, 0, 0, 0);
    runTiles<16, 512, 3, 0, 0>("1 tiles, row-block-major", x, da, g, 0, 0, 0);
  }
  // the x kernel's order: 8 row groups of 2 blocks of 128 rows, 16 shares of 140 chunks
  runTiles<128, 64, 3, 1, 0>("1 tiles, the x kernel's order (128 CTAs)", x, da, 128, 16, 2, 0);
  runTiles<128, 64, 6, 1, 0>("1 tiles, the x kernel's order (128 CTAs)", x, da, 128, 16, 2, 0);
  // 2. red.add of P partials alone
  for (int p : {2, 8, 16}) {
    int grid = p * (IN / 64);
    float u = bench([&] { reds<<<grid, 256>>>(da, p); });
    printf("2 red.add.v4 of %2d partials [64 x 8960] f32 (%7d reds): %8.2f us\n", p, grid * 1024, u);
  }
  // 3. tiles with a partial every 2 tiles (the x kernel's rg=2), and every 16
  runTiles<128, 64, 3, 1, 1>("3 x kernel's order + a partial every 2 tiles", x, da, 128, 16, 2, 2);
  runTiles<128, 64, 3, 0, 1>("3 row-block-major + a partial every 2 tiles", x, da, 132, 0, 0, 2);
  runTiles<128, 64, 3, 0, 1>("3 row-block-major + a partial every 16 tiles", x, da, 132, 0, 0, 16);
  return 0;
}
