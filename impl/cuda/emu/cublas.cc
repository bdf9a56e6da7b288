// cublas.cc is the cuBLAS part of vitbench's CUDA emulator,
// libvitbench-cuemu.so: the cuBLAS v2 entry points that impl/cuda/cublas.go
// binds (handles, stream, math mode, status strings, and the fp32 products
// cublasSgemm_v2, cublasSgemmStridedBatched, cublasGemmEx and
// cublasGemmStridedBatchedEx), computed on the host.
//
// Device pointers are host addresses (emu.h), every call runs to completion
// on the caller's thread, and scalars are read through host pointers
// (CUBLAS_POINTER_MODE_HOST, the only mode).
//
// Products. Every product is column-major, as in cuBLAS:
//   C = alpha·op(A)·op(B) + beta·C,  op(A) m×k, op(B) k×n, C m×n,
// with op(X) = X (CUBLAS_OP_N) or Xᵀ (CUBLAS_OP_T, and CUBLAS_OP_C, which
// is the same for real matrices). beta == 0 overwrites C without reading it
// (C may hold NaN); k == 0 or alpha == 0 leaves C = beta·C without reading
// A or B (as the reference BLAS does).
//
// Input rounding. The tensor-core modes round A's and B's elements before
// the multiply, each to nearest with ties to even:
//   handle math mode CUBLAS_TF32_TENSOR_OP_MATH (Sgemm), or
//   CUBLAS_COMPUTE_32F_FAST_TF32 (GemmEx): TF32, 10 mantissa bits;
//   CUBLAS_COMPUTE_32F_FAST_16BF: bfloat16, 7 mantissa bits;
//   CUBLAS_COMPUTE_32F_FAST_16F: IEEE half, 10 mantissa bits, exponent
//   −14..15 (half subnormals kept, |x| ≥ 65520 becomes ±inf).
// NaN stays NaN (quieted), ±inf stays ±inf. The product of two rounded
// inputs is exact in fp32 (11 × 11 significant bits); the sums are fp32.
// CUBLAS_COMPUTE_32F (GemmEx) and the default math mode (Sgemm) are
// strict fp32 inputs.
//
// Two ways to compute:
//   BLAS: the host's cblas_sgemm, from libopenblas.so.0 or else
//     libblas.so.3 (loaded once with dlopen), on the operands themselves
//     or on rounded copies of them; it orders its sums as it likes.
//     OpenBLAS is told to use emu::worker_threads() threads.
//   loop: this file's blocked loop (no BLAS library found, or
//     VITBENCH_CUDA_EMU_BLAS=loop, read at every call): each C(i,j) is
//     alpha·acc + beta·C(i,j) with acc a float summed over p = 0..k−1 in
//     order, acc += op(A)(i,p)·op(B)(p,j), columns spread over
//     emu::worker_threads() threads.
//
// Faults. Before computing, every operand's whole extent (each matrix of
// a strided batch) must lie in one live allocation (emu::range_ok); if
// one does not, the call records emu::kIllegalAddress as the context's
// sticky error, computes nothing and returns CUBLAS_STATUS_SUCCESS (a GPU
// reports the fault at the next synchronization, which the driver part
// does from emu::sticky()). With a sticky error already set, a product
// returns CUBLAS_STATUS_EXECUTION_FAILED and computes nothing.
//
// Version: cublasGetVersion_v2 reports 120000 ("12.0.0", the cuBLAS API of
// CUDA 12.0 whose entry points this file provides).

#include "emu.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#define CUBLAS_EMU_API extern "C" __attribute__((visibility("default")))

