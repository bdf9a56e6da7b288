// driver.cc is the emulator's CUDA driver API: the subset vitbench's Go
// backend binds (impl/cuda/driver.go), on host memory. One emulated device
// ("vitbench CUDA emulator"), one primary context, streams and events that
// order nothing (every call completes before it returns), modules that are
// host shared libraries built by the emulator's NVRTC (nvrtc.cc), and
// kernel launches run by the scheduler (scheduler.cc).
//
// Device memory: each allocation is its own mapping with an inaccessible
// page after it, the buffer placed so that it ends on that page when its
// size is a multiple of 256 bytes (the alignment cuMemAlloc guarantees is
// kept); the few bytes between a smaller buffer's end and the page hold a
// canary that every launch checks afterwards. A kernel that reads or writes
// past a buffer faults (CUDA_ERROR_ILLEGAL_ADDRESS), as on the device,
// instead of corrupting its neighbour. Under AddressSanitizer allocations
// come from malloc instead, whose redzones catch the same accesses.
//
// A fault is sticky, as on the device: every later call on the context
// returns it, until the primary context is released.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emu.h"
#include "grid.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace emu {
namespace {

constexpr size_t kPage = 4096;
constexpr unsigned char kCanary = 0xa5;

struct Alloc {
  uint64_t size;
  char* map;  // the mapping (nullptr: malloc'd)
  size_t map_size;
  size_t slack;  // canary bytes after the buffer
};

// Module is a loaded kernel library.
struct Module {
  void* handle;
  int fd;
  std::string path;
};

// Function is one kernel of a module.
struct Function {
  Entry entry;
  std::string name;
  int max_dynamic_shared;
  bool traced;  // its first launch was written to the trace
};

// trace_launch appends name to the file VITBENCH_CUDA_EMU_TRACE names (one
// line per kernel, at its first launch in each module), so that a run can
// show which kernels its cases reached.
void trace_launch(Function* f) {
  if (f->traced) return;
  f->traced = true;
  const char* path = std::getenv("VITBENCH_CUDA_EMU_TRACE");
  if (!path || !*path) return;
  if (FILE* t = std::fopen(path, "a")) {
    std::fprintf(t, "%s\n", f->name.c_str());
    std::fclose(t);
  }
}

struct Event {
  std::chrono::steady_clock::time_point t;
  bool recorded;
};

std::mutex mu;
std::map<uint64_t, Alloc> allocs;  // by buffer address
uint64_t in_use = 0;
int sticky_code = kSuccess;
std::string sticky_what;
int ctx_refs = 0;
bool initialized = false;
char ctx_token, stream_token;

uint64_t device_bytes() {
  const char* s = std::getenv("VITBENCH_CUDA_EMU_MEM_MIB");
  uint64_t mib = s ? std::strtoull(s, nullptr, 10) : 8192;
  return mib << 20;
}

// find returns the allocation holding [p, p+bytes), or nullptr.
const Alloc* find(uint64_t p, uint64_t bytes) {
  auto it = allocs.upper_bound(p);
  if (it == allocs.begin()) return nullptr;
  --it;
  if (p < it->first || p - it->first > it->second.size || bytes > it->second.size - (p - it->first)) return nullptr;
  return &it->second;
}

// canaries_intact reports the first allocation whose canary bytes a
// kernel overwrote, or returns true.
bool canaries_intact(std::string* what) {
  for (auto& [base, a] : allocs) {
    const unsigned char* c = reinterpret_cast<const unsigned char*>(base + a.size);
    for (size_t i = 0; i < a.slack; ++i) {
      if (c[i] != kCanary) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "write past the end of the %llu-byte allocation at 0x%llx (byte %zu after it)",
                      (unsigned long long)a.size, (unsigned long long)base, i);
        *what = msg;
        return false;
      }
    }
  }
  return true;
}

