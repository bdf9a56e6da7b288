// cublas_test.cc tests cublas.cc on its own, outside the emulator library:
// it includes cublas.cc (so it reaches the rounding helpers) and stands in
// for the rest of the emulator with test stubs of emu.h's functions (a
// table of "allocations" the test registers, a resettable sticky error,
// a fixed thread count). It is not part of libvitbench-cuemu.so.
//
// Build and run, from impl/cuda/emu (plain, then ASan/UBSan), one line each:
//   g++ -std=c++17 -O2 -Wall -Wextra -pthread -DCUBLAS_EMU_TEST cublas_test.cc -ldl -o /tmp/cublas_test && /tmp/cublas_test
//   g++ -std=c++17 -O1 -g -Wall -Wextra -pthread -fsanitize=address,undefined -fno-sanitize-recover=undefined -DCUBLAS_EMU_TEST cublas_test.cc -ldl -o /tmp/cublas_test_asan && /tmp/cublas_test_asan
// Without -DCUBLAS_EMU_TEST the file compiles to nothing, so a build of
// the library that takes every *.cc here gets no second emu::sticky or
// main from it.
// It prints one line per group and "cublas_test: PASS" (exit 0) or the
// failures and "cublas_test: FAIL" (exit 1). The BLAS path is tested when
// libopenblas.so.0 or libblas.so.3 loads, else it reports that it is
// skipped.

#ifdef CUBLAS_EMU_TEST

#include "cublas.cc"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------
// Test stubs of emu.h.

namespace {
int stub_sticky = 0;
std::string stub_what;
int stub_threads = 2;
struct StubAlloc {
  uint64_t p, n;
};
std::vector<StubAlloc> stub_allocs;
}  // namespace

namespace emu {
int sticky() { return stub_sticky; }
void set_sticky(int code, const char* what) {
  if (stub_sticky == 0) {
    stub_sticky = code;
    stub_what = what;
  }
}
bool range_ok(uint64_t p, uint64_t bytes) {
  for (const StubAlloc& a : stub_allocs) {
    if (p >= a.p && bytes <= a.n && p - a.p <= a.n - bytes) return true;
  }
  return false;
}
int worker_threads() { return stub_threads; }
}  // namespace emu

namespace {

void reset_sticky() {
  stub_sticky = 0;
  stub_what.clear();
}

// ---------------------------------------------------------------------------
// Checks.

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    failures++;
    if (failures <= 60) std::printf("  FAIL: %s\n", what);
  }
}

void expect_status(int got, int want, const char* what) {
  if (got != want) {
    const std::string msg = std::string(what) + ": status " + std::to_string(got) + ", want " + std::to_string(want);
    expect(false, msg.c_str());
  }
}

// Device memory of the test: host buffers registered as allocations.
struct DevMem {
  std::vector<float*> blocks;
  float* alloc(size_t n) {
    float* p = new float[n == 0 ? 1 : n];
    stub_allocs.push_back({uint64_t(reinterpret_cast<uintptr_t>(p)), uint64_t(n) * 4});
    blocks.push_back(p);
    return p;
  }
  ~DevMem() {
    for (float* p : blocks) {
      uint64_t a = uint64_t(reinterpret_cast<uintptr_t>(p));
      for (size_t i = 0; i < stub_allocs.size(); i++) {
        if (stub_allocs[i].p == a) {
          stub_allocs.erase(stub_allocs.begin() + long(i));
          break;
        }
      }
      delete[] p;
    }
  }
};

// Rng is a fixed-seed generator (xorshift64*).
struct Rng {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  // uniform in [-1, 1) with all 24 significant bits random.
  float unit() { return float(int64_t(next() >> 39) - (int64_t(1) << 24)) / float(1 << 24); }
};

// ---------------------------------------------------------------------------
// Rounding: known bit patterns.

uint32_t rb(float (*f)(float), uint32_t in) { return bits_of(f(float_of(in))); }