namespace {

// cublasStatus_t values (cublas_api.h).
enum : int {
  kStatusSuccess = 0,
  kStatusNotInitialized = 1,
  kStatusAllocFailed = 3,
  kStatusInvalidValue = 7,
  kStatusArchMismatch = 8,
  kStatusMappingError = 11,
  kStatusExecutionFailed = 13,
  kStatusInternalError = 14,
  kStatusNotSupported = 15,
  kStatusLicenseError = 16,
};

// cublasOperation_t, cudaDataType_t, cublasComputeType_t and cublasMath_t
// values this file reads.
enum : int {
  kOpN = 0,
  kOpT = 1,
  kOpC = 2,
  kR32F = 0,
  kCompute32F = 68,
  kCompute32FFast16F = 74,
  kCompute32FFast16BF = 75,
  kCompute32FFastTF32 = 77,
  kTF32TensorOpMath = 3,
  kMathModeMask = 0xF,  // below the flag bits (16: disallow reduced-precision reduction)
};

constexpr int kVersion = 120000;  // 12.0.0

// ---------------------------------------------------------------------------
// Rounding of the products' inputs.

enum class Round { kNone, kTF32, kBF16, kFP16 };

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// keep_mantissa returns x rounded to nearest, ties to even, to a float with
// only the top 23−drop mantissa bits (the same 8-bit exponent): the low
// drop bits are cleared after adding half an ulp of the kept part, less
// one unless the kept part is odd. A carry out of the mantissa moves to
// the next binade, and past the largest finite value to ±inf; ±inf stays
// itself; NaN stays NaN (quiet bit set, so clearing the payload's low
// bits cannot make it inf).
float keep_mantissa(float x, int drop) {
  const uint32_t u = bits_of(x);
  const uint32_t low = (uint32_t{1} << drop) - 1;
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return float_of((u | 0x00400000u) & ~low);
  const uint32_t r = u + (low >> 1) + ((u >> drop) & 1);
  return float_of(r & ~low);
}

// round_tf32 is x as a TF32 tensor-core input: 10 mantissa bits, RNE.
float round_tf32(float x) { return keep_mantissa(x, 13); }

// round_bf16 is x as a bfloat16: 7 mantissa bits, RNE.
float round_bf16(float x) { return keep_mantissa(x, 16); }

// half_bits converts x to IEEE binary16 bits, rounding to nearest with ties
// to even: NaN to a quiet NaN, |x| ≥ 65520 (the midpoint above 65504, the
// largest finite half) to ±inf, normal halves by rounding the mantissa to
// 10 bits, and |x| < 2^-14 to a subnormal half, a multiple of 2^-24
// (|x| ≤ 2^-25, the midpoint below 2^-24, to ±0; a subnormal that rounds
// up to 2^-14 becomes the smallest normal, whose bits follow on).
uint16_t half_bits(float x) {
  const uint32_t u = bits_of(x);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // ≥ 65520, or inf
  if (a >= 0x38800000u) {                                                // ≥ 2^-14: normal
    const uint32_t r = a + 0x0FFFu + ((a >> 13) & 1);
    return static_cast<uint16_t>(sign | ((r >> 13) - (112u << 10)));    // rebias 127 → 15
  }
  if (a <= 0x33000000u) return sign;  // ≤ 2^-25 (and float subnormals): ±0
  // |x| = mant·2^(e−150) with e in 102..112; in units of 2^-24 that is
  // mant / 2^(126−e).
  const uint32_t e = a >> 23;
  const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((uint32_t{1} << shift) - 1);
  const uint32_t half = uint32_t{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  return static_cast<uint16_t>(sign | q);
}

// half_value is the float equal to the binary16 bits h (every half is a
// float exactly).
float half_value(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x3FFu;
  if (e == 0x1F) return float_of(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);  // exact
    return sign ? -v : v;
  }
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

// round_fp16 is x as an IEEE half (RNE), back in a float.
float round_fp16(float x) { return half_value(half_bits(x)); }

// round_to is x rounded as r says.
inline float round_to(Round r, float x) {
  switch (r) {
    case Round::kTF32: return round_tf32(x);
    case Round::kBF16: return round_bf16(x);
    case Round::kFP16: return round_fp16(x);
    case Round::kNone: break;
  }
  return x;
}

// ---------------------------------------------------------------------------
// Handles.

constexpr uint64_t kHandleMagic = 0x63756275656d7531ull;  // "cubuemu1"

struct Handle {
  uint64_t magic = kHandleMagic;
  void* stream = nullptr;  // recorded only: calls run in the caller's order
  int math_mode = 0;
};

// handle_of is h as a live handle, or nullptr.
Handle* handle_of(void* h) {
  Handle* p = static_cast<Handle*>(h);
  return p != nullptr && p->magic == kHandleMagic ? p : nullptr;
}

// ---------------------------------------------------------------------------
// The host BLAS.

// cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc).
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                            float, float*, int);
enum : int { kCblasColMajor = 102, kCblasNoTrans = 111, kCblasTrans = 112 };

// host_sgemm is the loaded cblas_sgemm, or nullptr when neither
// libopenblas.so.0 nor libblas.so.3 has one. Loaded once; the library
// stays open.
CblasSgemm host_sgemm() {
  static const CblasSgemm fn = [] {
    // An OpenMP OpenBLAS would keep its threads spinning after each
    // product, taking the cores the kernels' workers need next: they
    // sleep instead (unless the user chose otherwise).
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    for (const char* name : {"libopenblas.so.0", "libblas.so.3"}) {
      void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) continue;
      if (void* sym = dlsym(lib, "cblas_sgemm")) {
        if (void* threads = dlsym(lib, "openblas_set_num_threads")) {
          reinterpret_cast<void (*)(int)>(threads)(std::max(1, emu::worker_threads()));
        }
        return reinterpret_cast<CblasSgemm>(sym);
      }
      dlclose(lib);
    }
    return static_cast<CblasSgemm>(nullptr);
  }();
  return fn;
}

