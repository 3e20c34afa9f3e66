// Prototype timings (research only, not part of gradtune): RMSNorm backward
// dγ strategies and a TMA relu, under gradtune's cold-L2 protocol.
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <functional>
#include <cmath>
namespace cg = cooperative_groups;

#define CK(x) do{cudaError_t e_=(x); if(e_!=cudaSuccess){printf("ERR %s @%d: %s\n",#x,__LINE__,cudaGetErrorString(e_)); exit(1);}}while(0)

static void* flushBuf; static size_t flushN = 128u<<20;
static cudaEvent_t evA[200], evB[200];

static float bench(std::function<void()> f, int iters=100){
  for(int i=0;i<5;i++) f();
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

const int M=2048, N=1536, N4=N/4;

__device__ __forceinline__ float4 ldg4(const float4* p){ float4 v; asm volatile("ld.global.nc.v4.f32 {%0,%1,%2,%3},[%4];":"=f"(v.x),"=f"(v.y),"=f"(v.z),"=f"(v.w):"l"(p)); return v; }

// ---- elementwise reference
__global__ void relu4(const float4* __restrict__ x, const float4* __restrict__ dy, float4* __restrict__ dx, int n4){
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if(i<n4){ float4 a=ldg4(x+i), d=ldg4(dy+i); dx[i]=make_float4(a.x>0?d.x:0.f,a.y>0?d.y:0.f,a.z>0?d.z:0.f,a.w>0?d.w:0.f);} }

// ---- RMSNorm bwd, persistent rows: CTA b takes rows b, b+G, ...; VPT float4 per thread per row
// MODE 0: no dγ; 1: partial rows to ws (finalize kernel separate); 2: grid.sync + column reduce;
// 3: cluster DSMEM reduce + red.add into colsum + ticket copy; 4: two-level ticket over ws.
template<int VPT, int MODE, int PF>
__global__ void __launch_bounds__(N4/VPT) rms(const float4* __restrict__ x, const float4* __restrict__ dy, const float4* __restrict__ gam,
  const float* __restrict__ rstd, float4* __restrict__ dx, float4* ws, float4* ws2, float* dg, float* colsum, unsigned* cnt, int m, int S){
  constexpr int T = N4/VPT; constexpr int W = T/32;
  const int t = threadIdx.x, G = gridDim.x, b = blockIdx.x, lane=t&31, wp=t>>5;
  if(MODE==1 && S==-1) asm volatile("griddepcontrol.launch_dependents;":::"memory");
  __shared__ float red[2][W];
  __shared__ float4 sacc[T*VPT];
  __shared__ unsigned flag;
  float4 gm[VPT], acc[VPT], xa[PF+1][VPT], da[PF+1][VPT]; float rs[PF+1];
  #pragma unroll
  for(int j=0;j<VPT;j++){ gm[j]=ldg4(gam+t+j*T); acc[j]=make_float4(0,0,0,0);} 
  #pragma unroll
  for(int p=0;p<=PF;p++){ int r=b+p*G; if(r<m){ rs[p]=rstd[r];
    #pragma unroll
    for(int j=0;j<VPT;j++){ xa[p][j]=ldg4(x+(size_t)r*N4+t+j*T); da[p][j]=ldg4(dy+(size_t)r*N4+t+j*T);} } }
  int it=0;
  for(int r=b; r<m; r+=G, it++){
    float4 xh[VPT], g[VPT]; float s=0; float rr=rs[0];
    #pragma unroll
    for(int j=0;j<VPT;j++){ xh[j]=make_float4(xa[0][j].x*rr,xa[0][j].y*rr,xa[0][j].z*rr,xa[0][j].w*rr);
      g[j]=make_float4(gm[j].x*da[0][j].x,gm[j].y*da[0][j].y,gm[j].z*da[0][j].z,gm[j].w*da[0][j].w);
      s+=g[j].x*xh[j].x+g[j].y*xh[j].y+g[j].z*xh[j].z+g[j].w*xh[j].w;
      acc[j].x+=da[0][j].x*xh[j].x; acc[j].y+=da[0][j].y*xh[j].y; acc[j].z+=da[0][j].z*xh[j].z; acc[j].w+=da[0][j].w*xh[j].w; }
    // shift pipeline and issue the next load
    #pragma unroll
    for(int p=0;p<PF;p++){ rs[p]=rs[p+1];
      #pragma unroll
      for(int j=0;j<VPT;j++){ xa[p][j]=xa[p+1][j]; da[p][j]=da[p+1][j]; } }
    { int rn=r+(PF+1)*G; if(rn<m){ rs[PF]=rstd[rn];
      #pragma unroll
      for(int j=0;j<VPT;j++){ xa[PF][j]=ldg4(x+(size_t)rn*N4+t+j*T); da[PF][j]=ldg4(dy+(size_t)rn*N4+t+j*T);} } }
    #pragma unroll
    for(int o=16;o>0;o>>=1) s+=__shfl_xor_sync(0xffffffff,s,o);
    if(lane==0) red[it&1][wp]=s;
    __syncthreads();
    float S_=0;
    #pragma unroll
    for(int w=0;w<W;w++) S_+=red[it&1][w];
    float c=S_*(1.0f/N);
    #pragma unroll
    for(int j=0;j<VPT;j++) dx[(size_t)r*N4+t+j*T]=make_float4(rr*(g[j].x-xh[j].x*c),rr*(g[j].y-xh[j].y*c),rr*(g[j].z-xh[j].z*c),rr*(g[j].w-xh[j].w*c));
  }
  if(MODE==0) return;
  if(MODE==1 || MODE==2 || MODE==4){
    #pragma unroll
    for(int j=0;j<VPT;j++) ws[(size_t)b*N4+t+j*T]=acc[j];
  }
  if(MODE==2){
    cg::this_grid().sync();
    // CTA b reduces chunks [lo,hi)
    int per=(N4+G-1)/G, lo=b*per, hi=min(N4,lo+per); int nc=hi-lo; if(nc<=0) return;
    int sl=T/nc; // slices per chunk (nc<=T)
    int c=t%nc, sidx=t/nc; float4 a=make_float4(0,0,0,0);
    if(sidx<sl) for(int q=sidx;q<G;q+=sl){ float4 v=ws[(size_t)q*N4+lo+c]; a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w; }
    sacc[t]=a; __syncthreads();
    if(t<nc){ float4 z=make_float4(0,0,0,0); for(int q=0;q<sl;q++){ float4 v=sacc[q*nc+t]; z.x+=v.x;z.y+=v.y;z.z+=v.z;z.w+=v.w;} reinterpret_cast<float4*>(dg)[lo+t]=z; }
  }
  if(MODE==4){
    __threadfence(); __syncthreads();
    int grp=b/S, g0=grp*S, gs=min(S,G-g0); int NG=(G+S-1)/S;
    if(t==0) flag = atomicInc(cnt+1+grp, gs-1)==(unsigned)(gs-1);
    __syncthreads(); if(!flag) return;
    __threadfence();
    #pragma unroll
    for(int j=0;j<VPT;j++){ float4 a=make_float4(0,0,0,0); for(int q=g0;q<g0+gs;q++){ float4 v=__ldcg(ws+(size_t)q*N4+t+j*T); a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w;} ws2[(size_t)grp*N4+t+j*T]=a; }
    __threadfence(); __syncthreads();
    if(t==0) flag = atomicInc(cnt, NG-1)==(unsigned)(NG-1);
    __syncthreads(); if(!flag) return;
    __threadfence();
    #pragma unroll
    for(int j=0;j<VPT;j++){ float4 a=make_float4(0,0,0,0); for(int q=0;q<NG;q++){ float4 v=__ldcg(ws2+(size_t)q*N4+t+j*T); a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w;} reinterpret_cast<float4*>(dg)[t+j*T]=a; }
  }
  if(MODE==3){
    cg::cluster_group cl = cg::this_cluster();
    #pragma unroll
    for(int j=0;j<VPT;j++) sacc[t+j*T]=acc[j];
    cl.sync();
    int cs=cl.num_blocks(), rk=cl.block_rank();
    int per=N4/cs; // chunks this rank reduces
    for(int c=t;c<per;c+=T){ int col=rk*per+c; float4 a=make_float4(0,0,0,0);
      for(int q=0;q<cs;q++){ float4* rem=cl.map_shared_rank(sacc,q); float4 v=rem[col]; a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w; }
      atomicAdd(reinterpret_cast<float4*>(colsum)+col, a); }
    cl.sync();
    __threadfence(); __syncthreads();
    if(t==0) flag = atomicInc(cnt, G-1)==(unsigned)(G-1);
    __syncthreads(); if(!flag) return;
    __threadfence();
    for(int c=t;c<N4;c+=T){ float4 v=__ldcg(reinterpret_cast<float4*>(colsum)+c); reinterpret_cast<float4*>(dg)[c]=v; reinterpret_cast<float4*>(colsum)[c]=make_float4(0,0,0,0);} 
  }
}


__device__ __forceinline__ void redv4(float4* p, float4 v){ asm volatile("red.global.add.v4.f32 [%0], {%1,%2,%3,%4};"::"l"(p),"f"(v.x),"f"(v.y),"f"(v.z),"f"(v.w):"memory"); }
// MODE 5: dγ warp, reds into colsum + fence + ticket + copy; 6: reds+fence+ticket (no copy); 7: reds only; 8: cluster-4 DSMEM then as 5
template<int VPT, int MODE, int PF>
__global__ void __launch_bounds__(N4/VPT+32) rmsw(const float4* __restrict__ x, const float4* __restrict__ dy, const float4* __restrict__ gam,
  const float* __restrict__ rstd, float4* __restrict__ dx, float* dg, float* colsum, unsigned* cnt, int m){
  constexpr int T = N4/VPT; constexpr int W = T/32;
  const int t = threadIdx.x, G = gridDim.x, b = blockIdx.x, lane=t&31, wp=t>>5; const bool row = t<T;
  __shared__ float red[2][W];
  __shared__ float4 sacc[N4];
  float4 gm[VPT], acc[VPT], xa[PF+1][VPT], da[PF+1][VPT]; float rs[PF+1];
  if(row){
  #pragma unroll
  for(int j=0;j<VPT;j++){ gm[j]=ldg4(gam+t+j*T); acc[j]=make_float4(0,0,0,0);} 
  #pragma unroll
  for(int p=0;p<=PF;p++){ int r=b+p*G; if(r<m){ rs[p]=rstd[r];
    #pragma unroll
    for(int j=0;j<VPT;j++){ xa[p][j]=ldg4(x+(size_t)r*N4+t+j*T); da[p][j]=ldg4(dy+(size_t)r*N4+t+j*T);} } }
  }
  int it=0;
  for(int r=b; r<m; r+=G, it++){
    float4 xh[VPT], g[VPT]; float s=0; float rr=rs[0];
    if(row){
    #pragma unroll
    for(int j=0;j<VPT;j++){ xh[j]=make_float4(xa[0][j].x*rr,xa[0][j].y*rr,xa[0][j].z*rr,xa[0][j].w*rr);
      g[j]=make_float4(gm[j].x*da[0][j].x,gm[j].y*da[0][j].y,gm[j].z*da[0][j].z,gm[j].w*da[0][j].w);
      s+=g[j].x*xh[j].x+g[j].y*xh[j].y+g[j].z*xh[j].z+g[j].w*xh[j].w;
      acc[j].x+=da[0][j].x*xh[j].x; acc[j].y+=da[0][j].y*xh[j].y; acc[j].z+=da[0][j].z*xh[j].z; acc[j].w+=da[0][j].w*xh[j].w; }
    #pragma unroll
    for(int p=0;p<PF;p++){ rs[p]=rs[p+1];
      #pragma unroll
      for(int j=0;j<VPT;j++){ xa[p][j]=xa[p+1][j]; da[p][j]=da[p+1][j]; } }
    { int rn=r+(PF+1)*G; if(rn<m){ rs[PF]=rstd[rn];
      #pragma unroll
      for(int j=0;j<VPT;j++){ xa[PF][j]=ldg4(x+(size_t)rn*N4+t+j*T); da[PF][j]=ldg4(dy+(size_t)rn*N4+t+j*T);} } }
    #pragma unroll
    for(int o=16;o>0;o>>=1) s+=__shfl_xor_sync(0xffffffff,s,o);
    if(lane==0) red[it&1][wp]=s;
    }
    __syncthreads();
    if(row){
    float S_=0;
    #pragma unroll
    for(int w=0;w<W;w++) S_+=red[it&1][w];
    float c=S_*(1.0f/N);
    #pragma unroll
    for(int j=0;j<VPT;j++) dx[(size_t)r*N4+t+j*T]=make_float4(rr*(g[j].x-xh[j].x*c),rr*(g[j].y-xh[j].y*c),rr*(g[j].z-xh[j].z*c),rr*(g[j].w-xh[j].w*c));
    }
  }
  if(row){
    #pragma unroll
    for(int j=0;j<VPT;j++) sacc[t+j*T]=acc[j];
  }
  __syncthreads();
  if(MODE==8){
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    if(!row){ int rk=cl.block_rank(); constexpr int per=N4/4;
      for(int c=lane;c<per;c+=32){ int col=rk*per+c; float4 a=make_float4(0,0,0,0);
        #pragma unroll
        for(int q=0;q<4;q++){ float4* rem=cl.map_shared_rank(sacc,q); float4 v=rem[col]; a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w; }
        redv4(reinterpret_cast<float4*>(colsum)+col,a); } }
    cl.sync();
  }
  if(row) return;
  if(MODE!=8) for(int c=lane;c<N4;c+=32) redv4(reinterpret_cast<float4*>(colsum)+c, sacc[c]);
  if(MODE==7) return;
  __threadfence();
  unsigned old=0; if(lane==0) old=atomicInc(cnt, G-1); old=__shfl_sync(0xffffffff,old,0);
  if(MODE==6 || old!=(unsigned)(G-1)) return;
  __threadfence();
  float4* cs=reinterpret_cast<float4*>(colsum);
  for(int c=lane;c<N4;c+=32){ float4 v=__ldcg(cs+c); reinterpret_cast<float4*>(dg)[c]=v; cs[c]=make_float4(0,0,0,0);} 
}
template<int VPT, int PF, int K, int WARP>
__global__ void __launch_bounds__(N4/VPT+32*WARP) rmsk(const float4* __restrict__ x, const float4* __restrict__ dy, const float4* __restrict__ gam,
  const float* __restrict__ rstd, float4* __restrict__ dx, float* dg, float* colsum, unsigned* cnt, int m){
  constexpr int T = N4/VPT; constexpr int W = T/32;
  const int t = threadIdx.x, G = gridDim.x, b = blockIdx.x, lane=t&31, wp=t>>5; const bool row = t<T; constexpr int MODE=0;
  __shared__ float red[2][W];
  __shared__ float4 sacc[N4];
  float4 gm[VPT], acc[VPT], xa[PF+1][VPT], da[PF+1][VPT]; float rs[PF+1];
  if(row){
  #pragma unroll
  for(int j=0;j<VPT;j++){ gm[j]=ldg4(gam+t+j*T); acc[j]=make_float4(0,0,0,0);} 
  #pragma unroll
  for(int p=0;p<=PF;p++){ int r=b+p*G; if(r<m){ rs[p]=rstd[r];
    #pragma unroll
    for(int j=0;j<VPT;j++){ xa[p][j]=ldg4(x+(size_t)r*N4+t+j*T); da[p][j]=ldg4(dy+(size_t)r*N4+t+j*T);} } }
  }
  int it=0;
  for(int r=b; r<m; r+=G, it++){
    float4 xh[VPT], g[VPT]; float s=0; float rr=rs[0];
    if(row){
    #pragma unroll
    for(int j=0;j<VPT;j++){ xh[j]=make_float4(xa[0][j].x*rr,xa[0][j].y*rr,xa[0][j].z*rr,xa[0][j].w*rr);
      g[j]=make_float4(gm[j].x*da[0][j].x,gm[j].y*da[0][j].y,gm[j].z*da[0][j].z,gm[j].w*da[0][j].w);
      s+=g[j].x*xh[j].x+g[j].y*xh[j].y+g[j].z*xh[j].z+g[j].w*xh[j].w;
      acc[j].x+=da[0][j].x*xh[j].x; acc[j].y+=da[0][j].y*xh[j].y; acc[j].z+=da[0][j].z*xh[j].z; acc[j].w+=da[0][j].w*xh[j].w; }
    #pragma unroll
    for(int p=0;p<PF;p++){ rs[p]=rs[p+1];
      #pragma unroll
      for(int j=0;j<VPT;j++){ xa[p][j]=xa[p+1][j]; da[p][j]=da[p+1][j]; } }
    { int rn=r+(PF+1)*G; if(rn<m){ rs[PF]=rstd[rn];
      #pragma unroll
      for(int j=0;j<VPT;j++){ xa[PF][j]=ldg4(x+(size_t)rn*N4+t+j*T); da[PF][j]=ldg4(dy+(size_t)rn*N4+t+j*T);} } }
    #pragma unroll
    for(int o=16;o>0;o>>=1) s+=__shfl_xor_sync(0xffffffff,s,o);
    if(lane==0) red[it&1][wp]=s;
    }
    __syncthreads();
    if(row){
    float S_=0;
    #pragma unroll
    for(int w=0;w<W;w++) S_+=red[it&1][w];
    float c=S_*(1.0f/N);
    #pragma unroll
    for(int j=0;j<VPT;j++) dx[(size_t)r*N4+t+j*T]=make_float4(rr*(g[j].x-xh[j].x*c),rr*(g[j].y-xh[j].y*c),rr*(g[j].z-xh[j].z*c),rr*(g[j].w-xh[j].w*c));
    }
  }
  __shared__ unsigned last;
  float4* cs=reinterpret_cast<float4*>(colsum);
  float4* mine=cs+(size_t)(b%K)*N4;
  if(WARP){
    if(row){
      #pragma unroll
      for(int j=0;j<VPT;j++) sacc[t+j*T]=acc[j];
    }
    __syncthreads();
    if(!row){ for(int c=lane;c<N4;c+=32) redv4(mine+c, sacc[c]); __threadfence(); unsigned old=0; if(lane==0){ old=atomicInc(cnt, G-1); last=(old==(unsigned)(G-1)); } }
  } else {
    if(row){
      #pragma unroll
      for(int j=0;j<VPT;j++) redv4(mine+t+j*T, acc[j]);
    }
    __threadfence();
    __syncthreads();
    if(t==0) last=(atomicInc(cnt, G-1)==(unsigned)(G-1));
  }
  __syncthreads();
  if(!last) return;
  __threadfence();
  constexpr int NT=N4/VPT+32*WARP;
  for(int c=t;c<N4;c+=NT){ float4 v[K];
    #pragma unroll
    for(int q=0;q<K;q++) v[q]=__ldcg(cs+(size_t)q*N4+c);
    float4 a=v[0];
    #pragma unroll
    for(int q=1;q<K;q++){ a.x+=v[q].x;a.y+=v[q].y;a.z+=v[q].z;a.w+=v[q].w; }
    reinterpret_cast<float4*>(dg)[c]=a;
    #pragma unroll
    for(int q=0;q<K;q++) cs[(size_t)q*N4+c]=make_float4(0,0,0,0);
  }
}
__global__ void emptyk(){}


__global__ void __launch_bounds__(256) fin2(const float4* ws, float* dg, int G, int pdl){
  if(pdl) asm volatile("griddepcontrol.wait;":::"memory");
  __shared__ float4 sm[64][4];
  int c=threadIdx.x&3, sl=threadIdx.x>>2, col=blockIdx.x*4+c; float4 a=make_float4(0,0,0,0);
  #pragma unroll 8
  for(int q=sl;q<G;q+=64){ float4 v=__ldcg(ws+(size_t)q*N4+col); a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w; }
  sm[sl][c]=a; __syncthreads();
  for(int h=32;h>0;h>>=1){ if(sl<h){ float4 v=sm[sl+h][c]; a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w; sm[sl][c]=a; } __syncthreads(); }
  if(sl==0) reinterpret_cast<float4*>(dg)[col]=a;
}

// finalize: 32 float4-columns? keep simple: block (32 chunks x 16 slices), grid N4/32
__global__ void fin(const float4* ws, float* dg, int G){
  __shared__ float4 sm[16][33];
  int cx=threadIdx.x, sy=threadIdx.y, c=blockIdx.x*32+cx; float4 a=make_float4(0,0,0,0);
  for(int q=sy;q<G;q+=16){ float4 v=ws[(size_t)q*N4+c]; a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w; }
  sm[sy][cx]=a; __syncthreads();
  if(sy==0){ for(int q=1;q<16;q++){ float4 v=sm[q][cx]; a.x+=v.x;a.y+=v.y;a.z+=v.z;a.w+=v.w;} reinterpret_cast<float4*>(dg)[c]=a; }
}

__device__ __forceinline__ bool tryw(unsigned ba, unsigned par){ unsigned ok; asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0,1,0,p; }":"=r"(ok):"r"(ba),"r"(par):"memory"); return ok!=0; }
// ---- TMA relu: persistent CTAs, tiles of TILE floats of x and dy loaded by cp.async.bulk into STG stages.
template<int TILE, int STG, int THREADS, bool TMASTORE>
__global__ void __launch_bounds__(THREADS) relu_tma(const float* x, const float* dy, float* dx, int ntiles){
  extern __shared__ __align__(128) unsigned char smraw[];
  float* sx = reinterpret_cast<float*>(smraw);
  float* sd = sx + STG*TILE;
  unsigned long long* bar = reinterpret_cast<unsigned long long*>(sd + STG*TILE);
  const int t=threadIdx.x, G=gridDim.x, b=blockIdx.x;
  unsigned barA = (unsigned)__cvta_generic_to_shared(bar);
  if(t==0){ for(int s=0;s<STG;s++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;"::"r"(barA+8*s)); asm volatile("fence.mbarrier_init.release.cluster;"); }
  __syncthreads();
  auto issue=[&](int k){ int tile=b+k*G; if(tile>=ntiles) return; int s=k%STG; unsigned ba=barA+8*s;
    unsigned dX=(unsigned)__cvta_generic_to_shared(sx+s*TILE), dD=(unsigned)__cvta_generic_to_shared(sd+s*TILE);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"::"r"(ba),"r"(TILE*8));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"::"r"(dX),"l"(x+(size_t)tile*TILE),"r"(TILE*4),"r"(ba):"memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"::"r"(dD),"l"(dy+(size_t)tile*TILE),"r"(TILE*4),"r"(ba):"memory"); };
  if(t==0) for(int k=0;k<STG;k++) issue(k);
  for(int k=0; b+k*G<ntiles; k++){
    int tile=b+k*G, s=k%STG; unsigned ba=barA+8*s; unsigned par=(k/STG)&1;
    while(!tryw(ba,par)) {}
    float4* X=reinterpret_cast<float4*>(sx+s*TILE); float4* D=reinterpret_cast<float4*>(sd+s*TILE);
    if(!TMASTORE){
      #pragma unroll
      for(int i=t;i<TILE/4;i+=THREADS){ float4 a=X[i], d=D[i]; reinterpret_cast<float4*>(dx+(size_t)tile*TILE)[i]=make_float4(a.x>0?d.x:0.f,a.y>0?d.y:0.f,a.z>0?d.z:0.f,a.w>0?d.w:0.f);} 
      __syncthreads();
    } else {
      #pragma unroll
      for(int i=t;i<TILE/4;i+=THREADS){ float4 a=X[i], d=D[i]; D[i]=make_float4(a.x>0?d.x:0.f,a.y>0?d.y:0.f,a.z>0?d.z:0.f,a.w>0?d.w:0.f);} 
      asm volatile("fence.proxy.async.shared::cta;":::"memory");
      __syncthreads();
      if(t==0){ unsigned src=(unsigned)__cvta_generic_to_shared(sd+s*TILE);
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"::"l"(dx+(size_t)tile*TILE),"r"(src),"r"(TILE*4):"memory");
        asm volatile("cp.async.bulk.commit_group;":::"memory");
        asm volatile("cp.async.bulk.wait_group.read 0;":::"memory"); }
    }
    if(t==0) issue(k+STG);
  }
  if(TMASTORE && t==0) asm volatile("cp.async.bulk.wait_group 0;":::"memory");
}

template<class K> int occ(K k, int threads, size_t smem){ int n; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n,k,threads,smem)); return n; }