void test_rounding_patterns() {
  struct Case {
    uint32_t in, want;
    const char* what;
  };
  const Case bf16[] = {
      {0x3F80C000, 0x3F810000, "bf16 1+2^-8+2^-9 rounds up to 1+2^-7"},
      {0x3F808000, 0x3F800000, "bf16 1+2^-8 tie to even (down)"},
      {0x3F818000, 0x3F820000, "bf16 1+2^-7+2^-8 tie to even (up)"},
      {0x3F808001, 0x3F810000, "bf16 just above the tie"},
      {0x3F807FFF, 0x3F800000, "bf16 just below the tie"},
      {0xBF80C000, 0xBF810000, "bf16 negative"},
      {0x7F7FFFFF, 0x7F800000, "bf16 FLT_MAX to inf"},
      {0x7F7F7FFF, 0x7F7F0000, "bf16 below the top midpoint stays finite"},
      {0x7F800000, 0x7F800000, "bf16 inf"},
      {0xFF800000, 0xFF800000, "bf16 -inf"},
      {0x7F800001, 0x7FC00000, "bf16 signalling NaN with a low payload stays NaN"},
      {0xFFC01234, 0xFFC00000, "bf16 negative NaN"},
      {0x80000000, 0x80000000, "bf16 -0"},
      {0x00000001, 0x00000000, "bf16 smallest float subnormal to 0"},
      {0x00008000, 0x00000000, "bf16 subnormal tie to even (0)"},
      {0x00018000, 0x00020000, "bf16 subnormal tie to even (up)"},
      {0x007FFFFF, 0x00800000, "bf16 largest subnormal to the smallest normal"},
  };
  for (const Case& c : bf16) expect(rb(round_bf16, c.in) == c.want, c.what);
  const Case tf32[] = {
      {0x3F801000, 0x3F800000, "tf32 1+2^-11 tie to even (down)"},
      {0x3F803000, 0x3F804000, "tf32 1+2^-10+2^-11 tie to even (up)"},
      {0x3F801001, 0x3F802000, "tf32 just above the tie"},
      {0x3F802000, 0x3F802000, "tf32 1+2^-10 exact"},
      {0x3F800808, 0x3F800000, "tf32 1+2^-12+2^-20 down"},
      {0x7F7FFFFF, 0x7F800000, "tf32 FLT_MAX to inf"},
      {0x7F7FEFFF, 0x7F7FE000, "tf32 largest finite stays"},
      {0x7F800000, 0x7F800000, "tf32 inf"},
      {0xFF800000, 0xFF800000, "tf32 -inf"},
      {0x7F800001, 0x7FC00000, "tf32 signalling NaN stays NaN"},
      {0x80000000, 0x80000000, "tf32 -0"},
  };
  for (const Case& c : tf32) expect(rb(round_tf32, c.in) == c.want, c.what);

  struct HCase {
    float in;
    uint16_t want;
    const char* what;
  };
  const HCase half[] = {
      {1.0f, 0x3C00, "half 1"},
      {-2.0f, 0xC000, "half -2"},
      {1.0f / 3.0f, 0x3555, "half 1/3"},
      {65504.0f, 0x7BFF, "half 65504 largest finite"},
      {std::nextafter(65520.0f, 0.0f), 0x7BFF, "half just below 65520"},
      {65520.0f, 0x7C00, "half 65520 to inf"},
      {-65520.0f, 0xFC00, "half -65520 to -inf"},
      {1e9f, 0x7C00, "half 1e9 to inf"},
      {INFINITY, 0x7C00, "half inf"},
      {-INFINITY, 0xFC00, "half -inf"},
      {1.0f + 0x1p-11f, 0x3C00, "half 1+2^-11 tie to even (down)"},
      {1.0f + 3 * 0x1p-11f, 0x3C02, "half 1+3·2^-11 tie to even (up)"},
      {0x1p-14f, 0x0400, "half 2^-14 smallest normal"},
      {0x1p-24f, 0x0001, "half 2^-24 smallest subnormal"},
      {-0x1p-24f, 0x8001, "half -2^-24"},
      {0x1p-25f, 0x0000, "half 2^-25 tie to even (0)"},
      {float_of(0x33000001), 0x0001, "half just above 2^-25"},
      {1.5f * 0x1p-24f, 0x0002, "half 1.5·2^-24 tie to even (2)"},
      {2.5f * 0x1p-24f, 0x0002, "half 2.5·2^-24 tie to even (2)"},
      {1023.25f * 0x1p-24f, 0x03FF, "half 1023.25·2^-24 to the largest subnormal"},
      {1023.5f * 0x1p-24f, 0x0400, "half 1023.5·2^-24 tie up to the smallest normal"},
      {1e-8f, 0x0000, "half 1e-8 to 0"},
      {float_of(0x00000001), 0x0000, "half float subnormal to 0"},
      {-0.0f, 0x8000, "half -0"},
  };
  for (const HCase& c : half) expect(half_bits(c.in) == c.want, c.what);
  expect(std::isnan(round_fp16(NAN)), "half NaN stays NaN");
  expect(std::isnan(round_fp16(float_of(0x7F800001))), "half signalling NaN with a low payload stays NaN");
  expect(std::isnan(round_tf32(NAN)) && std::isnan(round_bf16(-NAN)), "tf32/bf16 NaN stays NaN");
  expect(half_value(0x0001) == 0x1p-24f, "half_value 0x0001");
  expect(half_value(0x03FF) == 1023 * 0x1p-24f, "half_value largest subnormal");
  expect(half_value(0x7BFF) == 65504.0f, "half_value 65504");
  expect(half_value(0x3555) == 0.333251953125f, "half_value 1/3");
  expect(std::isinf(half_value(0x7C00)) && half_value(0xFC00) < 0, "half_value ±inf");
  expect(std::isnan(half_value(0x7E00)), "half_value NaN");
  expect(bits_of(half_value(0x8000)) == 0x80000000u, "half_value -0");
  expect(round_fp16(4e-8f) == 0x1p-24f, "round_fp16 4e-8 to 2^-24");
  expect(std::isinf(round_fp16(65520.0f)), "round_fp16 65520 to inf");
  std::printf("rounding: known bit patterns done\n");
}

// ---------------------------------------------------------------------------
// Rounding: exhaustive over halves, random against an independent
// reference (double arithmetic and nearbyint, which rounds ties to even).