// use_loop reports whether VITBENCH_CUDA_EMU_BLAS=loop asks for the C++ loop.
bool use_loop() {
  const char* v = std::getenv("VITBENCH_CUDA_EMU_BLAS");
  return v != nullptr && std::strcmp(v, "loop") == 0;
}

// ---------------------------------------------------------------------------
// One call's product.

struct Gemm {
  const char* call;
  bool ta, tb;                // op(A) = Aᵀ, op(B) = Bᵀ
  int64_t m, n, k;
  float alpha, beta;
  uint64_t a, b, c;           // addresses of the first matrices
  int64_t lda, ldb, ldc;
  int64_t sa, sb, sc;         // elements from one matrix of a batch to the next
  int64_t batch;
  Round round;

  // The stored (not transposed) shapes of A and B.
  int64_t rows_a() const { return ta ? k : m; }
  int64_t cols_a() const { return ta ? m : k; }
  int64_t rows_b() const { return tb ? n : k; }
  int64_t cols_b() const { return tb ? k : n; }

  const float* mat_a(int64_t i) const { return reinterpret_cast<const float*>(a + uint64_t(i * sa) * 4); }
  const float* mat_b(int64_t i) const { return reinterpret_cast<const float*>(b + uint64_t(i * sb) * 4); }
  float* mat_c(int64_t i) const { return reinterpret_cast<float*>(c + uint64_t(i * sc) * 4); }
};

// decode_op turns a cublasOperation_t into "transposed", or fails.
bool decode_op(int op, bool* trans) {
  if (op != kOpN && op != kOpT && op != kOpC) return false;
  *trans = op != kOpN;
  return true;
}

// valid reports whether g's sizes pass cuBLAS's checks: m, n, k, batch ≥ 0,
// lda ≥ max(1, rows of A as stored), ldb likewise, ldc ≥ max(1, m).
bool valid(const Gemm& g) {
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return false;
  if (g.lda < std::max<int64_t>(1, g.rows_a())) return false;
  if (g.ldb < std::max<int64_t>(1, g.rows_b())) return false;
  if (g.ldc < std::max<int64_t>(1, g.m)) return false;
  return true;
}

// in_range checks that each of g.batch matrices rows×cols with leading
// dimension ld, at base + i·stride elements, lies in one live allocation
// (each its own: the span of all of them is tried first); for the first
// that does not it records the sticky illegal-address error and returns
// false. An empty matrix touches nothing.
bool in_range(const Gemm& g, const char* name, uint64_t base, int64_t rows, int64_t cols, int64_t ld,
              int64_t stride) {
  if (rows == 0 || cols == 0 || g.batch == 0) return true;
  using I128 = __int128;
  const I128 top = I128(UINT64_MAX) + 1;
  const I128 bytes = (I128(cols - 1) * ld + rows) * 4;
  const I128 first = I128(base);
  const I128 last = first + I128(g.batch - 1) * stride * 4;
  const I128 lo = std::min(first, last), hi = std::max(first, last) + bytes;
  if (lo >= 0 && hi <= top && emu::range_ok(uint64_t(lo), uint64_t(hi - lo))) return true;
  for (int64_t i = 0; i < g.batch; i++) {
    const I128 p = first + I128(i) * stride * 4;
    if (p >= 0 && p + bytes <= top && emu::range_ok(uint64_t(p), uint64_t(bytes))) continue;
    char what[256];
    const unsigned long long p0 = (unsigned long long)(uint64_t(p));
    const unsigned long long p1 = (unsigned long long)(uint64_t(p + bytes));
    if (g.batch > 1) {
      std::snprintf(what, sizeof what, "%s: operand %s [0x%llx, 0x%llx) outside any allocation (matrix %lld of %lld)",
                    g.call, name, p0, p1, (long long)i, (long long)g.batch);
    } else {
      std::snprintf(what, sizeof what, "%s: operand %s [0x%llx, 0x%llx) outside any allocation", g.call, name, p0,
                    p1);
    }
    emu::set_sticky(emu::kIllegalAddress, what);
    return false;
  }
  return true;
}

