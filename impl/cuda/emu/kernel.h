// kernel.h is force-included (g++ -include) before every kernel source the
// emulator's NVRTC compiles for the host. It maps the CUDA C++ the kernels
// use onto host C++ and the emulator's scheduler (scheduler.cc):
//
//   threadIdx, blockIdx, blockDim, gridDim   fields of the running thread
//   __shared__ T v[N]                         static thread_local: one copy
//                                             per block (a block runs on one
//                                             host thread from start to end)
//   extern __shared__ T v[]                   rewritten by nvrtc.cc to the
//                                             launch's dynamic buffer
//   __syncthreads()                           a barrier of the block's
//                                             cooperative threads (fibers)
//   __shfl_*_sync, __ballot_sync, …          lockstep exchanges of a warp's
//                                             32 lanes (two warp barriers)
//   atomic*                                   host atomics (blocks run in
//                                             parallel on several threads)
//   asm("cvt…")                               rewritten by nvrtc.cc to the
//                                             __emu_ptx_* functions below
//
// The emulator cannot show CUDA's own math library (expf, erf, … are the
// host's), fused multiply-adds the device compiler would contract, timing,
// or the real ABI; see the README.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "thread_info.h"

extern "C" {
// __emu_cur is the thread the calling fiber runs as (set on every switch).
extern __thread __emu_thread_info* __emu_cur;
// __emu_syncthreads waits until every live thread of the block arrives.
void __emu_syncthreads(void);
// __emu_warp_exchange publishes v for the calling lane, waits for the
// lanes of mask, and returns the value lane src published (its own v when
// src is not a live lane of the warp).
uint64_t __emu_warp_exchange(unsigned mask, uint64_t v, int src);
// __emu_warp_ballot returns the bits of the lanes of mask whose pred is set.
unsigned __emu_warp_ballot(unsigned mask, int pred);
// __emu_fault records a fault (an emu error code) and ends the launch.
void __emu_fault(int code, const char* what, const void* addr) __attribute__((noreturn));
}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __shared__ static thread_local
#define __constant__ static

#define threadIdx (__emu_cur->threadIdx)
#define blockIdx (__emu_cur->block->blockIdx)
#define blockDim (__emu_cur->block->blockDim)
#define gridDim (__emu_cur->block->gridDim)
#define warpSize 32

#define __syncthreads() __emu_syncthreads()

typedef __emu_dim3 dim3;
typedef __emu_dim3 uint3;

// Vector types with the device's sizes and alignments.
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }

// __ldg is a plain load; a vector load from an address not aligned to its
// size faults as on the device (CUDA_ERROR_MISALIGNED_ADDRESS).
template <typename T>
inline T __ldg(const T* p) {
  if (reinterpret_cast<uintptr_t>(p) % alignof(T) != 0) __emu_fault(716, "misaligned __ldg", p);
  return *p;
}