void test_rounding_exhaustive() {
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    const uint16_t hb = uint16_t(h);
    if ((hb & 0x7C00) == 0x7C00 && (hb & 0x3FF) != 0) continue;  // NaN
    if (half_bits(half_value(hb)) != hb) bad++;
    const uint16_t mag = hb & 0x7FFF, sign = hb & 0x8000;
    if (mag >= 0x7C00) continue;
    // The midpoint between hb and the next half up in magnitude.
    const double lo = std::fabs(double(half_value(hb)));
    const double hi = mag == 0x7BFF ? 65536.0 : std::fabs(double(half_value(uint16_t(mag + 1))));
    const float mid = float((lo + hi) / 2);  // 12 significant bits: exact
    const float sgn = sign ? -1.0f : 1.0f;
    const uint16_t up = uint16_t(sign | (mag + 1));
    const uint16_t even = (mag & 1) ? up : hb;
    if (half_bits(sgn * mid) != even) bad++;
    if (half_bits(sgn * std::nextafter(mid, 0.0f)) != hb) bad++;
    if (half_bits(sgn * std::nextafter(mid, INFINITY)) != up) bad++;
  }
  expect(bad == 0, "half round trip and midpoints (all 65536 halves)");

  // ref rounds x to `bits` significant bits, quantum 2^min_exp below the
  // smallest normal of the format, and to inf above max_finite.
  auto ref = [](float x, int bits, int min_exp, double max_finite) -> float {
    if (x == 0 || std::isinf(x)) return x;
    int e;
    std::frexp(double(x), &e);                   // |x| in [2^(e-1), 2^e)
    int q = std::max(e - bits, min_exp);         // quantum exponent
    double r = std::nearbyint(std::ldexp(double(x), -q));
    double v = std::ldexp(r, q);
    if (std::fabs(v) > max_finite) return x < 0 ? -INFINITY : INFINITY;
    return float(v);
  };
  const double fmax_tf32 = std::ldexp(2.0 - std::ldexp(1.0, -10), 127);
  const double fmax_bf16 = std::ldexp(2.0 - std::ldexp(1.0, -7), 127);
  Rng rng;
  int bad_tf32 = 0, bad_bf16 = 0, bad_fp16 = 0;
  for (int i = 0; i < 300000; i++) {
    uint32_t u = uint32_t(rng.next() >> 32);
    float x = float_of(u);
    if (std::isnan(x)) continue;
    // Half the samples near the half range so its edges get exercised.
    float y = i % 2 ? std::ldexp(float_of((u & 0x807FFFFFu) | 0x3F800000u), int(u % 48) - 28) : x;
    if (bits_of(round_tf32(x)) != bits_of(ref(x, 11, -136, fmax_tf32))) bad_tf32++;
    if (bits_of(round_bf16(x)) != bits_of(ref(x, 8, -133, fmax_bf16))) bad_bf16++;
    if (bits_of(round_fp16(y)) != bits_of(ref(y, 11, -24, 65504.0))) bad_fp16++;
  }
  expect(bad_tf32 == 0, "tf32 random patterns against the reference");
  expect(bad_bf16 == 0, "bf16 random patterns against the reference");
  expect(bad_fp16 == 0, "fp16 random values against the reference");
  std::printf("rounding: exhaustive halves, 300000 random tf32/bf16/fp16 (bad %d/%d/%d/%d)\n", bad, bad_tf32,
              bad_bf16, bad_fp16);
}

// ---------------------------------------------------------------------------
// GEMMs against a double-precision reference.

enum class Api { kSgemm, kSgemmStrided, kGemmEx, kGemmExStrided };

struct Case {
  Api api;
  int ta, tb;  // cublasOperation_t
  int m, n, k;
  int pad;     // extra rows in every leading dimension
  int batch;
  bool shared_a;  // strideA = 0 (one A for all the batch)
  float alpha, beta;
  int compute;  // GemmEx compute type; for Sgemm: the handle's math mode
};

Round case_round(const Case& c) {
  if (c.api == Api::kSgemm || c.api == Api::kSgemmStrided) {
    return c.compute == kTF32TensorOpMath ? Round::kTF32 : Round::kNone;
  }
  Round r = Round::kNone;
  ex_round(0, 0, 0, c.compute, &r);
  return r;
}

int call_api(void* h, const Case& c, const float* a, int lda, long long sa, const float* b, int ldb, long long sb,
             float* cm, int ldc, long long sc) {
  switch (c.api) {
    case Api::kSgemm:
      return cublasSgemm_v2(h, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, a, lda, b, ldb, &c.beta, cm, ldc);
    case Api::kSgemmStrided:
      return cublasSgemmStridedBatched(h, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, a, lda, sa, b, ldb, sb, &c.beta, cm,
                                       ldc, sc, c.batch);
    case Api::kGemmEx:
      return cublasGemmEx(h, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, a, 0, lda, b, 0, ldb, &c.beta, cm, 0, ldc,
                          c.compute, -1);
    case Api::kGemmExStrided:
      return cublasGemmStridedBatchedEx(h, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, a, 0, lda, sa, b, 0, ldb, sb, &c.beta,
                                        cm, 0, ldc, sc, c.batch, c.compute, -1);
  }
  return -1;
}

const float kSentinel = 12345.0f;

