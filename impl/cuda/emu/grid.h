// grid.h: the emulator's kernel launcher (scheduler.cc), used by the
// driver API (driver.cc).
#pragma once
#include <cstdint>
#include <string>

namespace emu {

// Entry is a kernel's host trampoline: it unpacks cuLaunchKernel's
// parameter array and runs the kernel body as the current thread.
typedef void (*Entry)(void** params);

// Launch describes one kernel launch.
struct Launch {
  Entry entry;
  const char* name;
  unsigned grid[3], block[3];
  uint32_t shared;  // dynamic shared memory bytes
  void** params;
};

// run_grid runs every block of l on the worker threads and returns
// kSuccess, or the fault that ended it (its description in *what): a
// memory fault (kIllegalAddress, kMisalignedAddress) or a deadlock at a
// barrier (kLaunchFailed).
int run_grid(const Launch& l, std::string* what);

// Schedule is the order in which a block's runnable threads resume: in
// thread order, in reverse, or shuffled (seeded) at the start and at every
// barrier (VITBENCH_CUDA_EMU_SCHEDULE = inorder | reverse | random,
// VITBENCH_CUDA_EMU_SEED).
enum class Schedule { InOrder, Reverse, Random };
Schedule schedule();

}  // namespace emu