// Bit casts and correctly rounded arithmetic (the host's IEEE operations,
// compiled without contraction).
template <typename To, typename From>
inline To __emu_bits(From f) {
  static_assert(sizeof(To) == sizeof(From), "bit cast of different sizes");
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}
inline float __int_as_float(int i) { return __emu_bits<float>(i); }
inline float __uint_as_float(unsigned i) { return __emu_bits<float>(i); }
inline int __float_as_int(float f) { return __emu_bits<int>(f); }
inline unsigned __float_as_uint(float f) { return __emu_bits<unsigned>(f); }
inline double __longlong_as_double(long long i) { return __emu_bits<double>(i); }
inline long long __double_as_longlong(double d) { return __emu_bits<long long>(d); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __frcp_rn(float a) { return 1.f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }

using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;

// min and max as the device's overloads: the common type of the two.
template <typename A, typename B>
inline typename std::common_type<A, B>::type min(A a, B b) {
  typedef typename std::common_type<A, B>::type C;
  return (C)b < (C)a ? (C)b : (C)a;
}
template <typename A, typename B>
inline typename std::common_type<A, B>::type max(A a, B b) {
  typedef typename std::common_type<A, B>::type C;
  return (C)a < (C)b ? (C)b : (C)a;
}

// The PTX instructions the kernels use in inline asm, on the host (the
// asm statements are rewritten to these by nvrtc.cc).
inline unsigned short __emu_ptx_cvt_rn_f16_f32(float f) {  // round to nearest even
  _Float16 h = (_Float16)f;
  return __emu_bits<unsigned short>(h);
}
inline float __emu_ptx_cvt_f32_f16(unsigned short h) { return (float)__emu_bits<_Float16>(h); }

// Warp exchanges: every lane of mask takes part; src outside the lane's
// width-segment (or not a live lane) returns the caller's own value, as
// on the device.
template <typename T>
inline uint64_t __emu_to_bits(T v) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}
template <typename T>
inline T __emu_from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  int lane = (int)__emu_cur->lane, base = lane & ~(width - 1);
  return __emu_from_bits<T>(__emu_warp_exchange(mask, __emu_to_bits(v), base + (src & (width - 1))));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
  int lane = (int)__emu_cur->lane, src = lane ^ laneMask;
  if ((src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;
  return __emu_from_bits<T>(__emu_warp_exchange(mask, __emu_to_bits(v), src));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  int lane = (int)__emu_cur->lane, src = lane + (int)delta;
  if ((src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;
  return __emu_from_bits<T>(__emu_warp_exchange(mask, __emu_to_bits(v), src));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  int lane = (int)__emu_cur->lane, src = lane - (int)delta;
  if (src < (lane & ~(width - 1))) src = lane;
  return __emu_from_bits<T>(__emu_warp_exchange(mask, __emu_to_bits(v), src));
}
inline unsigned __ballot_sync(unsigned mask, int pred) { return __emu_warp_ballot(mask, pred); }
inline int __any_sync(unsigned mask, int pred) { return __emu_warp_ballot(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __emu_warp_ballot(mask, !pred) == 0; }
inline void __syncwarp(unsigned mask = 0xffffffffu) { (void)__emu_warp_ballot(mask, 0); }
inline unsigned __activemask() { return __emu_warp_ballot(0xffffffffu, 1); }

// Atomics: sequentially consistent host atomics; the float and double
// additions are compare-and-swap loops.
template <typename T>
inline T atomicAdd(T* p, T v) {
  if constexpr (std::is_floating_point<T>::value) {
    T old, sum;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    do {
      sum = old + v;
    } while (!__atomic_compare_exchange(p, &old, &sum, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
  } else {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
  }
}
template <typename T>
inline T atomicSub(T* p, T v) {
  return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);
}
template <typename T>
inline T atomicExch(T* p, T v) {
  T old;
  __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
  return old;
}
template <typename T>
inline T atomicCAS(T* p, T cmp, T v) {
  __atomic_compare_exchange(p, &cmp, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
template <typename T>
inline T atomicMax(T* p, T v) {
  T old;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  while (old < v && !__atomic_compare_exchange(p, &old, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
template <typename T>
inline T atomicMin(T* p, T v) {
  T old;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange(p, &old, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// __emu_call unpacks cuLaunchKernel's parameter array (one pointer to each
// argument's value) into a call of kernel f.
template <typename... A, std::size_t... I>
inline void __emu_call_seq(void (*f)(A...), void** p, std::index_sequence<I...>) {
  f(*static_cast<typename std::remove_cv<typename std::remove_reference<A>::type>::type*>(p[I])...);
}
template <typename... A>
inline void __emu_call(void (*f)(A...), void** p) {
  __emu_call_seq(f, p, std::index_sequence_for<A...>{});
}
// __emu_arity is the number of parameters of kernel f.
template <typename... A>
constexpr int __emu_arity(void (*)(A...)) {
  return (int)sizeof...(A);
}
