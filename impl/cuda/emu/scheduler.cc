// scheduler.cc runs a kernel launch on the host: the blocks are shared
// out to worker threads; within a block every CUDA thread is a fiber (its
// own stack, switched by emu_switch below, no syscall), run cooperatively
// until it finishes or waits at a barrier: __syncthreads (all live threads
// of the block) or a warp exchange (the live lanes of the mask). Runnable
// threads resume in the order the schedule says (grid.h); the random
// schedule reshuffles at every barrier, so code that relies on an order a
// missing barrier does not guarantee computes different results from run
// to run. A memory fault inside a kernel (SIGSEGV or SIGBUS on a worker
// thread, a guard page after every allocation: driver.cc), a misaligned
// vector load or a barrier no thread can pass ends the launch with a
// CUDA error code instead of the process.
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emu.h"
#include "grid.h"
#include "thread_info.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

extern "C" {
__attribute__((visibility("default"))) __thread __emu_thread_info* __emu_cur;
void emu_switch(void** save_sp, void* next_sp);
void emu_fiber_entry();
}

// emu_switch(save_sp, next_sp) saves the callee-saved registers, MXCSR and
// the x87 control word on the current stack, stores the stack pointer in
// *save_sp, and resumes the context whose stack pointer is next_sp (x86-64
// System V).
asm(R"(
.pushsection .text
.globl emu_switch
.type emu_switch, @function
.hidden emu_switch
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
 .size emu_switch, .-emu_switch
.popsection
)");