// run_case computes c with the API and checks every element of every C
// against alpha·Σ_p R(op(A))·R(op(B)) + beta·C0 in double (R the case's
// rounding), within (k+2)·2^-23·(|alpha|·Σ|ab| + |beta·C0|); checks that C's
// padding rows are untouched and that beta = 0 wrote over C's NaNs.
void run_case(void* h, const Case& c, const char* name, Rng& rng) {
  DevMem mem;
  const bool ta = c.ta != 0, tb = c.tb != 0;
  const int ra = ta ? c.k : c.m, ca = ta ? c.m : c.k;
  const int rbr = tb ? c.n : c.k, cbc = tb ? c.k : c.n;
  const int lda = std::max(1, ra + c.pad), ldb = std::max(1, rbr + c.pad), ldc = std::max(1, c.m + c.pad);
  const long long mat_a = (long long)lda * ca, mat_b = (long long)ldb * cbc, mat_c = (long long)ldc * c.n;
  const long long sa = c.batch > 1 && c.shared_a ? 0 : mat_a + 3, sb = mat_b + 5, sc = mat_c + 2;
  const int nb = std::max(1, c.batch);
  const size_t na = size_t(sa * (nb - 1) + mat_a), nbn = size_t(sb * (nb - 1) + mat_b),
               nc = size_t(sc * (nb - 1) + mat_c);
  float* a = mem.alloc(na);
  float* b = mem.alloc(nbn);
  float* cm = mem.alloc(nc);
  for (size_t i = 0; i < na; i++) a[i] = rng.unit();
  for (size_t i = 0; i < nbn; i++) b[i] = rng.unit();
  for (size_t i = 0; i < nc; i++) cm[i] = kSentinel;
  for (int bi = 0; bi < nb; bi++) {
    for (int j = 0; j < c.n; j++) {
      for (int i = 0; i < c.m; i++) cm[bi * sc + (long long)j * ldc + i] = c.beta == 0 ? NAN : rng.unit();
    }
  }
  std::vector<float> c0(cm, cm + nc);
  const Round r = case_round(c);
  reset_sticky();
  int st = call_api(h, c, a, lda, sa, b, ldb, sb, cm, ldc, sc);
  char what[300];
  std::snprintf(what, sizeof what, "%s: call", name);
  expect_status(st, 0, what);
  std::snprintf(what, sizeof what, "%s: no sticky error", name);
  expect(stub_sticky == 0, what);
  int bad = 0, pad_bad = 0;
  double worst = 0;
  for (int bi = 0; bi < nb; bi++) {
    const float* A = a + bi * sa;
    const float* B = b + bi * sb;
    for (int j = 0; j < c.n; j++) {
      for (int i = 0; i < c.m; i++) {
        double sum = 0, mag = 0;
        for (int p = 0; p < c.k; p++) {
          double x = round_to(r, ta ? A[p + (long long)i * lda] : A[i + (long long)p * lda]);
          double y = round_to(r, tb ? B[j + (long long)p * ldb] : B[p + (long long)j * ldb]);
          sum += x * y;
          mag += std::fabs(x * y);
        }
        const long long at = bi * sc + (long long)j * ldc + i;
        double want = double(c.alpha) * sum, bound = std::fabs(double(c.alpha)) * mag;
        if (c.beta != 0) {
          want += double(c.beta) * c0[at];
          bound += std::fabs(double(c.beta) * c0[at]);
        }
        const double tol = (c.k + 2) * std::ldexp(1.0, -23) * bound + 1e-30;
        const double err = std::fabs(double(cm[at]) - want);
        if (!(err <= tol)) bad++;
        if (bound > 0) worst = std::max(worst, err / bound);
      }
      for (int i = c.m; i < ldc; i++) {
        if (cm[bi * sc + (long long)j * ldc + i] != kSentinel) pad_bad++;
      }
    }
  }
  std::snprintf(what, sizeof what, "%s: %d of %lld elements off the reference (worst relative %.3g)", name, bad,
                (long long)nb * c.m * c.n, worst);
  expect(bad == 0, what);
  std::snprintf(what, sizeof what, "%s: %d padding elements written", name, pad_bad);
  expect(pad_bad == 0, what);
}

void set_path(bool loop) {
  if (loop) {
    setenv("VITBENCH_CUDA_EMU_BLAS", "loop", 1);
  } else {
    unsetenv("VITBENCH_CUDA_EMU_BLAS");
  }
}