int main(){
  cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr,0)); int SMs=pr.multiProcessorCount;
  printf("%s SMs=%d\n",pr.name,SMs);
  CK(cudaMalloc(&flushBuf,flushN));
  for(int i=0;i<200;i++){ CK(cudaEventCreate(&evA[i])); CK(cudaEventCreate(&evB[i])); }
  size_t E=(size_t)M*N; float *x,*dy,*dx,*gam,*rstd,*ws,*ws2,*dg,*colsum; unsigned* cnt;
  CK(cudaMalloc(&x,E*4)); CK(cudaMalloc(&dy,E*4)); CK(cudaMalloc(&dx,E*4)); CK(cudaMalloc(&gam,N*4)); CK(cudaMalloc(&rstd,M*4));
  CK(cudaMalloc(&ws,(size_t)2048*N*4)); CK(cudaMalloc(&ws2,(size_t)256*N*4)); CK(cudaMalloc(&dg,N*4)); CK(cudaMalloc(&colsum,16*N*4)); CK(cudaMalloc(&cnt,4096));
  CK(cudaMemset(colsum,0,16*N*4)); CK(cudaMemset(cnt,0,4096));
  { std::vector<float> h(E), hd(E), hg(N), hr(M); srand(1); for(size_t i=0;i<E;i++){ h[i]=(rand()/(float)RAND_MAX)*2-1; hd[i]=(rand()/(float)RAND_MAX)*2-1; }
    for(int i=0;i<N;i++) hg[i]=0.5f+(rand()/(float)RAND_MAX); for(int i=0;i<M;i++) hr[i]=0.5f+(rand()/(float)RAND_MAX);
    CK(cudaMemcpy(x,h.data(),E*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dy,hd.data(),E*4,cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gam,hg.data(),N*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(rstd,hr.data(),M*4,cudaMemcpyHostToDevice));
    // reference dγ
    std::vector<double> ref(N,0); for(int r=0;r<M;r++) for(int c=0;c<N;c++) ref[c]+=(double)hd[(size_t)r*N+c]*h[(size_t)r*N+c]*hr[r];
    static std::vector<double> R; R=ref; 
    auto check=[&](const char* name){ std::vector<float> o(N); CK(cudaMemcpy(o.data(),dg,N*4,cudaMemcpyDeviceToHost)); double e=0; for(int c=0;c<N;c++) e=std::max(e,fabs(o[c]-R[c])); if(e>1e-2) printf("  !! %s dγ max err %g\n",name,e); CK(cudaMemset(dg,0xff,N*4)); };
    double bytes=3.0*E*4;
    auto rep=[&](const char* name, float us){ printf("%-48s %8.2f us %7.0f GB/s\n",name,us,bytes/us/1e3); };
    // baseline elementwise
    rep("relu f32 v4 block256 [2048x1536]", bench([&]{ relu4<<<(E/4+255)/256,256>>>((float4*)x,(float4*)dy,(float4*)dx,E/4); }));
    rep("relu f32 v4 block128 [2048x1536]", bench([&]{ relu4<<<(E/4+127)/128,128>>>((float4*)x,(float4*)dy,(float4*)dx,E/4); }));
    char nm[128];
#define RUNV(VPT,PF) do{ \
    int T=N4/VPT; int o=occ(rms<VPT,1,PF>,T,0); \
    for(int k=1;k<=o && k<=6;k++){ int G=SMs*k; if(G>M) break; \
      snprintf(nm,128,"rms vpt=%d pf=%d G=%d no-dγ",VPT,PF,G); rep(nm,bench([&]{ rms<VPT,0,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,M,12); })); \
      snprintf(nm,128,"rms vpt=%d pf=%d G=%d partial+fin",VPT,PF,G); rep(nm,bench([&]{ rms<VPT,1,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,M,12); fin<<<N4/32,dim3(32,16)>>>((float4*)ws,dg,G); })); check(nm); \
      { int oc=occ(rms<VPT,2,PF>,T,0); if(G<=oc*SMs){ snprintf(nm,128,"rms vpt=%d pf=%d G=%d gridsync",VPT,PF,G); \
        rep(nm,bench([&]{ float4*a0=(float4*)x,*a1=(float4*)dy,*a2=(float4*)gam,*a4=(float4*)dx,*a5=(float4*)ws,*a6=(float4*)ws2; int mm=M, SS=12; \
          void* args[]={&a0,&a1,&a2,&rstd,&a4,&a5,&a6,&dg,&colsum,&cnt,&mm,&SS}; CK(cudaLaunchCooperativeKernel((void*)rms<VPT,2,PF>,G,T,args,0,0)); })); check(nm);} } \
      for(int S: {8,12,16}){ snprintf(nm,128,"rms vpt=%d pf=%d G=%d ticket2 S=%d",VPT,PF,G,S); rep(nm,bench([&]{ rms<VPT,4,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,M,S); })); check(nm);} \
      for(int cs: {4,8}){ if(G%cs) continue; snprintf(nm,128,"rms vpt=%d pf=%d G=%d cluster=%d",VPT,PF,G,cs); \
        cudaLaunchConfig_t cfg={}; cfg.gridDim=G; cfg.blockDim=T; cudaLaunchAttribute at[1]; at[0].id=cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x=cs; at[0].val.clusterDim.y=1; at[0].val.clusterDim.z=1; cfg.attrs=at; cfg.numAttrs=1; \
        rep(nm,bench([&]{ CK(cudaLaunchKernelEx(&cfg,rms<VPT,3,PF>,(const float4*)x,(const float4*)dy,(const float4*)gam,(const float*)rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,(int)M,12)); })); check(nm);} \
    } }while(0)
    rep("empty kernel", bench([&]{ emptyk<<<1,32>>>(); }));
    rep("empty kernel x2", bench([&]{ emptyk<<<1,32>>>(); emptyk<<<1,32>>>(); }));
