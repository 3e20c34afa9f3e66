// Research only: cache-hint variants of an f32 relu backward at [2048x8960] under the cold-L2 protocol.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <functional>
#define CK(x) do{cudaError_t e_=(x); if(e_!=cudaSuccess){printf("ERR %s @%d: %s\n",#x,__LINE__,cudaGetErrorString(e_)); exit(1);}}while(0)
static void* flushBuf; static size_t flushN = 128u<<20;
static cudaEvent_t evA[300], evB[300];
static float bench(std::function<void()> f, int iters=200, bool d32=true){
  for(int i=0;i<5;i++) f();
  CK(cudaDeviceSynchronize());
  for(int i=0;i<iters;i++){
    CK(cudaMemsetAsync(flushBuf, i+1, flushN));
    CK(cudaEventRecord(evA[i])); f(); CK(cudaEventRecord(evB[i]));
  }
  CK(cudaEventSynchronize(evB[iters-1])); CK(cudaGetLastError());
  std::vector<float> t; for(int i=0;i<iters;i++){ float ms; CK(cudaEventElapsedTime(&ms,evA[i],evB[i])); t.push_back(ms*1000);} 
  std::sort(t.begin(),t.end()); return t[iters/2];
}
// LD: 0 plain nc, 1 nc.L2::evict_first, 2 nc.L1::no_allocate.L2::evict_first, 3 nc.L2::evict_last, 4 policy evict_first (createpolicy), 5 ld.cs
// ST: 0 plain, 1 st.L2::evict_first? (via policy), 2 st.cs, 3 policy evict_first, 4 policy evict_last
template<int LD> __device__ __forceinline__ float2 ld2(const float2* p, unsigned long long pol){ float2 v;
  if(LD==0) asm volatile("ld.global.nc.v2.f32 {%0,%1},[%2];":"=f"(v.x),"=f"(v.y):"l"(p));
  if(LD==4) asm volatile("ld.global.nc.L2::cache_hint.v2.f32 {%0,%1},[%2], %3;":"=f"(v.x),"=f"(v.y):"l"(p),"l"(pol));
  if(LD==5) asm volatile("ld.global.cs.v2.f32 {%0,%1},[%2];":"=f"(v.x),"=f"(v.y):"l"(p));
  return v; }
template<int ST> __device__ __forceinline__ void st2(float2* p, float2 v, unsigned long long pol){
  if(ST==0) asm volatile("st.global.v2.f32 [%0],{%1,%2};"::"l"(p),"f"(v.x),"f"(v.y):"memory");
  if(ST==2) asm volatile("st.global.cs.v2.f32 [%0],{%1,%2};"::"l"(p),"f"(v.x),"f"(v.y):"memory");
  if(ST==3) asm volatile("st.global.L2::cache_hint.v2.f32 [%0],{%1,%2}, %3;"::"l"(p),"f"(v.x),"f"(v.y),"l"(pol):"memory");
  if(ST==1) asm volatile("st.global.L1::no_allocate.v2.f32 [%0],{%1,%2};"::"l"(p),"f"(v.x),"f"(v.y):"memory");
}
template<int LD,int ST,int EPT,int POLST>
__global__ void relu2(const float2* __restrict__ x, const float2* __restrict__ dy, float2* __restrict__ dx, int n2){
  unsigned long long pol=0, pols=0;
  if(LD==4) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;":"=l"(pol));
  if(ST==3){ if(POLST==0) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;":"=l"(pols)); else asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;":"=l"(pols)); }
  int base=blockIdx.x*blockDim.x*EPT+threadIdx.x;
  float2 a[EPT], d[EPT];
  #pragma unroll
  for(int e=0;e<EPT;e++){ int i=base+e*blockDim.x; if(i<n2){ a[e]=ld2<LD>(x+i,pol); d[e]=ld2<LD>(dy+i,pol);} }
  #pragma unroll
  for(int e=0;e<EPT;e++){ int i=base+e*blockDim.x; if(i<n2) st2<ST>(dx+i,make_float2(a[e].x>0?d[e].x:0.f,a[e].y>0?d[e].y:0.f),pols); }
}
int main(){
  CK(cudaMalloc(&flushBuf,flushN)); for(int i=0;i<300;i++){ CK(cudaEventCreate(&evA[i])); CK(cudaEventCreate(&evB[i])); }
  size_t E=(size_t)2048*8960; float *a,*d,*o; CK(cudaMalloc(&a,E*4)); CK(cudaMalloc(&d,E*4)); CK(cudaMalloc(&o,E*4));
  CK(cudaMemset(a,0x3f,E*4)); CK(cudaMemset(d,0x3e,E*4)); double bytes=3.0*E*4; int n2=E/2;
  auto rep=[&](const char* name, float us){ printf("%-44s %8.2f us %7.0f GB/s\n",name,us,bytes/us/1e3); fflush(stdout); };
  char nm[128];
#define R(LD,ST,EPT,POL,B) snprintf(nm,128,"ld=%d st=%d ept=%d pol=%d block=%d",LD,ST,EPT,POL,B); rep(nm,bench([&]{ relu2<LD,ST,EPT,POL><<<(n2+B*EPT-1)/(B*EPT),B>>>((float2*)a,(float2*)d,(float2*)o,n2); }));
  for(int rep_=0;rep_<2;rep_++){
  R(0,0,2,0,128) R(4,0,2,0,128) R(5,0,2,0,128) R(0,2,2,0,128) R(0,3,2,0,128) R(0,3,2,1,128) R(4,3,2,0,128) R(4,3,2,1,128) R(0,1,2,0,128)
  R(0,0,4,0,128) R(4,0,4,0,128) R(4,0,2,0,256) R(4,0,1,0,256) R(4,0,4,0,64) R(4,3,4,1,64)
  }
  printf("done\n");
}
