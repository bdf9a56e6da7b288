// common.cuh is prepended to every kernel source (NVRTC has no include
// path here): index types, the grid-stride loop, the level table of the
// multi-scale ops and block reductions.

typedef long long i64;

#define NEG_INF __int_as_float(0xff800000)
#define POS_INF __int_as_float(0x7f800000)

// FOR_EACH(i, n) visits i = 0..n-1 once across the whole grid.
#define FOR_EACH(i, n) \
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (i64)(n); i += (i64)blockDim.x * gridDim.x)

// Levels is the feature-map table of Deformable DETR's multi-scale ops,
// passed by value: level l is h[l]×w[l] rows starting at row start[l].
struct Levels {
  int n;
  int h[64];
  int w[64];
  int start[64];
};

// level_of returns the level that flattened row s belongs to.
__device__ __forceinline__ int level_of(const Levels& L, i64 s) {
  int l = L.n - 1;
  while (l > 0 && s < L.start[l]) --l;
  return l;
}

// total_rows is S = Σ h[l]·w[l].
__device__ __forceinline__ i64 total_rows(const Levels& L) {
  return (i64)L.start[L.n - 1] + (i64)L.h[L.n - 1] * L.w[L.n - 1];
}

// SineTable is dim_t[i] = 10000^(2⌊i/2⌋/128) in float32, computed on the
// host exactly as the CPU backend does.
struct SineTable {
  float v[128];
};

// block_sum returns the sum of v over the block (blockDim.x a multiple of
// 32, at most 1024) to every thread.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  int warps = blockDim.x >> 5;
  v = lane < warps ? part[lane] : (T)0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// block_max is block_sum with max (NaN-propagating is not needed: inputs
// of softmax are finite or the row is garbage anyway).
__device__ float block_max(float v) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  int warps = blockDim.x >> 5;
  v = lane < warps ? part[lane] : NEG_INF;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// sigmoid_d is 1/(1 + e^(−x)) in double rounded once, as the CPU backend.
__device__ __forceinline__ float sigmoid_d(float x) { return (float)(1.0 / (1.0 + exp(-(double)x))); }