// scale_c sets every C = beta·C (beta == 0: C = 0, C unread), for each
// matrix of the batch.
void scale_c(const Gemm& g) {
  for (int64_t bi = 0; bi < g.batch; bi++) {
    float* c = g.mat_c(bi);
    for (int64_t j = 0; j < g.n; j++) {
      float* cj = c + j * g.ldc;
      if (g.beta == 0.0f) {
        std::fill(cj, cj + g.m, 0.0f);
      } else {
        for (int64_t i = 0; i < g.m; i++) cj[i] = g.beta * cj[i];
      }
    }
  }
}

// copy_rounded writes the rows×cols matrix src (leading dimension ld) to
// dst packed (leading dimension rows), each element rounded as r says.
void copy_rounded(const float* src, int64_t rows, int64_t cols, int64_t ld, Round r, float* dst) {
  for (int64_t j = 0; j < cols; j++) {
    const float* s = src + j * ld;
    float* d = dst + j * rows;
    for (int64_t i = 0; i < rows; i++) d[i] = round_to(r, s[i]);
  }
}

// gemm_blas computes g with the host's cblas_sgemm, one call per matrix of
// the batch, on rounded packed copies of A and B when g rounds (a copy is
// reused while its stride is 0). With beta == 0 C is zeroed first, so no
// library can read garbage from it.
void gemm_blas(const Gemm& g, CblasSgemm sgemm) {
  const int64_t ra = g.rows_a(), ca = g.cols_a(), rb = g.rows_b(), cb = g.cols_b();
  std::vector<float> copy_a, copy_b;
  if (g.round != Round::kNone) {
    copy_a.resize(size_t(ra * ca));
    copy_b.resize(size_t(rb * cb));
  }
  for (int64_t bi = 0; bi < g.batch; bi++) {
    const float* a = g.mat_a(bi);
    const float* b = g.mat_b(bi);
    int64_t lda = g.lda, ldb = g.ldb;
    if (g.round != Round::kNone) {
      if (bi == 0 || g.sa != 0) copy_rounded(a, ra, ca, g.lda, g.round, copy_a.data());
      if (bi == 0 || g.sb != 0) copy_rounded(b, rb, cb, g.ldb, g.round, copy_b.data());
      a = copy_a.data();
      b = copy_b.data();
      lda = std::max<int64_t>(1, ra);
      ldb = std::max<int64_t>(1, rb);
    }
    float* c = g.mat_c(bi);
    if (g.beta == 0.0f) {
      for (int64_t j = 0; j < g.n; j++) std::fill(c + j * g.ldc, c + j * g.ldc + g.m, 0.0f);
    }
    sgemm(kCblasColMajor, g.ta ? kCblasTrans : kCblasNoTrans, g.tb ? kCblasTrans : kCblasNoTrans, int(g.m),
          int(g.n), int(g.k), g.alpha, a, int(lda), b, int(ldb), g.beta, c, int(g.ldc));
  }
}

// Block sizes of the loop: a kMB×kKB block of op(A) (128 KiB) and a
// kKB×(task columns) block of op(B) are packed, rounded, and swept.
constexpr int64_t kMB = 128;
constexpr int64_t kKB = 256;

typedef float V8 __attribute__((vector_size(32)));

// axpy does y[i] += a·x[i] for i < len, each a separate fp32 multiply and
// add.
inline void axpy(int64_t len, float a, const float* __restrict x, float* __restrict y) {
  int64_t i = 0;
  const V8 av = {a, a, a, a, a, a, a, a};
  for (; i + 8 <= len; i += 8) {
    V8 xv, yv;
    std::memcpy(&xv, x + i, sizeof xv);
    std::memcpy(&yv, y + i, sizeof yv);
    yv += av * xv;
    std::memcpy(y + i, &yv, sizeof yv);
  }
  for (; i < len; i++) y[i] += a * x[i];
}