void test_gemms(void* h) {
  Rng rng;
  const bool have_blas = host_sgemm() != nullptr;
  std::printf("gemm: host BLAS %s\n", have_blas ? "loaded" : "not found: the BLAS path runs the loop too");
  const int ops[3] = {kOpN, kOpT, kOpC};
  const char* opname[3] = {"N", "T", "C"};
  int cases = 0;
  for (int path = 0; path < 2; path++) {
    const bool loop = path == 0;
    set_path(loop);
    const char* pn = loop ? "loop" : "blas";
    // All transpose pairs, Sgemm under both math modes, beta 0 and not.
    for (int ia = 0; ia < 3; ia++) {
      for (int ib = 0; ib < 3; ib++) {
        for (int mode : {0, int(kTF32TensorOpMath)}) {
          for (float beta : {0.0f, 0.75f}) {
            cublasSetMathMode(h, mode);
            Case c{Api::kSgemm, ops[ia], ops[ib], 13, 11, 17, 3, 1, false, 1.5f, beta, mode};
            char name[200];
            std::snprintf(name, sizeof name, "%s sgemm %s%s math %d beta %g", pn, opname[ia], opname[ib], mode,
                          double(beta));
            run_case(h, c, name, rng);
            cases++;
          }
        }
      }
    }
    cublasSetMathMode(h, 0);
    // Strided batches (one with a shared A), every compute type.
    for (int ia = 0; ia < 2; ia++) {
      for (int ib = 0; ib < 2; ib++) {
        for (int compute : {int(kCompute32F), int(kCompute32FFast16F), int(kCompute32FFast16BF), int(kCompute32FFastTF32)}) {
          char name[200];
          Case c{Api::kGemmExStrided, ops[ia], ops[ib], 9, 14, 10, 2, 4, false, 1.0f, 0.0f, compute};
          std::snprintf(name, sizeof name, "%s gemmStridedBatchedEx %s%s compute %d", pn, opname[ia], opname[ib],
                        compute);
          run_case(h, c, name, rng);
          Case e{Api::kGemmEx, ops[ia], ops[ib], 7, 5, 19, 1, 1, false, -0.5f, 2.0f, compute};
          std::snprintf(name, sizeof name, "%s gemmEx %s%s compute %d", pn, opname[ia], opname[ib], compute);
          run_case(h, e, name, rng);
          cases += 2;
        }
        for (int mode : {0, int(kTF32TensorOpMath)}) {
          cublasSetMathMode(h, mode);
          char name[200];
          Case c{Api::kSgemmStrided, ops[ia], ops[ib], 12, 6, 8, 1, 5, ia == 1, 1.0f, 0.25f, mode};
          std::snprintf(name, sizeof name, "%s sgemmStridedBatched %s%s math %d", pn, opname[ia], opname[ib], mode);
          run_case(h, c, name, rng);
          cases++;
        }
        cublasSetMathMode(h, 0);
      }
    }
    // Products large enough for several row and k blocks and for threads
    // (2 stub threads), rows not a multiple of 8.
    {
      Case c{Api::kSgemm, kOpN, kOpN, 301, 70, 530, 4, 1, false, 1.0f, 0.0f, 0};
      run_case(h, c, loop ? "loop sgemm NN 301x70x530" : "blas sgemm NN 301x70x530", rng);
      Case t{Api::kGemmExStrided, kOpT, kOpT, 150, 33, 270, 0, 3, true, 1.0f, 1.0f, kCompute32FFast16BF};
      run_case(h, t, loop ? "loop gemmStridedBatchedEx TT 150x33x270x3 bf16" : "blas gemmStridedBatchedEx TT bf16",
               rng);
      Case s{Api::kSgemmStrided, kOpN, kOpT, 40, 40, 64, 0, 24, false, 0.125f, 0.0f, 0};
      run_case(h, s, loop ? "loop sgemmStridedBatched NT 40x40x64x24" : "blas sgemmStridedBatched NT 40x40x64x24",
               rng);
      cases += 3;
    }
  }
  set_path(false);
  std::printf("gemm: %d cases on each path against the double reference\n", cases / 2);
}

// test_loop_vs_blas runs one product on both paths and compares them.
void test_loop_vs_blas(void* h) {
  if (host_sgemm() == nullptr) {
    std::printf("loop vs blas: skipped (no host BLAS)\n");
    return;
  }
  DevMem mem;
  Rng rng;
  const int m = 96, n = 50, k = 200;
  float* a = mem.alloc(size_t(m) * k);
  float* b = mem.alloc(size_t(k) * n);
  float* c1 = mem.alloc(size_t(m) * n);
  float* c2 = mem.alloc(size_t(m) * n);
  for (int i = 0; i < m * k; i++) a[i] = rng.unit();
  for (int i = 0; i < k * n; i++) b[i] = rng.unit();
  const float one = 1, zero = 0;
  cublasSetMathMode(h, kTF32TensorOpMath);
  set_path(true);
  expect_status(cublasSgemm_v2(h, kOpT, kOpN, m, n, k, &one, a, k, b, k, &zero, c1, m), 0, "loop vs blas: loop");
  set_path(false);
  expect_status(cublasSgemm_v2(h, kOpT, kOpN, m, n, k, &one, a, k, b, k, &zero, c2, m), 0, "loop vs blas: blas");
  cublasSetMathMode(h, 0);
  double worst = 0;
  for (int i = 0; i < m * n; i++) worst = std::max(worst, double(std::fabs(c1[i] - c2[i])));
  expect(worst < 1e-4, "loop vs blas: the two paths agree within 1e-4");
  std::printf("loop vs blas: tf32 96x50x200 largest difference %.3g\n", worst);
}

