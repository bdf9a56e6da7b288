// thread_info.h: the view of the running CUDA thread that kernel code
// reads (threadIdx, blockIdx, … in kernel.h) and the scheduler writes
// (scheduler.cc), one layout for both.
#pragma once

struct __emu_dim3 {
  unsigned x, y, z;
};
struct __emu_block_info {
  __emu_dim3 blockIdx, blockDim, gridDim;
  void* dynamic_shared;
};
struct __emu_thread_info {
  __emu_dim3 threadIdx;
  const __emu_block_info* block;
  unsigned lane;  // linear thread index mod 32
  unsigned warp;  // linear thread index / 32
};