// LoopBuffers are one thread's scratch for gemm_task.
struct LoopBuffers {
  std::vector<float> acc, apack, bpack;
};

// gemm_task computes columns j0 ≤ j < j1 of matrix bi of g, equal to
//   for j: for i: acc = 0; for p in 0..k−1: acc += op(A)(i,p)·op(B)(p,j);
//            C(i,j) = alpha·acc + beta·C(i,j)   (beta == 0: alpha·acc)
// with the inputs rounded as g says. The loops are blocked (p by kKB, then
// i by kMB, then j, then p, then i) so that a packed block of op(A) stays in
// cache while the columns sweep it; every acc still sums its p in order.
void gemm_task(const Gemm& g, int64_t bi, int64_t j0, int64_t j1, LoopBuffers& buf) {
  const int64_t m = g.m, k = g.k, nc = j1 - j0;
  const float* a = g.mat_a(bi);
  const float* b = g.mat_b(bi);
  buf.acc.assign(size_t(m * nc), 0.0f);
  buf.apack.resize(size_t(kMB * kKB));
  buf.bpack.resize(size_t(kKB * nc));
  float* acc = buf.acc.data();
  float* ap = buf.apack.data();
  float* bp = buf.bpack.data();
  for (int64_t p0 = 0; p0 < k; p0 += kKB) {
    const int64_t kb = std::min(kKB, k - p0);
    // bp[jj·kb + pp] = op(B)(p0+pp, j0+jj).
    for (int64_t jj = 0; jj < nc; jj++) {
      for (int64_t pp = 0; pp < kb; pp++) {
        const int64_t p = p0 + pp, j = j0 + jj;
        const float v = g.tb ? b[j + p * g.ldb] : b[p + j * g.ldb];
        bp[jj * kb + pp] = round_to(g.round, v);
      }
    }
    for (int64_t i0 = 0; i0 < m; i0 += kMB) {
      const int64_t mb = std::min(kMB, m - i0);
      // ap[pp·mb + ii] = op(A)(i0+ii, p0+pp).
      for (int64_t pp = 0; pp < kb; pp++) {
        const int64_t p = p0 + pp;
        float* dst = ap + pp * mb;
        if (g.ta) {
          for (int64_t ii = 0; ii < mb; ii++) dst[ii] = round_to(g.round, a[p + (i0 + ii) * g.lda]);
        } else {
          const float* src = a + i0 + p * g.lda;
          for (int64_t ii = 0; ii < mb; ii++) dst[ii] = round_to(g.round, src[ii]);
        }
      }
      for (int64_t jj = 0; jj < nc; jj++) {
        float* cj = acc + jj * m + i0;
        const float* bj = bp + jj * kb;
        for (int64_t pp = 0; pp < kb; pp++) axpy(mb, bj[pp], ap + pp * mb, cj);
      }
    }
  }
  float* c = g.mat_c(bi);
  for (int64_t jj = 0; jj < nc; jj++) {
    float* cj = c + (j0 + jj) * g.ldc;
    const float* s = acc + jj * m;
    if (g.beta == 0.0f) {
      for (int64_t i = 0; i < m; i++) cj[i] = g.alpha * s[i];
    } else {
      for (int64_t i = 0; i < m; i++) cj[i] = g.alpha * s[i] + g.beta * cj[i];
    }
  }
}

// gemm_loop computes g with gemm_task over tasks of (matrix, column
// chunk), shared out to up to emu::worker_threads() threads (the caller's
// among them) that take the next task from a counter; a small product
// runs on the caller alone. Returns false when a thread ran out of memory.
bool gemm_loop(const Gemm& g) {
  const double work = double(g.m) * double(g.n) * double(g.k) * double(g.batch);
  int threads = work < double(1 << 21) ? 1 : std::max(1, emu::worker_threads());
  // Column chunks: about four tasks a thread, at least 16 columns each.
  const int64_t per_matrix = std::max<int64_t>(1, (int64_t(threads) * 4 + g.batch - 1) / g.batch);
  const int64_t nc = std::min<int64_t>(g.n, std::max<int64_t>(16, (g.n + per_matrix - 1) / per_matrix));
  const int64_t chunks = (g.n + nc - 1) / nc;
  const int64_t tasks = chunks * g.batch;
  threads = int(std::min<int64_t>(threads, tasks));

  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    try {
      LoopBuffers buf;
      for (int64_t t; (t = next.fetch_add(1)) < tasks;) {
        const int64_t bi = t / chunks, j0 = (t % chunks) * nc;
        gemm_task(g, bi, j0, std::min(g.n, j0 + nc), buf);
      }
    } catch (const std::bad_alloc&) {
      failed = true;
      next = tasks;  // the others stop after their current task
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; t++) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // fewer threads: the started ones and the caller take the tasks
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  return !failed;
}