namespace emu {
namespace {

enum class State { New, Runnable, WaitBlock, WaitWarp, Done };

constexpr size_t kStackBytes = EMU_ASAN ? (1u << 20) : (256u << 10);

// Stack is one fiber stack with a guard page below it.
struct Stack {
  char* base;  // the mapping, guard page first
  size_t size;
  size_t color;  // bytes left unused at the top
  char* bottom() const { return base + 4096; }
  size_t usable() const { return size - 4096; }
  char* top() const { return base + size - color; }
};

struct Fiber {
  __emu_thread_info info;
  State state;
  void* sp;
  Stack* stack;
  unsigned mask;  // the warp exchange it waits in
  uint64_t value;
  int pred;
  unsigned phase;  // exchanges done, mod 2
#if EMU_ASAN
  void* fake;
#endif
};

// Warp is the state of a warp's exchanges. Exchange k of a lane uses
// buffer k mod 2: a lane can start exchange k+1 while slower lanes still
// read exchange k, but not k+2, which waits for them at k+1; so one barrier
// per exchange suffices.
struct Warp {
  int live;       // lanes not finished
  int arrived;    // lanes waiting in the current exchange
  unsigned live_lanes;
  uint64_t slot[2][32];
  unsigned wrote[2];  // lanes that published into slot[i]
  unsigned ballot[2];
};

uint64_t splitmix(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Worker is a host thread that runs blocks, with its fibers and stacks.
struct Worker {
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  std::vector<Stack*> free_stacks;
  std::vector<int> queue;  // runnable fiber ids, consumed from head
  size_t head = 0;
  std::vector<int> released;
  std::vector<char> dyn;  // dynamic shared memory
  __emu_block_info block;
  const Launch* launch = nullptr;
  Fiber* current = nullptr;
  void* sched_sp = nullptr;
  int live = 0, block_arrived = 0;
  uint64_t rng = 0;
  Schedule order = Schedule::InOrder;
  // Faults.
  sigjmp_buf jump;
  volatile bool in_kernel = false;
  int fault_code = 0;
  std::string fault_what;
#if EMU_ASAN
  void* fake_sched = nullptr;
  const void* sched_bottom = nullptr;
  size_t sched_size = 0;
#endif

  Stack* acquire_stack();
  void reclaim_abandoned();
  int run_block(uint64_t index, uint64_t seed);
  void release_waiters(State which, int warp);
  void push_released(bool shuffle);
  void arrive_block(Fiber* f);
  void arrive_warp(Fiber* f);
  void finish(Fiber* f);
  void yield(Fiber* f);
};

thread_local Worker* t_worker = nullptr;

Stack* Worker::acquire_stack() {
  if (!free_stacks.empty()) {
    Stack* s = free_stacks.back();
    free_stacks.pop_back();
    return s;
  }
  void* m = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "cuda-emu: cannot map a %zu-byte fiber stack\n", kStackBytes);
    std::abort();
  }
  mprotect(m, 4096, PROT_NONE);
  // Stack tops a multiple of 256 KiB apart would share cache sets: each
  // stack starts a different number of cache lines below its top.
  static std::atomic<unsigned> made{0};
  size_t color = (made.fetch_add(1) * 17 % 1024) * 64;
  return new Stack{static_cast<char*>(m), kStackBytes, color};
}

// switch_to_fiber runs f until it yields back.
void switch_to_fiber(Worker* w, Fiber* f) {
  w->current = f;
  __emu_cur = &f->info;
#if EMU_ASAN
  __sanitizer_start_switch_fiber(&w->fake_sched, f->stack->bottom(), f->stack->usable());
#endif
  emu_switch(&w->sched_sp, f->sp);
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(w->fake_sched, nullptr, nullptr);
#endif
}

// Worker::yield suspends f (on its own stack) and resumes the scheduler.
void Worker::yield(Fiber* f) {
#if EMU_ASAN
  __sanitizer_start_switch_fiber(f->state == State::Done ? nullptr : &f->fake, sched_bottom, sched_size);
#endif
  emu_switch(&f->sp, sched_sp);
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(f->fake, &sched_bottom, &sched_size);
#endif
}

void Worker::push_released(bool shuffle) {
  if (order == Schedule::Random && shuffle) {
    for (size_t i = released.size(); i > 1; --i) std::swap(released[i - 1], released[splitmix(&rng) % i]);
  } else if (order == Schedule::Reverse) {
    std::reverse(released.begin(), released.end());
  }
  for (int id : released) queue.push_back(id);
  released.clear();
}

// release_waiters makes the fibers waiting at the block barrier (warp <
// 0) or in warp's exchange runnable.
void Worker::release_waiters(State which, int warp) {
  size_t lo = 0, hi = fibers.size();
  if (warp >= 0) {
    lo = (size_t)warp * 32;
    hi = std::min(hi, lo + 32);
  }
  for (size_t i = lo; i < hi; ++i) {
    Fiber& f = fibers[i];
    if (f.state == which) {
      f.state = State::Runnable;
      released.push_back((int)i);
    }
  }
  // Lanes of a warp run in lockstep on the device: only the block's
  // threads are reordered.
  push_released(warp < 0);
}

// warp_expected is how many lanes an exchange of warp w with mask waits
// for: the live lanes of the mask.
int warp_expected(const Warp& w, unsigned mask) { return __builtin_popcount(w.live_lanes & mask); }

void Worker::arrive_block(Fiber* f) {
  f->state = State::WaitBlock;
  if (++block_arrived == live) {
    block_arrived = 0;
    release_waiters(State::WaitBlock, -1);
  }
}

void Worker::arrive_warp(Fiber* f) {
  Warp& w = warps[f->info.warp];
  f->state = State::WaitWarp;
  w.slot[f->phase][f->info.lane] = f->value;
  w.wrote[f->phase] |= 1u << f->info.lane;
  if (f->pred) w.ballot[f->phase] |= 1u << f->info.lane;
  if (++w.arrived >= warp_expected(w, f->mask)) {
    w.arrived = 0;
    // Every lane has read the other buffer's exchange by now.
    w.ballot[f->phase ^ 1] = 0;
    w.wrote[f->phase ^ 1] = 0;
    release_waiters(State::WaitWarp, (int)f->info.warp);
  }
}

// finish retires a fiber that returned from the kernel and lets barriers
// that waited only for it go.
void Worker::finish(Fiber* f) {
  free_stacks.push_back(f->stack);
  f->stack = nullptr;
  --live;
  Warp& w = warps[f->info.warp];
  --w.live;
  w.live_lanes &= ~(1u << f->info.lane);
  if (live > 0 && block_arrived > 0 && block_arrived == live) {
    block_arrived = 0;
    release_waiters(State::WaitBlock, -1);
  }
  if (w.arrived > 0) {
    unsigned mask = 0, phase = 0;
    size_t lo = (size_t)f->info.warp * 32, hi = std::min(fibers.size(), lo + 32);
    for (size_t i = lo; i < hi; ++i)
      if (fibers[i].state == State::WaitWarp) mask = fibers[i].mask, phase = fibers[i].phase;
    if (w.arrived >= warp_expected(w, mask)) {
      w.arrived = 0;
      w.ballot[phase ^ 1] = 0;
      w.wrote[phase ^ 1] = 0;
      release_waiters(State::WaitWarp, (int)f->info.warp);
    }
  }
}

// init_stack prepares a new fiber's stack so that emu_switch "returns"
// into emu_fiber_entry with the alignment of a called function.
void* init_stack(Stack* s) {
  uintptr_t top = reinterpret_cast<uintptr_t>(s->top()) & ~uintptr_t(15);
  uint64_t* p = reinterpret_cast<uint64_t*>(top);
  *--p = 0;                                                   // emu_fiber_entry's return address
  *--p = reinterpret_cast<uint64_t>(&emu_fiber_entry);        // emu_switch's ret target
  for (int i = 0; i < 6; ++i) *--p = 0;                       // rbp rbx r12 r13 r14 r15
  *--p = (uint64_t)0x037f << 32 | 0x1f80;                     // MXCSR, x87 control word
  return p;
}

// reclaim_abandoned takes back the stacks of fibers a fault or a
// deadlock left in the middle of their frames. Under AddressSanitizer
// those frames' redzones are still poisoned: clear them, or the stack's
// next fiber would be reported for touching them.
void Worker::reclaim_abandoned() {
  for (Fiber& f : fibers)
    if (f.stack) {
#if EMU_ASAN
      ASAN_UNPOISON_MEMORY_REGION(f.stack->bottom(), f.stack->usable());
#endif
      free_stacks.push_back(f.stack);
      f.stack = nullptr;
    }
}

int Worker::run_block(uint64_t index, uint64_t seed) {
  const Launch& l = *launch;
  unsigned bx = l.block[0], by = l.block[1], bz = l.block[2];
  int n = (int)(bx * by * bz);
  block.blockIdx = {(unsigned)(index % l.grid[0]), (unsigned)(index / l.grid[0] % l.grid[1]),
                    (unsigned)(index / l.grid[0] / l.grid[1])};
  block.blockDim = {bx, by, bz};
  block.gridDim = {l.grid[0], l.grid[1], l.grid[2]};
  if (dyn.size() < l.shared) dyn.resize(l.shared);
  // Shared memory starts as NaN bytes, so a read before any write shows.
  if (l.shared) std::memset(dyn.data(), 0xff, l.shared);
  block.dynamic_shared = l.shared ? dyn.data() : nullptr;
  fibers.assign(n, Fiber{});
  int nwarps = (n + 31) / 32;
  warps.assign(nwarps, Warp{});
  for (int i = 0; i < n; ++i) {
    Fiber& f = fibers[i];
    f.info.threadIdx = {(unsigned)i % bx, (unsigned)i / bx % by, (unsigned)i / bx / by};
    f.info.block = &block;
    f.info.lane = (unsigned)i % 32;
    f.info.warp = (unsigned)i / 32;
    f.state = State::New;
    warps[i / 32].live++;
    warps[i / 32].live_lanes |= 1u << (i % 32);
  }
  live = n;
  block_arrived = 0;
  rng = seed;
  queue.clear();
  head = 0;
  for (int i = 0; i < n; ++i) released.push_back(i);
  push_released(true);

  if (sigsetjmp(jump, 1) != 0) {
    // A fault (signal or __emu_fault) ended the block: reclaim the stacks.
    in_kernel = false;
    reclaim_abandoned();
    __emu_cur = nullptr;
    return fault_code;
  }
  in_kernel = true;
  while (head < queue.size()) {
    Fiber* f = &fibers[queue[head++]];
    if (f->state == State::New) {
      f->stack = acquire_stack();
      f->sp = init_stack(f->stack);
    }
    f->state = State::Runnable;
    switch_to_fiber(this, f);
    if (f->state == State::Done) finish(f);
  }
  in_kernel = false;
  __emu_cur = nullptr;
  if (live > 0) {
    int block_waiting = 0, warp_waiting = 0;
    for (Fiber& f : fibers) {
      block_waiting += f.state == State::WaitBlock;
      warp_waiting += f.state == State::WaitWarp;
    }
    reclaim_abandoned();
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "%s: block (%u,%u,%u) deadlocked: %d threads wait at __syncthreads and %d in warp exchanges that "
                  "the other threads never reach",
                  l.name, block.blockIdx.x, block.blockIdx.y, block.blockIdx.z, block_waiting, warp_waiting);
    fault_what = msg;
    return kLaunchFailed;
  }
  return kSuccess;
}