// test_exact checks that the rounding modes really round the inputs
// (1×1×1 products with exactly known results).
void test_exact(void* h) {
  DevMem mem;
  float* a = mem.alloc(1);
  float* b = mem.alloc(1);
  float* c = mem.alloc(1);
  const float one = 1, zero = 0;
  for (int path = 0; path < 2; path++) {
    set_path(path == 0);
    const float x = 1.0f + 0x1p-9f + 0x1p-10f + 0x1p-13f;  // tf32/fp16: 1+2^-9+2^-10; bf16: 1
    *a = x;
    *b = 1.0f;
    cublasSetMathMode(h, 0);
    cublasSgemm_v2(h, kOpN, kOpN, 1, 1, 1, &one, a, 1, b, 1, &zero, c, 1);
    expect(*c == x, "exact: strict sgemm keeps the input");
    cublasSetMathMode(h, kTF32TensorOpMath);
    cublasSgemm_v2(h, kOpN, kOpN, 1, 1, 1, &one, a, 1, b, 1, &zero, c, 1);
    expect(*c == 1.0f + 0x1p-9f + 0x1p-10f, "exact: tf32 math sgemm rounds to tf32");
    cublasSetMathMode(h, 0);
    const struct {
      int compute;
      float in, want;
      const char* what;
    } cases[] = {
        {kCompute32F, x, x, "exact: COMPUTE_32F strict"},
        {kCompute32FFastTF32, x, 1.0f + 0x1p-9f + 0x1p-10f, "exact: FAST_TF32"},
        {kCompute32FFast16BF, x, 1.0f, "exact: FAST_16BF"},
        {kCompute32FFast16F, x, 1.0f + 0x1p-9f + 0x1p-10f, "exact: FAST_16F"},
        {kCompute32FFast16F, 70000.0f, INFINITY, "exact: FAST_16F overflow to inf"},
        {kCompute32FFastTF32, 70000.0f, 70016.0f, "exact: FAST_TF32 70000"},
        {kCompute32FFast16F, 3e-8f, 0x1p-24f, "exact: FAST_16F half subnormal"},
    };
    for (const auto& t : cases) {
      *a = t.in;
      cublasGemmEx(h, kOpN, kOpN, 1, 1, 1, &one, a, 0, 1, b, 0, 1, &zero, c, 0, 1, t.compute, -1);
      expect(*c == t.want, t.what);
    }
  }
  set_path(false);
  std::printf("exact: rounding modes on 1x1x1 products done\n");
}

// test_edges: k = 0, alpha = 0, m or n or batch = 0, NaN propagation.
void test_edges(void* h) {
  DevMem mem;
  float* a = mem.alloc(64);
  float* b = mem.alloc(64);
  float* c = mem.alloc(64);
  const float one = 1, zero = 0, half = 0.5f;
  for (int path = 0; path < 2; path++) {
    set_path(path == 0);
    for (int i = 0; i < 64; i++) c[i] = NAN;
    expect_status(cublasSgemm_v2(h, kOpN, kOpN, 4, 4, 0, &one, nullptr, 4, nullptr, 1, &zero, c, 4), 0, "k=0 beta=0");
    bool ok = true;
    for (int i = 0; i < 16; i++) ok = ok && c[i] == 0.0f && !std::signbit(c[i]);
    expect(ok, "k=0, beta=0: C = 0 over NaN");
    expect(std::isnan(c[16]), "k=0: C outside m×n untouched");
    for (int i = 0; i < 16; i++) c[i] = float(i);
    expect_status(cublasSgemm_v2(h, kOpT, kOpN, 4, 4, 0, &one, a, 1, b, 1, &half, c, 4), 0, "k=0 beta=0.5");
    ok = true;
    for (int i = 0; i < 16; i++) ok = ok && c[i] == 0.5f * float(i);
    expect(ok, "k=0, beta=0.5: C = beta·C");
    for (int i = 0; i < 16; i++) c[i] = float(i);
    // alpha = 0: A and B not read, even out of range.
    reset_sticky();
    expect_status(cublasSgemm_v2(h, kOpN, kOpN, 4, 4, 4, &zero, reinterpret_cast<float*>(16), 4,
                                 reinterpret_cast<float*>(16), 4, &half, c, 4),
                  0, "alpha=0");
    ok = true;
    for (int i = 0; i < 16; i++) ok = ok && c[i] == 0.5f * float(i);
    expect(ok && stub_sticky == 0, "alpha=0: C = beta·C, A and B unread");
    // Empty products touch nothing, not even a bad C.
    expect_status(cublasSgemm_v2(h, kOpN, kOpN, 0, 4, 4, &one, nullptr, 1, nullptr, 4, &zero, nullptr, 1), 0, "m=0");
    expect_status(cublasSgemm_v2(h, kOpN, kOpN, 4, 0, 4, &one, nullptr, 4, nullptr, 4, &zero, nullptr, 4), 0, "n=0");
    expect_status(cublasSgemmStridedBatched(h, kOpN, kOpN, 4, 4, 4, &one, nullptr, 4, 16, nullptr, 4, 16, &zero,
                                            nullptr, 4, 16, 0),
                  0, "batch=0");
    expect(stub_sticky == 0, "empty products: no sticky error");
    // NaN and inf in A propagate.
    for (int i = 0; i < 16; i++) {
      a[i] = 1;
      b[i] = 1;
    }
    a[1] = NAN;
    a[2] = INFINITY;
    expect_status(cublasSgemm_v2(h, kOpN, kOpN, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4), 0, "nan in A");
    expect(c[0] == 4 && std::isnan(c[1]) && std::isinf(c[2]) && c[3] == 4, "NaN and inf in A propagate");
  }
  set_path(false);
  std::printf("edges: k=0, alpha=0, empty products, NaN done\n");
}