#define RUNW(VPT,PF) do{ int T=N4/VPT+32; int o=occ(rmsw<VPT,5,PF>,T,0); \
    for(int k=2;k<=o && k<=6;k++){ int G=SMs*k; if(G>M) break; \
      snprintf(nm,128,"rms vpt=%d pf=%d G=%d no-dγ",VPT,PF,G); rep(nm,bench([&]{ rms<VPT,0,PF><<<G,T-32>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,M,12); })); \
      snprintf(nm,128,"rmsw vpt=%d pf=%d G=%d red-only",VPT,PF,G); rep(nm,bench([&]{ rmsw<VPT,7,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,dg,colsum,cnt,M); })); CK(cudaMemset(colsum,0,N*4)); \
      snprintf(nm,128,"rmsw vpt=%d pf=%d G=%d red+ticket",VPT,PF,G); rep(nm,bench([&]{ rmsw<VPT,6,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,dg,colsum,cnt,M); })); CK(cudaMemset(colsum,0,N*4)); \
      snprintf(nm,128,"rmsw vpt=%d pf=%d G=%d full",VPT,PF,G); rep(nm,bench([&]{ rmsw<VPT,5,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,dg,colsum,cnt,M); })); check(nm); \
      if(G%4==0){ snprintf(nm,128,"rmsw vpt=%d pf=%d G=%d cluster4",VPT,PF,G); \
        cudaLaunchConfig_t cfg={}; cfg.gridDim=G; cfg.blockDim=T; cudaLaunchAttribute at[1]; at[0].id=cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x=4; at[0].val.clusterDim.y=1; at[0].val.clusterDim.z=1; cfg.attrs=at; cfg.numAttrs=1; \
        rep(nm,bench([&]{ CK(cudaLaunchKernelEx(&cfg,rmsw<VPT,8,PF>,(const float4*)x,(const float4*)dy,(const float4*)gam,(const float*)rstd,(float4*)dx,dg,colsum,cnt,(int)M)); })); check(nm);} \
      snprintf(nm,128,"rms vpt=%d pf=%d G=%d partial+fin",VPT,PF,G); rep(nm,bench([&]{ rms<VPT,1,PF><<<G,T-32>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,M,12); fin<<<N4/32,dim3(32,16)>>>((float4*)ws,dg,G); })); check(nm); \
    } }while(0)