// The worker pool.
struct Pool {
  std::mutex mu;
  std::condition_variable wake, done;
  std::vector<std::thread> threads;
  const Launch* job = nullptr;
  uint64_t generation = 0, seed = 0;
  uint64_t blocks = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<int> fault{0};
  std::string fault_what;
  int running = 0;
};

Pool* pool = nullptr;
std::once_flag pool_once;
struct sigaction prev_segv, prev_bus;

void on_fault(int sig, siginfo_t* si, void* uc) {
  Worker* w = t_worker;
  if (w && w->in_kernel) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "%s: %s at address %p", w->launch ? w->launch->name : "kernel",
                  sig == SIGBUS ? "bus error" : "illegal memory access", si->si_addr);
    w->fault_code = kIllegalAddress;
    w->fault_what = msg;
    siglongjmp(w->jump, 1);
  }
  struct sigaction& p = sig == SIGSEGV ? prev_segv : prev_bus;
  if (p.sa_flags & SA_SIGINFO) {
    p.sa_sigaction(sig, si, uc);
  } else if (p.sa_handler == SIG_DFL || p.sa_handler == SIG_IGN) {
    signal(sig, SIG_DFL);
    raise(sig);
  } else {
    p.sa_handler(sig);
  }
}

// install_fault_handlers catches SIGSEGV and SIGBUS of kernel code on the
// workers and passes every other one to the handler before it (the Go
// runtime's). Under AddressSanitizer its own report is more useful.
void install_fault_handlers() {
  if (EMU_ASAN) return;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigfillset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &prev_segv);
  sigaction(SIGBUS, &sa, &prev_bus);
}

