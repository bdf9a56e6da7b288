// scheduler_test.cc tests the emulator's kernel launcher on its own: warp
// exchanges in lockstep (every shuffle kind, widths, partial warps, lanes
// that exit early), votes, block barriers, dynamic shared memory, atomics
// across blocks on several workers, the random schedule, and the faults a
// launch ends with (deadlock, illegal address, misaligned vector load).
// The kernels are written here as the emulator's NVRTC would pass them.
// Built and run by ci/test.sh:
//
//   g++ -std=c++17 -O1 -g -pthread -DSCHEDULER_EMU_TEST scheduler_test.cc scheduler.cc -o /tmp/st && /tmp/st
//
// (add -fsanitize=address,undefined for the sanitizer run). Without
// SCHEDULER_EMU_TEST the file compiles to nothing, so a build of every .cc
// in the folder is unaffected.
#ifdef SCHEDULER_EMU_TEST
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "grid.h"
#include "kernel.h"

namespace emu {
int worker_threads() { return 2; }
}  // namespace emu

namespace {

int failures = 0;

#define EXPECT(cond, ...)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__);     \
      std::printf(__VA_ARGS__);                            \
      std::printf("\n");                                   \
      failures++;                                          \
    }                                                      \
  } while (0)

template <typename... A>
int launch(void (*entry)(void**), unsigned gx, unsigned bx, unsigned shared, std::string* what, A*... args) {
  void* p[] = {static_cast<void*>(args)..., nullptr};
  emu::Launch l{entry, "test", {gx, 1, 1}, {bx, 1, 1}, shared, p};
  return emu::run_grid(l, what);
}

// Shuffles: out[t·8 + j] for thread t = the j-th exchange's result.
extern "C" void k_shuffles(int* out) {
  int t = threadIdx.x, lane = t & 31;
  int* o = out + t * 8;
  o[0] = __shfl_xor_sync(0xffffffffu, 100 + t, 5);
  o[1] = __shfl_down_sync(0xffffffffu, 200 + t, 3);
  o[2] = __shfl_up_sync(0xffffffffu, 300 + t, 2);
  o[3] = __shfl_sync(0xffffffffu, 400 + t, 7);
  o[4] = __shfl_xor_sync(0xffffffffu, 500 + t, 4, 8);
  o[5] = __shfl_down_sync(0xffffffffu, 600 + t, 1, 16);
  o[6] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
  o[7] = __any_sync(0xffffffffu, lane == 9) + 2 * __all_sync(0xffffffffu, lane < 40);
}
extern "C" void e_shuffles(void** p) { __emu_call(k_shuffles, p); }

void test_shuffles() {
  const int n = 48;  // a full warp and a half one
  std::vector<int> out(n * 8, -1);
  int* o = out.data();
  std::string what;
  EXPECT(launch(e_shuffles, 1, n, 0, &what, &o) == 0, "shuffles: %s", what.c_str());
  for (int t = 0; t < n; ++t) {
    int lane = t & 31, base = t - lane, live = t < 32 ? 32 : n - 32;
    auto in = [&](int l) { return l >= 0 && l < live; };
    int x = lane ^ 5;
    EXPECT(out[t * 8 + 0] == (in(x) ? 100 + base + x : 100 + t), "xor t=%d got %d", t, out[t * 8 + 0]);
    int d = lane + 3;
    EXPECT(out[t * 8 + 1] == (d < 32 && in(d) ? 200 + base + d : 200 + t), "down t=%d got %d", t, out[t * 8 + 1]);
    int u = lane - 2;
    EXPECT(out[t * 8 + 2] == (u >= 0 ? 300 + base + u : 300 + t), "up t=%d got %d", t, out[t * 8 + 2]);
    EXPECT(out[t * 8 + 3] == 400 + base + 7, "idx t=%d got %d", t, out[t * 8 + 3]);
    int w = lane ^ 4;  // stays inside the 8-lane segment
    EXPECT(out[t * 8 + 4] == (in(w) ? 500 + base + w : 500 + t), "xor width 8 t=%d got %d", t, out[t * 8 + 4]);
    int s = lane + 1;
    bool same = (s & ~15) == (lane & ~15);
    EXPECT(out[t * 8 + 5] == (same && in(s) ? 600 + base + s : 600 + t), "down width 16 t=%d got %d", t,
           out[t * 8 + 5]);
    unsigned want = 0;
    for (int l = 0; l < live; ++l)
      if (l % 3 == 0) want |= 1u << l;
    EXPECT((unsigned)out[t * 8 + 6] == want, "ballot t=%d got %x want %x", t, out[t * 8 + 6], want);
    int any = live > 9, all = 1;
    EXPECT(out[t * 8 + 7] == any + 2 * all, "any/all t=%d got %d", t, out[t * 8 + 7]);
  }
}

