// emu.h is the interface between the parts of vitbench's CUDA emulator,
// libvitbench-cuemu.so: the driver API (driver.cc), NVRTC (nvrtc.cc),
// cuBLAS (cublas.cc) and the block scheduler that runs kernels
// (scheduler.cc). Device memory is host memory: a CUdeviceptr is the
// address of the bytes. Every call runs synchronously on the caller's
// thread (kernels on the scheduler's workers), so a stream is only an
// ordering the caller already has.
#pragma once
#include <cstddef>
#include <cstdint>

namespace emu {

// CUresult codes the emulator returns.
enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kNoDevice = 100,
  kInvalidImage = 200,
  kInvalidContext = 201,
  kInvalidSource = 300,
  kNotFound = 500,
  kInvalidHandle = 400,
  kIllegalAddress = 700,
  kLaunchOutOfResources = 701,
  kMisalignedAddress = 716,
  kLaunchFailed = 719,
  kUnknown = 999,
};

// sticky returns the context's sticky error (a fault in a kernel or a
// product: kIllegalAddress, kMisalignedAddress, kLaunchFailed), or
// kSuccess. Once set it is returned by every later call that touches the
// context until the primary context is released.
int sticky();

// set_sticky records code as the context's sticky error (the first one
// wins) with a one-line description for the log.
void set_sticky(int code, const char* what);

// range_ok reports whether [p, p+bytes) lies inside one live device
// allocation.
bool range_ok(uint64_t p, uint64_t bytes);

// worker_threads is how many host threads run blocks and products
// (VITBENCH_CUDA_EMU_THREADS, default the CPU count).
int worker_threads();

}  // namespace emu
