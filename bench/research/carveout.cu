// Does the driver's default shared-memory carveout let two CTAs of
// 99376 bytes of dynamic shared memory (linear_cross_entropy_bwd's
// zctas=2 logits GEMM at 128x128) share an SM, or only the largest
// carveout (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 100)?
// Each of 264 CTAs spins for about 20 us: one wave of two CTAs an SM
// takes about 20 us, one CTA an SM about 40 us.
// nvcc -O3 -arch=sm_90a -o /tmp/carveout bench/research/carveout.cu
#include <cstdio>
#include <cuda_runtime.h>

__global__ void __launch_bounds__(256) spin(unsigned long long ns, int *sm) {
  extern __shared__ char buf[];
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  buf[threadIdx.x] = (char)threadIdx.x;
  for (;;) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > ns) break;
  }
  if (threadIdx.x == 0) {
    int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    sm[blockIdx.x] = id + buf[5];
  }
}

static float run(int smem, int *sm) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  spin<<<264, 256, smem>>>(20000, sm);
  cudaEventRecord(a);
  spin<<<264, 256, smem>>>(20000, sm);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  return ms * 1000;
}

int main() {
  int *sm;
  cudaMalloc(&sm, 264 * sizeof(int));
  for (int smem : {99376, 99328, 113664}) {
    cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    for (int carve : {-1, 100}) {
      cudaFuncSetAttribute(spin, cudaFuncAttributePreferredSharedMemoryCarveout, carve);
      int occ = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, spin, 256, smem);
      float us = run(smem, sm);
      printf("smem %6d carveout %4d: occupancy API %d CTAs/SM, 264 CTAs of 20 us took %.1f us (%s)\n", smem, carve, occ,
             us, us < 30 ? "two an SM" : "one an SM");
    }
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) printf("error: %s\n", cudaGetErrorString(e));
  return 0;
}