#define RK(VPT,PF,K,WARP) do{ int T=N4/VPT+32*WARP; int o=occ(rmsk<VPT,PF,K,WARP>,T,0); \
    for(int kk=2;kk<=o && kk<=5;kk++){ int G=SMs*kk; if(G>M) break; \
      snprintf(nm,128,"rmsk vpt=%d pf=%d K=%d warp=%d G=%d",VPT,PF,K,WARP,G); rep(nm,bench([&]{ rmsk<VPT,PF,K,WARP><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,dg,colsum,cnt,M); })); check(nm); \
    } }while(0)
#define PD(VPT,PF) do{ int T=N4/VPT; for(int G: {264,396,528,660}){ if(G>occ(rms<VPT,1,PF>,T,0)*SMs) break; \
      snprintf(nm,128,"rms vpt=%d pf=%d G=%d no-dγ",VPT,PF,G); rep(nm,bench([&]{ rms<VPT,0,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,M,12); })); \
      snprintf(nm,128,"rms vpt=%d pf=%d G=%d partial+fin2",VPT,PF,G); rep(nm,bench([&]{ rms<VPT,1,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,M,12); fin2<<<N4/4,256>>>((float4*)ws,dg,G,0); })); check(nm); \
      for(int trig: {0,1}){ snprintf(nm,128,"rms vpt=%d pf=%d G=%d partial+fin2 PDL trig=%d",VPT,PF,G,trig); \
        cudaLaunchConfig_t cfg={}; cfg.gridDim=N4/4; cfg.blockDim=256; cudaLaunchAttribute at[1]; at[0].id=cudaLaunchAttributeProgrammaticStreamSerialization; at[0].val.programmaticStreamSerializationAllowed=1; cfg.attrs=at; cfg.numAttrs=1; \
        rep(nm,bench([&]{ rms<VPT,1,PF><<<G,T>>>((float4*)x,(float4*)dy,(float4*)gam,rstd,(float4*)dx,(float4*)ws,(float4*)ws2,dg,colsum,cnt,M,trig?-1:12); CK(cudaLaunchKernelEx(&cfg,fin2,(const float4*)ws,dg,G,1)); })); check(nm); } \
    } }while(0)
    PD(1,0); PD(1,1); PD(2,0); PD(2,1);
    RK(1,0,4,0); RK(2,1,4,0);
  }
  // ---- relu f32 [2048x8960]
  if(0){ CK(cudaFree(x)); CK(cudaFree(dy)); CK(cudaFree(dx)); size_t E2=(size_t)2048*8960; float *a,*d,*o; CK(cudaMalloc(&a,E2*4)); CK(cudaMalloc(&d,E2*4)); CK(cudaMalloc(&o,E2*4));
    CK(cudaMemset(a,0x3f,E2*4)); CK(cudaMemset(d,0x3e,E2*4)); double bytes=3.0*E2*4;
    auto rep=[&](const char* name, float us){ printf("%-48s %8.2f us %7.0f GB/s\n",name,us,bytes/us/1e3); };
    rep("relu big v4 block128", bench([&]{ relu4<<<(E2/4+127)/128,128>>>((float4*)a,(float4*)d,(float4*)o,E2/4); }));
    rep("relu big v4 block256", bench([&]{ relu4<<<(E2/4+255)/256,256>>>((float4*)a,(float4*)d,(float4*)o,E2/4); }));
    rep("memcpy d2d (2 arrays' bytes)", bench([&]{ CK(cudaMemcpyAsync(o,a,E2*4,cudaMemcpyDeviceToDevice)); })*1.5f);
    char nm[128];
#define RT(TILE,STG,TH,TS) do{ size_t sm=(size_t)2*TILE*STG*4+8*STG; auto k=relu_tma<TILE,STG,TH,TS>; CK(cudaFuncSetAttribute(k,cudaFuncAttributeMaxDynamicSharedMemorySize,(int)sm)); \
      int oc=occ(k,TH,sm); int nt=E2/TILE; for(int per: {1,2}){ if(per>oc) break; int G=132*per; snprintf(nm,128,"relu tma tile=%d stg=%d th=%d tmastore=%d G=%d",TILE,STG,TH,(int)TS,G); \
      CK(cudaMemset(o,0,E2*4)); rep(nm,bench([&]{ k<<<G,TH,sm>>>(a,d,o,nt); })); \
      { std::vector<float> ha(4096),hd(4096),ho(4096); size_t off=E2-4096; CK(cudaMemcpy(ha.data(),a+off,16384,cudaMemcpyDeviceToHost)); CK(cudaMemcpy(hd.data(),d+off,16384,cudaMemcpyDeviceToHost)); CK(cudaMemcpy(ho.data(),o+off,16384,cudaMemcpyDeviceToHost)); \
        int bad=0; for(int i=0;i<4096;i++) if(ho[i]!=(ha[i]>0?hd[i]:0.f)) bad++; if(bad) printf("  !! %d wrong\n",bad);} } }while(0)
    RT(2048,4,256,false); RT(2048,4,256,true); RT(4096,4,256,false); RT(4096,4,256,true); RT(2048,8,256,false); RT(2048,8,256,true);
    RT(1024,8,128,false); RT(1024,8,128,true); RT(4096,3,512,true); RT(8192,2,512,true); RT(2048,6,512,true);
  }
  printf("done\n");
}