void worker_main(Pool* p) {
  // Only the faults of its own kernels reach a worker: every asynchronous
  // signal goes to the process's other threads.
  sigset_t all;
  sigfillset(&all);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigdelset(&all, s);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
  stack_t ss;
  ss.ss_sp = std::malloc(1 << 16);
  ss.ss_size = 1 << 16;
  ss.ss_flags = 0;
  sigaltstack(&ss, nullptr);
  Worker w;
  w.order = schedule();
  t_worker = &w;
  uint64_t seen = 0;
  for (;;) {
    const Launch* job;
    uint64_t blocks, seed;
    {
      std::unique_lock<std::mutex> lk(p->mu);
      p->wake.wait(lk, [&] { return p->generation != seen; });
      seen = p->generation;
      job = p->job;
      blocks = p->blocks;
      seed = p->seed;
    }
    w.launch = job;
    for (uint64_t b; p->fault.load() == 0 && (b = p->next.fetch_add(1)) < blocks;) {
      uint64_t s = seed ^ (b * 0x2545f4914f6cdd1dull);
      int code = w.run_block(b, s);
      if (code != kSuccess) {
        std::lock_guard<std::mutex> lk(p->mu);
        if (p->fault.load() == 0) {
          p->fault_what = w.fault_what;
          p->fault.store(code);
        }
      }
    }
    std::lock_guard<std::mutex> lk(p->mu);
    if (--p->running == 0) p->done.notify_all();
  }
}