// Lanes that exit early: the exchange after it still gives the others the
// values their partners published before exiting.
extern "C" void k_early_exit(int* out) {
  int lane = threadIdx.x;
  int r = __shfl_xor_sync(0xffffffffu, lane, 1);
  if (lane % 2 == 0) {
    out[lane] = r;
    return;
  }
  out[lane] = r + 1000 * __shfl_xor_sync(0xffffffffu, lane, 2);
}
extern "C" void e_early_exit(void** p) { __emu_call(k_early_exit, p); }

void test_early_exit() {
  std::vector<int> out(32, -1);
  int* o = out.data();
  std::string what;
  EXPECT(launch(e_early_exit, 1, 32, 0, &what, &o) == 0, "early exit: %s", what.c_str());
  for (int l = 0; l < 32; ++l) {
    int want = l % 2 == 0 ? (l ^ 1) : (l ^ 1) + 1000 * (l ^ 2);
    EXPECT(out[l] == want, "lane %d got %d want %d", l, out[l], want);
  }
}

// Block reduction through static shared memory and two barriers; the sum
// of 0..n-1 in every thread, over several blocks on two workers.
extern "C" void k_block_sum(float* out) {
  __shared__ float part[32];
  float v = (float)threadIdx.x;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  int warps = blockDim.x >> 5;
  v = lane < warps ? part[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
extern "C" void e_block_sum(void** p) { __emu_call(k_block_sum, p); }

void test_block_sum() {
  const unsigned blocks = 9, threads = 256;
  std::vector<float> out(blocks * threads, -1);
  float* o = out.data();
  std::string what;
  EXPECT(launch(e_block_sum, blocks, threads, 0, &what, &o) == 0, "block sum: %s", what.c_str());
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT(out[i] == threads * (threads - 1) / 2.f, "out[%zu] = %g", i, out[i]);
}

// Dynamic shared memory and a barrier: a reversal through the buffer.
extern "C" void k_reverse(const int* in, int* out) {
  int* buf = (int*)__emu_cur->block->dynamic_shared;
  int t = threadIdx.x, n = blockDim.x;
  buf[t] = in[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = buf[n - 1 - t];
}
extern "C" void e_reverse(void** p) { __emu_call(k_reverse, p); }

void test_dynamic_shared() {
  const int blocks = 5, n = 200;
  std::vector<int> in(blocks * n), out(blocks * n, -1);
  for (int i = 0; i < blocks * n; ++i) in[i] = i * 3 + 1;
  const int* pi = in.data();
  int* po = out.data();
  std::string what;
  EXPECT(launch(e_reverse, blocks, n, n * 4, &what, &pi, &po) == 0, "reverse: %s", what.c_str());
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t)
      EXPECT(out[b * n + t] == in[b * n + n - 1 - t], "out[%d][%d] = %d", b, t, out[b * n + t]);
}

// Atomics from every thread of many blocks on two workers.
extern "C" void k_atomics(unsigned long long* count, float* fsum, int* mx) {
  atomicAdd(count, 1ull);
  atomicAdd(fsum, 0.5f);
  atomicMax(mx, (int)(blockIdx.x * blockDim.x + threadIdx.x));
}
extern "C" void e_atomics(void** p) { __emu_call(k_atomics, p); }

void test_atomics() {
  unsigned long long count = 0;
  float fsum = 0;
  int mx = -1;
  unsigned long long* pc = &count;
  float* pf = &fsum;
  int* pm = &mx;
  std::string what;
  EXPECT(launch(e_atomics, 64, 128, 0, &what, &pc, &pf, &pm) == 0, "atomics: %s", what.c_str());
  EXPECT(count == 64 * 128, "count %llu", count);
  EXPECT(fsum == 64 * 128 * 0.5f, "float sum %g", fsum);
  EXPECT(mx == 64 * 128 - 1, "max %d", mx);
}

// The order threads pass a barrier in: rank[t] = how many threads of the
// block wrote before t after the barrier.
extern "C" void k_order(int* rank) {
  __shared__ int next;
  if (threadIdx.x == 0) next = 0;
  __syncthreads();
  rank[threadIdx.x] = next++;
}
extern "C" void e_order(void** p) { __emu_call(k_order, p); }

std::vector<int> order_with(const char* schedule, const char* seed) {
  // schedule() and the seed are read per worker and per process: run the
  // launch in a child so each setting starts fresh.
  std::vector<int> rank(64, -1);
  int* shared = static_cast<int*>(
      mmap(nullptr, 64 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  pid_t pid = fork();
  if (pid == 0) {
    setenv("VITBENCH_CUDA_EMU_SCHEDULE", schedule, 1);
    setenv("VITBENCH_CUDA_EMU_SEED", seed, 1);
    std::string what;
    int rc = launch(e_order, 1, 64, 0, &what, &shared);
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "order launch (%s, %s) failed", schedule, seed);
  rank.assign(shared, shared + 64);
  munmap(shared, 64 * sizeof(int));
  return rank;
}

void test_schedules() {
  std::vector<int> in = order_with("inorder", "1"), rev = order_with("reverse", "1");
  std::vector<int> r1 = order_with("random", "1"), r1b = order_with("random", "1"), r2 = order_with("random", "2");
  for (int t = 0; t < 64; ++t) {
    EXPECT(in[t] == t, "inorder: thread %d ranked %d", t, in[t]);
    EXPECT(rev[t] == 63 - t, "reverse: thread %d ranked %d", t, rev[t]);
  }
  EXPECT(r1 == r1b, "the random schedule is not reproducible for one seed");
  EXPECT(r1 != r2 && r1 != in && r1 != rev, "the random schedule does not reorder the threads");
}

// Faults: a barrier no thread can pass; an access to an unmapped page; a
// misaligned vector load. Each ends the launch with its code, and the
// next launch runs normally.
extern "C" void k_deadlock(int* out) {
  if (threadIdx.x == 0) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
  }
}
extern "C" void e_deadlock(void** p) { __emu_call(k_deadlock, p); }

extern "C" void k_touch(int* p) {
  if (threadIdx.x == 3) p[0] = 1;
}
extern "C" void e_touch(void** p) { __emu_call(k_touch, p); }

extern "C" void k_misaligned(const float* p, float* out) {
  float4 v = __ldg(reinterpret_cast<const float4*>(p + 1));
  out[threadIdx.x] = v.x;
}
extern "C" void e_misaligned(void** p) { __emu_call(k_misaligned, p); }

void test_faults() {
  std::vector<int> out(32);
  int* o = out.data();
  std::string what;
  EXPECT(launch(e_deadlock, 1, 32, 0, &what, &o) == 719 && what.find("deadlocked") != std::string::npos,
         "deadlock: %s", what.c_str());
#if !defined(__SANITIZE_ADDRESS__)  // under AddressSanitizer its report ends the process instead
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int* pp = static_cast<int*>(page);
  what.clear();
  EXPECT(launch(e_touch, 4, 32, 0, &what, &pp) == 700 && what.find("illegal memory access") != std::string::npos,
         "illegal address: %s", what.c_str());
  munmap(page, 4096);
#endif
  alignas(16) float buf[8] = {0};
  const float* pb = buf;
  float res[32];
  float* pr = res;
  what.clear();
  EXPECT(launch(e_misaligned, 1, 32, 0, &what, &pb, &pr) == 716, "misaligned: %s", what.c_str());
  test_block_sum();  // the workers recovered
}

}  // namespace

int main() {
  test_schedules();  // first: it forks, and a child has none of the parent's worker threads
  test_shuffles();
  test_early_exit();
  test_block_sum();
  test_dynamic_shared();
  test_atomics();
  test_faults();
  if (failures) {
    std::printf("scheduler_test: %d failures\n", failures);
    return 1;
  }
  std::printf("scheduler_test: PASS\n");
  return 0;
}
#endif