// run_gemm checks and computes g for handle h, as every product entry
// point does: a dead handle → NOT_INITIALIZED; bad sizes → INVALID_VALUE;
// an empty product (m, n or batch 0) → SUCCESS, nothing touched; a sticky
// error → EXECUTION_FAILED; an operand outside the allocations → the
// sticky illegal address, SUCCESS; otherwise C is computed.
int run_gemm(void* h, Gemm& g) {
  if (handle_of(h) == nullptr) return kStatusNotInitialized;
  if (!valid(g)) return kStatusInvalidValue;
  if (g.m == 0 || g.n == 0 || g.batch == 0) return kStatusSuccess;
  if (emu::sticky() != emu::kSuccess) return kStatusExecutionFailed;
  const bool reads_ab = g.k > 0 && g.alpha != 0.0f;
  if (reads_ab) {
    if (!in_range(g, "A", g.a, g.rows_a(), g.cols_a(), g.lda, g.sa)) return kStatusSuccess;
    if (!in_range(g, "B", g.b, g.rows_b(), g.cols_b(), g.ldb, g.sb)) return kStatusSuccess;
  }
  if (!in_range(g, "C", g.c, g.m, g.n, g.ldc, g.sc)) return kStatusSuccess;
  try {
    if (!reads_ab) {
      scale_c(g);
      return kStatusSuccess;
    }
    CblasSgemm sgemm = use_loop() ? nullptr : host_sgemm();
    if (sgemm != nullptr) {
      gemm_blas(g, sgemm);
      return kStatusSuccess;
    }
    return gemm_loop(g) ? kStatusSuccess : kStatusAllocFailed;
  } catch (const std::bad_alloc&) {
    return kStatusAllocFailed;
  } catch (...) {
    return kStatusInternalError;
  }
}

// sgemm_round is the rounding cublasSgemm* applies under h's math mode.
Round sgemm_round(void* h) {
  const Handle* p = handle_of(h);
  return p != nullptr && (p->math_mode & kMathModeMask) == kTF32TensorOpMath ? Round::kTF32 : Round::kNone;
}

// ex_round turns cublasGemmEx's types into the rounding it applies, or
// fails (NOT_SUPPORTED): only fp32 A, B and C are provided.
bool ex_round(int atype, int btype, int ctype, int compute, Round* r) {
  if (atype != kR32F || btype != kR32F || ctype != kR32F) return false;
  switch (compute) {
    case kCompute32F: *r = Round::kNone; return true;
    case kCompute32FFast16F: *r = Round::kFP16; return true;
    case kCompute32FFast16BF: *r = Round::kBF16; return true;
    case kCompute32FFastTF32: *r = Round::kTF32; return true;
  }
  return false;
}

// make_gemm fills g from a call's arguments, or returns a status: the
// transposes must be N, T or C and alpha and beta non-null
// (INVALID_VALUE).
int make_gemm(Gemm* g, const char* call, int ta, int tb, int m, int n, int k, const float* alpha, const void* a,
              int lda, long long sa, const void* b, int ldb, long long sb, const float* beta, void* c, int ldc,
              long long sc, int batch, Round round) {
  g->call = call;
  if (!decode_op(ta, &g->ta) || !decode_op(tb, &g->tb)) return kStatusInvalidValue;
  if (alpha == nullptr || beta == nullptr) return kStatusInvalidValue;
  g->m = m;
  g->n = n;
  g->k = k;
  g->alpha = *alpha;
  g->beta = *beta;
  g->a = reinterpret_cast<uintptr_t>(a);
  g->b = reinterpret_cast<uintptr_t>(b);
  g->c = reinterpret_cast<uintptr_t>(c);
  g->lda = lda;
  g->ldb = ldb;
  g->ldc = ldc;
  g->sa = sa;
  g->sb = sb;
  g->sc = sc;
  g->batch = batch;
  g->round = round;
  return kStatusSuccess;
}

}  // namespace