struct ErrorText {
  int code;
  const char* name;
  const char* text;
};
const ErrorText kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kInvalidSource, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {kLaunchOutOfResources, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {kMisalignedAddress, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {kLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {kUnknown, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

// Device properties of the emulated part (CUdevice_attribute numbers).
int attribute(int attr) {
  switch (attr) {
    case 1: return 1024;         // MAX_THREADS_PER_BLOCK
    case 2: return 1024;         // MAX_BLOCK_DIM_X
    case 3: return 1024;         // MAX_BLOCK_DIM_Y
    case 4: return 64;           // MAX_BLOCK_DIM_Z
    case 5: return 2147483647;   // MAX_GRID_DIM_X
    case 6: return 65535;        // MAX_GRID_DIM_Y
    case 7: return 65535;        // MAX_GRID_DIM_Z
    case 8: return 48 << 10;     // MAX_SHARED_MEMORY_PER_BLOCK
    case 10: return 32;          // WARP_SIZE
    case 12: return 65536;       // MAX_REGISTERS_PER_BLOCK
    case 16: return 8;           // MULTIPROCESSOR_COUNT
    case 38: return 4 << 20;     // L2_CACHE_SIZE
    case 39: return 2048;        // MAX_THREADS_PER_MULTIPROCESSOR
    case 75: return 9;           // COMPUTE_CAPABILITY_MAJOR
    case 76: return 0;           // COMPUTE_CAPABILITY_MINOR
    case 97: return 227 << 10;   // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    default: return 0;
  }
}

// fail_after_launch turns a launch's fault into the sticky error.
int fail_after_launch(int code, const std::string& what) {
  set_sticky(code, what.c_str());
  return code;
}

}  // namespace

int sticky() {
  std::lock_guard<std::mutex> lk(mu);
  return sticky_code;
}

void set_sticky(int code, const char* what) {
  std::lock_guard<std::mutex> lk(mu);
  if (sticky_code == kSuccess) {
    sticky_code = code;
    sticky_what = what;
    std::fprintf(stderr, "cuda-emu: %s\n", what);
  }
}

bool range_ok(uint64_t p, uint64_t bytes) {
  std::lock_guard<std::mutex> lk(mu);
  return find(p, bytes) != nullptr;
}

int worker_threads() {
  const char* s = std::getenv("VITBENCH_CUDA_EMU_THREADS");
  int n = s ? std::atoi(s) : (int)std::thread::hardware_concurrency();
  return n < 1 ? 1 : (n > 64 ? 64 : n);
}

}  // namespace emu

using namespace emu;

namespace {
// ready is the state check at the start of every context call: cuInit
// done, a context retained, no sticky fault.
int ready() {
  std::lock_guard<std::mutex> lk(mu);
  if (!initialized) return kNotInitialized;
  if (ctx_refs == 0) return kInvalidContext;
  return sticky_code;
}
}  // namespace

EXPORT int cuInit(unsigned flags) {
  if (flags != 0) return kInvalidValue;
  std::lock_guard<std::mutex> lk(mu);
  initialized = true;
  return kSuccess;
}

EXPORT int cuDriverGetVersion(int* v) {
  if (!v) return kInvalidValue;
  *v = 12040;  // the driver API level emulated: CUDA 12.4
  return kSuccess;
}

EXPORT int cuDeviceGetCount(int* n) {
  if (!n) return kInvalidValue;
  if (!initialized) return kNotInitialized;
  *n = 1;
  return kSuccess;
}

EXPORT int cuDeviceGet(int* dev, int ordinal) {
  if (!dev) return kInvalidValue;
  if (!initialized) return kNotInitialized;
  if (ordinal != 0) return kInvalidValue;
  *dev = 0;
  return kSuccess;
}

EXPORT int cuDeviceGetName(char* name, int len, int dev) {
  if (!name || len <= 0 || dev != 0) return kInvalidValue;
  std::snprintf(name, (size_t)len, "vitbench CUDA emulator (host, %d threads)", worker_threads());
  return kSuccess;
}

EXPORT int cuDeviceGetAttribute(int* v, int attr, int dev) {
  if (!v || dev != 0) return kInvalidValue;
  *v = attribute(attr);
  return kSuccess;
}

EXPORT int cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  if (!bytes || dev != 0) return kInvalidValue;
  *bytes = device_bytes();
  return kSuccess;
}

EXPORT int cuDevicePrimaryCtxRetain(void** ctx, int dev) {
  if (!ctx || dev != 0) return kInvalidValue;
  std::lock_guard<std::mutex> lk(mu);
  if (!initialized) return kNotInitialized;
  ctx_refs++;
  *ctx = &ctx_token;
  return kSuccess;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int dev) {
  if (dev != 0) return kInvalidValue;
  std::lock_guard<std::mutex> lk(mu);
  if (ctx_refs == 0) return kInvalidContext;
  if (--ctx_refs == 0) {
    // The context is gone, and its fault with it.
    sticky_code = kSuccess;
    sticky_what.clear();
  }
  return kSuccess;
}

EXPORT int cuCtxSetCurrent(void* ctx) {
  if (ctx && ctx != &ctx_token) return kInvalidContext;
  return kSuccess;
}

EXPORT int cuCtxSynchronize() { return ready(); }

EXPORT int cuMemAlloc_v2(uint64_t* p, size_t bytes) {
  if (!p || bytes == 0) return kInvalidValue;
  if (int r = ready()) return r;
  std::lock_guard<std::mutex> lk(mu);
  if (bytes > device_bytes() - in_use) return kOutOfMemory;
  uint64_t rounded = (bytes + 255) / 256 * 256;
  Alloc a{bytes, nullptr, 0, 0};
  uint64_t base;
  if (EMU_ASAN) {
    void* m = std::aligned_alloc(256, rounded);
    if (!m) return kOutOfMemory;
    base = reinterpret_cast<uint64_t>(m);
  } else {
    size_t data = (rounded + kPage - 1) / kPage * kPage;
    size_t size = data + kPage;
    void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return kOutOfMemory;
    char* c = static_cast<char*>(m);
    mprotect(c + data, kPage, PROT_NONE);
    a.map = c;
    a.map_size = size;
    base = reinterpret_cast<uint64_t>(c + data - rounded);
    a.slack = rounded - bytes;
    std::memset(reinterpret_cast<void*>(base + bytes), kCanary, a.slack);
  }
  allocs[base] = a;
  in_use += bytes;
  *p = base;
  return kSuccess;
}

EXPORT int cuMemFree_v2(uint64_t p) {
  std::lock_guard<std::mutex> lk(mu);
  auto it = allocs.find(p);
  if (it == allocs.end()) return kInvalidValue;
  Alloc a = it->second;
  allocs.erase(it);
  in_use -= a.size;
  if (a.map) {
    munmap(a.map, a.map_size);
  } else {
    std::free(reinterpret_cast<void*>(p));
  }
  return kSuccess;
}

EXPORT int cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  if (int r = ready()) return r;
  std::lock_guard<std::mutex> lk(mu);
  if (total) *total = device_bytes();
  if (free_bytes) *free_bytes = device_bytes() - in_use;
  return kSuccess;
}