void test_invalid(void* h) {
  DevMem mem;
  float* a = mem.alloc(256);
  float* b = mem.alloc(256);
  float* c = mem.alloc(256);
  const float one = 1, zero = 0;
  auto sg = [&](int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
    return cublasSgemm_v2(h, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
  };
  expect_status(sg(0, 0, -1, 4, 4, 4, 4, 4), 7, "m<0");
  expect_status(sg(0, 0, 4, -1, 4, 4, 4, 4), 7, "n<0");
  expect_status(sg(0, 0, 4, 4, -1, 4, 4, 4), 7, "k<0");
  expect_status(sg(0, 0, 4, 4, 6, 3, 6, 4), 7, "lda < m (N)");
  expect_status(sg(1, 0, 4, 4, 6, 5, 6, 4), 7, "lda < k (T)");
  expect_status(sg(0, 0, 4, 4, 6, 4, 5, 4), 7, "ldb < k (N)");
  expect_status(sg(0, 1, 4, 5, 6, 4, 4, 4), 7, "ldb < n (T)");
  expect_status(sg(0, 0, 4, 4, 6, 4, 6, 3), 7, "ldc < m");
  expect_status(sg(0, 0, 0, 4, 4, 1, 4, 0), 7, "ldc = 0 with m = 0");
  expect_status(sg(0, 0, 4, 4, 0, 4, 0, 4), 7, "ldb = 0 with k = 0");
  expect_status(sg(3, 0, 4, 4, 4, 4, 4, 4), 7, "transa = 3");
  expect_status(sg(0, -1, 4, 4, 4, 4, 4, 4), 7, "transb = -1");
  expect_status(sg(1, 1, 4, 4, 6, 6, 4, 4), 0, "TT with minimal leading dimensions");
  expect_status(sg(2, 2, 4, 4, 6, 6, 4, 4), 0, "CC (as TT)");
  expect_status(cublasSgemm_v2(h, 0, 0, 4, 4, 4, nullptr, a, 4, b, 4, &zero, c, 4), 7, "alpha null");
  expect_status(cublasSgemm_v2(nullptr, 0, 0, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4), 1, "null handle");
  expect_status(cublasSgemmStridedBatched(h, 0, 0, 4, 4, 4, &one, a, 4, 16, b, 4, 16, &zero, c, 4, 16, -1), 7,
                "batch < 0");
  expect_status(cublasGemmEx(h, 0, 0, 4, 4, 4, &one, a, 2, 4, b, 0, 4, &zero, c, 0, 4, 68, -1), 15, "Atype fp16");
  expect_status(cublasGemmEx(h, 0, 0, 4, 4, 4, &one, a, 0, 4, b, 0, 4, &zero, c, 14, 4, 68, -1), 15, "Ctype bf16");
  expect_status(cublasGemmEx(h, 0, 0, 4, 4, 4, &one, a, 0, 4, b, 0, 4, &zero, c, 0, 4, 64, -1), 15,
                "compute 16F");
  expect_status(cublasGemmEx(h, 0, 0, 4, 4, 4, &one, a, 0, 4, b, 0, 4, &zero, c, 0, 4, 68, 99), 0, "algo ignored");
  expect_status(cublasGemmStridedBatchedEx(h, 0, 0, 4, 4, 4, &one, a, 0, 4, 16, b, 0, 4, 16, &zero, c, 0, 4, 16, 2,
                                           79, -1),
                15, "strided Ex compute 79");
  expect_status(cublasGemmStridedBatchedEx(h, 0, 0, 4, 4, 4, &one, a, 0, 3, 16, b, 0, 4, 16, &zero, c, 0, 4, 16, 2,
                                           68, -1),
                7, "strided Ex lda < m");
  expect(stub_sticky == 0, "invalid values: no sticky error");
  std::printf("invalid values done\n");
}

void test_faults(void* h) {
  DevMem mem;
  const float one = 1, zero = 0;
  float* a = mem.alloc(16);
  float* b = mem.alloc(15);  // one short of 4×4
  float* c = mem.alloc(16);
  for (int i = 0; i < 16; i++) {
    a[i] = 1;
    c[i] = kSentinel;
  }
  for (int i = 0; i < 15; i++) b[i] = 1;
  reset_sticky();
  expect_status(cublasSgemm_v2(h, 0, 0, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4), 0, "fault: B short returns success");
  expect(stub_sticky == emu::kIllegalAddress, "fault: B short sets the sticky illegal address");
  expect(stub_what.find("cublasSgemm_v2: operand B [0x") == 0 && stub_what.find("outside any allocation") !=
                                                                     std::string::npos,
         "fault: message names the call and operand");
  bool untouched = true;
  for (int i = 0; i < 16; i++) untouched = untouched && c[i] == kSentinel;
  expect(untouched, "fault: C untouched");
  expect_status(cublasSgemm_v2(h, 0, 0, 4, 4, 4, &one, a, 4, a, 4, &zero, c, 4), 13,
                "sticky set: next product EXECUTION_FAILED");
  expect(c[0] == kSentinel, "sticky set: nothing computed");
  std::printf("  message: %s\n", stub_what.c_str());
  reset_sticky();
  // T reads B as 4×4 too: lda/ldb extents (cols−1)·ld + rows.
  expect_status(cublasSgemm_v2(h, 0, 1, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4), 0, "fault: B short (T)");
  expect(stub_sticky == emu::kIllegalAddress, "fault: B short (T) sticky");
  reset_sticky();
  // A matrix 4×3 with lda 5 fits in (3−1)·5+4 = 14 elements.
  expect_status(cublasSgemm_v2(h, 0, 0, 4, 4, 3, &one, b, 5, a, 4, &zero, c, 4), 0, "extent (cols−1)·ld+rows");
  expect(stub_sticky == 0, "extent (cols−1)·ld+rows fits exactly");
  // C out of range.
  reset_sticky();
  expect_status(cublasSgemm_v2(h, 0, 0, 4, 4, 4, &one, a, 4, a, 4, &zero, b, 4), 0, "fault: C short");
  expect(stub_sticky == emu::kIllegalAddress && stub_what.find("operand C") != std::string::npos,
         "fault: C short sticky");
  // Strided batch: the third matrix of A runs past the allocation.
  reset_sticky();
  float* big = mem.alloc(40);
  for (int i = 0; i < 40; i++) big[i] = 1;
  float* cb = mem.alloc(48);
  expect_status(cublasSgemmStridedBatched(h, 0, 0, 4, 4, 4, &one, big, 4, 13, a, 4, 0, &zero, cb, 4, 16, 3), 0,
                "fault: batch");
  expect(stub_sticky == emu::kIllegalAddress && stub_what.find("matrix 2 of 3") != std::string::npos,
         "fault: third matrix of the batch named");
  std::printf("  message: %s\n", stub_what.c_str());
  // Each matrix in its own allocation: the span check fails, each one passes.
  reset_sticky();
  std::vector<float> host(64, 1.0f);
  const uint64_t base = uint64_t(reinterpret_cast<uintptr_t>(host.data()));
  stub_allocs.push_back({base, 32 * 4});
  stub_allocs.push_back({base + 32 * 4, 32 * 4});
  expect_status(cublasSgemmStridedBatched(h, 0, 0, 4, 4, 4, &one, host.data(), 4, 32, a, 4, 0, &zero, cb, 4, 16, 2), 0,
                "batch in two allocations");
  expect(stub_sticky == 0 && cb[0] == 4 && cb[16] == 4, "batch in two allocations: computed");
  // A matrix straddling the two allocations faults.
  expect_status(cublasSgemmStridedBatched(h, 0, 0, 4, 4, 4, &one, host.data(), 4, 24, a, 4, 0, &zero, cb, 4, 16, 2), 0,
                "batch straddling two allocations");
  expect(stub_sticky == emu::kIllegalAddress, "batch straddling two allocations: sticky");
  stub_allocs.pop_back();
  stub_allocs.pop_back();
  reset_sticky();
  // A null pointer is outside every allocation.
  expect_status(cublasGemmEx(h, 0, 0, 4, 4, 4, &one, nullptr, 0, 4, a, 0, 4, &zero, c, 0, 4, 68, -1), 0, "null A");
  expect(stub_sticky == emu::kIllegalAddress && stub_what.find("cublasGemmEx: operand A") == 0, "null A: sticky");
  reset_sticky();
  std::printf("faults done\n");
}

void test_handle() {
  void* h = nullptr;
  expect_status(cublasCreate_v2(&h), 0, "create");
  int v = 0;
  expect_status(cublasGetVersion_v2(h, &v), 0, "version");
  expect(v == 120000, "version 120000");
  expect_status(cublasGetVersion_v2(h, nullptr), 7, "version null");
  int dummy_stream = 0;
  void* s = nullptr;
  expect_status(cublasSetStream_v2(h, &dummy_stream), 0, "set stream");
  expect_status(cublasGetStream_v2(h, &s), 0, "get stream");
  expect(s == &dummy_stream, "stream recorded");
  int mode = -1;
  expect_status(cublasSetMathMode(h, 3 | 16), 0, "set math mode");
  expect_status(cublasGetMathMode(h, &mode), 0, "get math mode");
  expect(mode == 19 && sgemm_round(h) == Round::kTF32, "TF32 math mode with the flag bit");
  cublasSetMathMode(h, 1);
  expect(sgemm_round(h) == Round::kNone, "TENSOR_OP_MATH (1) is strict for fp32");
  expect_status(cublasSetMathMode(nullptr, 0), 1, "math mode on a null handle");
  expect(std::strcmp(cublasGetStatusName(15), "CUBLAS_STATUS_NOT_SUPPORTED") == 0, "status name 15");
  for (int st : {0, 1, 3, 7, 8, 11, 13, 14, 15, 16, 12345}) {
    expect(cublasGetStatusString(st) != nullptr && cublasGetStatusString(st)[0] != 0, "status strings");
  }
  expect_status(cublasDestroy_v2(h), 0, "destroy");
  expect_status(cublasDestroy_v2(nullptr), 1, "destroy null");
  expect_status(cublasCreate_v2(nullptr), 7, "create null");
  std::printf("handle: create, version, stream, math mode, status strings done\n");
}

}  // namespace

int main() {
  test_rounding_patterns();
  test_rounding_exhaustive();
  test_handle();
  void* h = nullptr;
  if (cublasCreate_v2(&h) != 0) {
    std::printf("cublas_test: FAIL (create)\n");
    return 1;
  }
  test_exact(h);
  test_edges(h);
  test_invalid(h);
  test_faults(h);
  test_gemms(h);
  test_loop_vs_blas(h);
  cublasDestroy_v2(h);
  if (failures != 0) {
    std::printf("cublas_test: FAIL (%d)\n", failures);
    return 1;
  }
  std::printf("cublas_test: PASS\n");
  return 0;
}

#endif  // CUBLAS_EMU_TEST