// ---------------------------------------------------------------------------
// The exported cuBLAS v2 entry points. cublasHandle_t is a Handle*;
// cudaStream_t is recorded as given.

// cublasCreate_v2 allocates a handle: default math, the null stream.
CUBLAS_EMU_API int cublasCreate_v2(void** handle) {
  if (handle == nullptr) return kStatusInvalidValue;
  Handle* h = new (std::nothrow) Handle;
  if (h == nullptr) return kStatusAllocFailed;
  *handle = h;
  return kStatusSuccess;
}

// cublasDestroy_v2 frees a handle from cublasCreate_v2.
CUBLAS_EMU_API int cublasDestroy_v2(void* handle) {
  Handle* h = handle_of(handle);
  if (h == nullptr) return kStatusNotInitialized;
  h->magic = 0;
  delete h;
  return kStatusSuccess;
}

// cublasGetVersion_v2 reports 120000 (major·10000 + minor·100 + patch:
// 12.0.0) for any handle.
CUBLAS_EMU_API int cublasGetVersion_v2(void* /*handle*/, int* version) {
  if (version == nullptr) return kStatusInvalidValue;
  *version = kVersion;
  return kStatusSuccess;
}

// cublasSetStream_v2 records the stream the handle's calls belong to.
CUBLAS_EMU_API int cublasSetStream_v2(void* handle, void* stream) {
  Handle* h = handle_of(handle);
  if (h == nullptr) return kStatusNotInitialized;
  h->stream = stream;
  return kStatusSuccess;
}

// cublasGetStream_v2 reports the recorded stream.
CUBLAS_EMU_API int cublasGetStream_v2(void* handle, void** stream) {
  Handle* h = handle_of(handle);
  if (h == nullptr) return kStatusNotInitialized;
  if (stream == nullptr) return kStatusInvalidValue;
  *stream = h->stream;
  return kStatusSuccess;
}

// cublasSetMathMode records the math mode; only CUBLAS_TF32_TENSOR_OP_MATH
// (3, with or without flag bits) changes the products (TF32 inputs for
// cublasSgemm*), every other mode is strict fp32.
CUBLAS_EMU_API int cublasSetMathMode(void* handle, int mode) {
  Handle* h = handle_of(handle);
  if (h == nullptr) return kStatusNotInitialized;
  h->math_mode = mode;
  return kStatusSuccess;
}

// cublasGetMathMode reports the recorded math mode.
CUBLAS_EMU_API int cublasGetMathMode(void* handle, int* mode) {
  Handle* h = handle_of(handle);
  if (h == nullptr) return kStatusNotInitialized;
  if (mode == nullptr) return kStatusInvalidValue;
  *mode = h->math_mode;
  return kStatusSuccess;
}