namespace {
// copy_checked copies bytes after checking that the device side is inside
// one allocation (the driver refuses the copy otherwise).
int copy_checked(void* dst, const void* src, size_t bytes, uint64_t dev1, uint64_t dev2) {
  if (int r = ready()) return r;
  if (bytes == 0) return kSuccess;
  {
    std::lock_guard<std::mutex> lk(mu);
    if ((dev1 && !find(dev1, bytes)) || (dev2 && !find(dev2, bytes))) return kInvalidValue;
  }
  std::memmove(dst, src, bytes);
  return kSuccess;
}
}  // namespace

EXPORT int cuMemcpyHtoD_v2(uint64_t dst, const void* src, size_t bytes) {
  return copy_checked(reinterpret_cast<void*>(dst), src, bytes, dst, 0);
}

EXPORT int cuMemcpyDtoH_v2(void* dst, uint64_t src, size_t bytes) {
  return copy_checked(dst, reinterpret_cast<const void*>(src), bytes, src, 0);
}

EXPORT int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, void*) {
  return copy_checked(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes, dst, src);
}

EXPORT int cuMemsetD8Async(uint64_t dst, unsigned char v, size_t n, void*) {
  if (int r = ready()) return r;
  if (n == 0) return kSuccess;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (!find(dst, n)) return kInvalidValue;
  }
  std::memset(reinterpret_cast<void*>(dst), v, n);
  return kSuccess;
}

EXPORT int cuMemsetD32Async(uint64_t dst, unsigned v, size_t n, void*) {
  if (int r = ready()) return r;
  if (n == 0) return kSuccess;
  if (dst % 4) return kInvalidValue;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (!find(dst, n * 4)) return kInvalidValue;
  }
  unsigned* p = reinterpret_cast<unsigned*>(dst);
  if (v == 0) {
    std::memset(p, 0, n * 4);
  } else {
    for (size_t i = 0; i < n; ++i) p[i] = v;
  }
  return kSuccess;
}

// The module image nvrtc.cc produces: this header, then the bytes of a
// host shared library.
struct ModuleHeader {
  char magic[16];  // "vitbench-cuemu1"
  uint64_t size;
};

EXPORT int cuModuleLoadData(void** mod, const void* image) {
  if (!mod || !image) return kInvalidValue;
  if (int r = ready()) return r;
  ModuleHeader h;
  std::memcpy(&h, image, sizeof h);
  if (std::memcmp(h.magic, "vitbench-cuemu1", 16) != 0 || h.size == 0) return kInvalidImage;
  int fd = memfd_create("vitbench-cuemu-module", MFD_CLOEXEC);
  if (fd < 0) return kUnknown;
  const char* bytes = static_cast<const char*>(image) + sizeof h;
  for (uint64_t off = 0; off < h.size;) {
    ssize_t n = write(fd, bytes + off, h.size - off);
    if (n <= 0) {
      close(fd);
      return kUnknown;
    }
    off += (uint64_t)n;
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "cuda-emu: cuModuleLoadData: %s\n", dlerror());
    close(fd);
    return kInvalidImage;
  }
  *mod = new Module{handle, fd, path};
  return kSuccess;
}