Pool* get_pool() {
  std::call_once(pool_once, [] {
    install_fault_handlers();
    pool = new Pool;
    int n = worker_threads();
    for (int i = 0; i < n; ++i) pool->threads.emplace_back(worker_main, pool);
    for (auto& t : pool->threads) t.detach();
  });
  return pool;
}

uint64_t base_seed() {
  const char* s = std::getenv("VITBENCH_CUDA_EMU_SEED");
  return s ? std::strtoull(s, nullptr, 0) : 1;
}

}  // namespace

Schedule schedule() {
  const char* s = std::getenv("VITBENCH_CUDA_EMU_SCHEDULE");
  if (s && std::strcmp(s, "inorder") == 0) return Schedule::InOrder;
  if (s && std::strcmp(s, "reverse") == 0) return Schedule::Reverse;
  return Schedule::Random;
}

int run_grid(const Launch& l, std::string* what) {
  static std::atomic<uint64_t> launches{0};
  static const uint64_t seed0 = base_seed();
  Pool* p = get_pool();
  std::unique_lock<std::mutex> lk(p->mu);
  p->job = &l;
  p->blocks = (uint64_t)l.grid[0] * l.grid[1] * l.grid[2];
  p->seed = seed0 * 0x9e3779b97f4a7c15ull + launches.fetch_add(1);
  p->next.store(0);
  p->fault.store(0);
  p->fault_what.clear();
  p->running = (int)p->threads.size();
  p->generation++;
  p->wake.notify_all();
  p->done.wait(lk, [&] { return p->running == 0; });
  p->job = nullptr;
  int code = p->fault.load();
  if (code != kSuccess && what) *what = p->fault_what;
  return code;
}

}  // namespace emu

using emu::Fiber;
using emu::State;
using emu::t_worker;

extern "C" {

// emu_fiber_entry is where a new fiber starts: it runs the kernel body as
// the fiber's thread, then retires it.
void emu_fiber_entry() {
  emu::Worker* w = t_worker;
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &w->sched_bottom, &w->sched_size);
#endif
  w->launch->entry(w->launch->params);
  Fiber* f = w->current;
  f->state = State::Done;
  w->yield(f);
  std::abort();  // a finished fiber is never resumed
}

__attribute__((visibility("default"))) void __emu_syncthreads(void) {
  emu::Worker* w = t_worker;
  Fiber* f = w->current;
  w->arrive_block(f);
  w->yield(f);
}

__attribute__((visibility("default"))) uint64_t __emu_warp_exchange(unsigned mask, uint64_t v, int src) {
  emu::Worker* w = t_worker;
  Fiber* f = w->current;
  unsigned warp = f->info.warp, phase = f->phase;
  f->mask = mask;
  f->value = v;
  f->pred = 0;
  w->arrive_warp(f);
  w->yield(f);
  f->phase ^= 1;
  emu::Warp& wp = w->warps[warp];
  // A lane that did not take part (finished, or outside the block) lends
  // the caller its own value.
  if (src >= 0 && src < 32 && (wp.wrote[phase] & (1u << src))) return wp.slot[phase][src];
  return v;
}

__attribute__((visibility("default"))) unsigned __emu_warp_ballot(unsigned mask, int pred) {
  emu::Worker* w = t_worker;
  Fiber* f = w->current;
  unsigned warp = f->info.warp, phase = f->phase;
  f->mask = mask;
  f->value = 0;
  f->pred = pred != 0;
  w->arrive_warp(f);
  w->yield(f);
  f->phase ^= 1;
  return w->warps[warp].ballot[phase] & mask;
}

__attribute__((visibility("default"))) void __emu_fault(int code, const char* what, const void* addr) {
  emu::Worker* w = t_worker;
  char msg[200];
  std::snprintf(msg, sizeof msg, "%s: %s at address %p", w && w->launch ? w->launch->name : "kernel", what, addr);
  if (!w || !w->in_kernel) {
    std::fprintf(stderr, "cuda-emu: %s outside a kernel\n", msg);
    std::abort();
  }
  w->fault_code = code;
  w->fault_what = msg;
  siglongjmp(w->jump, 1);
}
}