// cublasGetStatusName is the status code's name ("CUBLAS_STATUS_SUCCESS").
CUBLAS_EMU_API const char* cublasGetStatusName(int status) {
  switch (status) {
    case kStatusSuccess: return "CUBLAS_STATUS_SUCCESS";
    case kStatusNotInitialized: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case kStatusAllocFailed: return "CUBLAS_STATUS_ALLOC_FAILED";
    case kStatusInvalidValue: return "CUBLAS_STATUS_INVALID_VALUE";
    case kStatusArchMismatch: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case kStatusMappingError: return "CUBLAS_STATUS_MAPPING_ERROR";
    case kStatusExecutionFailed: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case kStatusInternalError: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case kStatusNotSupported: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case kStatusLicenseError: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

// cublasGetStatusString is a sentence describing the status code.
CUBLAS_EMU_API const char* cublasGetStatusString(int status) {
  switch (status) {
    case kStatusSuccess: return "success";
    case kStatusNotInitialized: return "the cuBLAS handle was not initialized (emulator)";
    case kStatusAllocFailed: return "host memory for the product could not be allocated (emulator)";
    case kStatusInvalidValue: return "an invalid value was passed: a negative size, a too-small leading dimension or "
                                     "batch count, or an unknown operation";
    case kStatusArchMismatch: return "the device lacks a feature this call needs";
    case kStatusMappingError: return "a device memory mapping failed";
    case kStatusExecutionFailed: return "the product could not run: the context has a sticky error";
    case kStatusInternalError: return "an internal cuBLAS emulator error";
    case kStatusNotSupported: return "not supported by the emulator: only fp32 A, B and C with compute types "
                                     "32F, 32F_FAST_16F, 32F_FAST_16BF and 32F_FAST_TF32";
    case kStatusLicenseError: return "a license error";
  }
  return "unknown cuBLAS status";
}

// cublasSgemm_v2: C = alpha·op(A)·op(B) + beta·C, fp32, TF32 inputs when
// the handle's math mode is CUBLAS_TF32_TENSOR_OP_MATH.
CUBLAS_EMU_API int cublasSgemm_v2(void* handle, int transa, int transb, int m, int n, int k, const float* alpha,
                                  const float* A, int lda, const float* B, int ldb, const float* beta, float* C,
                                  int ldc) {
  if (handle_of(handle) == nullptr) return kStatusNotInitialized;
  Gemm g;
  int st = make_gemm(&g, "cublasSgemm_v2", transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0,
                     1, sgemm_round(handle));
  return st != kStatusSuccess ? st : run_gemm(handle, g);
}

// cublasSgemmStridedBatched: for i < batchCount, cublasSgemm_v2 on
// A + i·strideA, B + i·strideB, C + i·strideC (strides in elements).
CUBLAS_EMU_API int cublasSgemmStridedBatched(void* handle, int transa, int transb, int m, int n, int k,
                                             const float* alpha, const float* A, int lda, long long strideA,
                                             const float* B, int ldb, long long strideB, const float* beta, float* C,
                                             int ldc, long long strideC, int batchCount) {
  if (handle_of(handle) == nullptr) return kStatusNotInitialized;
  Gemm g;
  int st = make_gemm(&g, "cublasSgemmStridedBatched", transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb,
                     strideB, beta, C, ldc, strideC, batchCount, sgemm_round(handle));
  return st != kStatusSuccess ? st : run_gemm(handle, g);
}

// cublasGemmEx: cublasSgemm_v2 with the compute type's input rounding
// (fp32 data only; algo ignored). The handle's math mode does not apply.
CUBLAS_EMU_API int cublasGemmEx(void* handle, int transa, int transb, int m, int n, int k, const void* alpha,
                                const void* A, int Atype, int lda, const void* B, int Btype, int ldb,
                                const void* beta, void* C, int Ctype, int ldc, int computeType, int /*algo*/) {
  if (handle_of(handle) == nullptr) return kStatusNotInitialized;
  Gemm g;
  Round r;
  int st = make_gemm(&g, "cublasGemmEx", transa, transb, m, n, k, static_cast<const float*>(alpha), A, lda, 0, B,
                     ldb, 0, static_cast<const float*>(beta), C, ldc, 0, 1, Round::kNone);
  if (st != kStatusSuccess) return st;
  if (!valid(g)) return kStatusInvalidValue;
  if (!ex_round(Atype, Btype, Ctype, computeType, &r)) return kStatusNotSupported;
  g.round = r;
  return run_gemm(handle, g);
}

// cublasGemmStridedBatchedEx: for i < batchCount, cublasGemmEx on
// A + i·strideA, B + i·strideB, C + i·strideC (strides in elements).
CUBLAS_EMU_API int cublasGemmStridedBatchedEx(void* handle, int transa, int transb, int m, int n, int k,
                                              const void* alpha, const void* A, int Atype, int lda, long long strideA,
                                              const void* B, int Btype, int ldb, long long strideB, const void* beta,
                                              void* C, int Ctype, int ldc, long long strideC, int batchCount,
                                              int computeType, int /*algo*/) {
  if (handle_of(handle) == nullptr) return kStatusNotInitialized;
  Gemm g;
  Round r;
  int st = make_gemm(&g, "cublasGemmStridedBatchedEx", transa, transb, m, n, k, static_cast<const float*>(alpha), A,
                     lda, strideA, B, ldb, strideB, static_cast<const float*>(beta), C, ldc, strideC, batchCount,
                     Round::kNone);
  if (st != kStatusSuccess) return st;
  if (!valid(g)) return kStatusInvalidValue;
  if (!ex_round(Atype, Btype, Ctype, computeType, &r)) return kStatusNotSupported;
  g.round = r;
  return run_gemm(handle, g);
}