EXPORT int cuModuleGetFunction(void** fn, void* mod, const char* name) {
  if (!fn || !mod || !name) return kInvalidValue;
  Module* m = static_cast<Module*>(mod);
  std::string sym = std::string("__emu_entry_") + name;
  void* e = dlsym(m->handle, sym.c_str());
  if (!e) return kNotFound;
  *fn = new Function{reinterpret_cast<Entry>(e), name, 48 << 10, false};
  return kSuccess;
}

EXPORT int cuModuleUnload(void* mod) {
  if (!mod) return kInvalidHandle;
  Module* m = static_cast<Module*>(mod);
  dlclose(m->handle);
  close(m->fd);
  delete m;
  return kSuccess;
}

EXPORT int cuFuncSetAttribute(void* fn, int attr, int v) {
  if (!fn) return kInvalidHandle;
  Function* f = static_cast<Function*>(fn);
  if (attr == 8) {  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    if (v < 0 || v > attribute(97)) return kInvalidValue;
    f->max_dynamic_shared = v;
  }
  return kSuccess;
}

EXPORT int cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, void*, void** params, void** extra) {
  if (!fn) return kInvalidHandle;
  if (int r = ready()) return r;
  Function* f = static_cast<Function*>(fn);
  if (extra) return kInvalidValue;
  if (gx == 0 || gy == 0 || gz == 0 || gy > 65535 || gz > 65535 || gx > 2147483647u) return kInvalidValue;
  if (bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024)
    return kInvalidValue;
  if ((int)shared > f->max_dynamic_shared) return kInvalidValue;
  trace_launch(f);
  Launch l{f->entry, f->name.c_str(), {gx, gy, gz}, {bx, by, bz}, shared, params};
  std::string what;
  int code = run_grid(l, &what);
  if (code != kSuccess) return fail_after_launch(code, what);
  std::lock_guard<std::mutex> lk(mu);
  if (!canaries_intact(&what)) {
    what = f->name + ": " + what;
    sticky_code = kIllegalAddress;
    sticky_what = what;
    std::fprintf(stderr, "cuda-emu: %s\n", what.c_str());
  }
  // The fault would surface at the next synchronization on a device; the
  // launch itself succeeded.
  return kSuccess;
}

EXPORT int cuStreamCreate(void** s, unsigned) {
  if (!s) return kInvalidValue;
  if (int r = ready()) return r;
  *s = &stream_token;
  return kSuccess;
}

EXPORT int cuStreamSynchronize(void*) { return ready(); }
EXPORT int cuStreamDestroy_v2(void*) { return kSuccess; }

EXPORT int cuEventCreate(void** ev, unsigned) {
  if (!ev) return kInvalidValue;
  if (int r = ready()) return r;
  *ev = new Event{{}, false};
  return kSuccess;
}

EXPORT int cuEventRecord(void* ev, void*) {
  if (!ev) return kInvalidHandle;
  if (int r = ready()) return r;
  Event* e = static_cast<Event*>(ev);
  e->t = std::chrono::steady_clock::now();
  e->recorded = true;
  return kSuccess;
}

EXPORT int cuEventSynchronize(void* ev) {
  if (!ev) return kInvalidHandle;
  return ready();
}

EXPORT int cuEventElapsedTime(float* ms, void* a, void* b) {
  if (!ms || !a || !b) return kInvalidValue;
  if (int r = ready()) return r;
  Event* s = static_cast<Event*>(a);
  Event* e = static_cast<Event*>(b);
  if (!s->recorded || !e->recorded) return kInvalidHandle;
  *ms = std::chrono::duration<float, std::milli>(e->t - s->t).count();
  return kSuccess;
}

EXPORT int cuEventDestroy_v2(void* ev) {
  delete static_cast<Event*>(ev);
  return kSuccess;
}

EXPORT int cuGetErrorName(int code, const char** s) {
  if (!s) return kInvalidValue;
  for (const ErrorText& e : kErrors)
    if (e.code == code) {
      *s = e.name;
      return kSuccess;
    }
  *s = nullptr;
  return kInvalidValue;
}

EXPORT int cuGetErrorString(int code, const char** s) {
  if (!s) return kInvalidValue;
  for (const ErrorText& e : kErrors)
    if (e.code == code) {
      *s = e.text;
      return kSuccess;
    }
  *s = nullptr;
  return kInvalidValue;
}

// vitbench_cuemu_last_fault returns the description of the sticky fault
// ("" when there is none), for the emulator's log and tests.
EXPORT const char* vitbench_cuemu_last_fault() {
  std::lock_guard<std::mutex> lk(mu);
  return sticky_what.c_str();
}
