// Multi-scale deformable attention sampling (Deformable DETR), channel-
// vectorized: one thread per (n, q, m) and V consecutive channels of the
// head, so that the threads of a warp read consecutive channels of each
// corner row (float4 loads when V = 4). Every thread recomputes the
// locations and corner weights of its head's L·P points, which are shared
// by its channels.
//
// The kernels are templates on the type T that value is stored in: float
// (backends cuda and cuda-tf32), or a 16-bit copy of it (cuda-bf16,
// cuda-fp16) made by f32_to_bf16 / f32_to_f16 below, read 8 or 4 channels
// per load (16 or 8 bytes). The body is the same for every T: only
// load_vals differs, and every value is widened to float before it is
// weighted, so weights, locations, softmax and accumulation are fp32 and
// out is fp32.

// 16-bit storage without cuda_bf16.h / cuda_fp16.h (not on NVRTC's path):
// bf16_t and f16_t hold the raw bits. bfloat16 is converted with integer
// operations both ways (it is the upper half of a float); IEEE half with
// the PTX instructions cvt.rn.f16.f32 (round to nearest even, subnormal
// halves kept, overflow to ±inf, NaN to NaN) and cvt.f32.f16 (exact),
// which exist on every architecture and PTX version, unlike
// cvt.rn.bf16.f32 (sm_80+, PTX 7.0+). So all of it compiles for sm_80 and
// sm_90 with NVRTC 11.8 (checked by the tests) as with NVRTC 12 and 13.
struct bf16_t {
  unsigned short bits;
};
struct f16_t {
  unsigned short bits;
};

// f32_to_bf16_bits rounds f to bfloat16, to nearest with ties to even
// (adding 0x7fff plus the kept lowest bit carries into the upper half
// exactly when the dropped half is above one half, or equal to it with an
// odd kept part; finite values past the largest bf16 become ±inf, as in
// IEEE rounding). NaN stays a (quiet) NaN of the same sign.
__device__ __forceinline__ unsigned short f32_to_bf16_bits(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

// f32_to_f16_bits rounds f to IEEE half, to nearest with ties to even
// (subnormal halves kept, overflow to ±inf, NaN to NaN).
__device__ __forceinline__ unsigned short f32_to_f16_bits(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

// f16_bits_to_f32 widens a half exactly.
__device__ __forceinline__ float f16_bits_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// ToBF16, ToF16: for i < n: dst[i] = bf16(src[i]) / half(src[i]) (round
// to nearest even), the 16-bit copy of value the sampling kernels read.
extern "C" __global__ void f32_to_bf16(const float* src, bf16_t* dst, i64 n) {
  FOR_EACH(i, n) dst[i].bits = f32_to_bf16_bits(src[i]);
}

extern "C" __global__ void f32_to_f16(const float* src, f16_t* dst, i64 n) {
  FOR_EACH(i, n) dst[i].bits = f32_to_f16_bits(src[i]);
}

// unpack2 widens the two 16-bit values of the 32-bit word w to t[0] (the
// lower half: the lower address, little-endian) and t[1]. bfloat16 bits
// are the upper half of the float, exactly.
__device__ __forceinline__ void unpack2(const bf16_t*, unsigned w, float* t) {
  t[0] = __uint_as_float(w << 16);
  t[1] = __uint_as_float(w & 0xffff0000u);
}

__device__ __forceinline__ void unpack2(const f16_t*, unsigned w, float* t) {
  t[0] = f16_bits_to_f32((unsigned short)(w & 0xffffu));
  t[1] = f16_bits_to_f32((unsigned short)(w >> 16));
}

// load_vals sets t[k] = (float)p[k] for k < V. float: one float4 load for
// V = 4 (p 16-byte aligned), else V scalar loads. bf16_t, f16_t: one
// 16-byte load for V = 8 (p 16-byte aligned), one 8-byte load for V = 4
// (p 8-byte aligned); no other V.
template <int V>
__device__ __forceinline__ void load_vals(const float* p, float* t) {
  if (V == 4) {
    float4 q = __ldg(reinterpret_cast<const float4*>(p));
    t[0] = q.x;
    t[1] = q.y;
    t[2] = q.z;
    t[3] = q.w;
  } else {
    for (int k = 0; k < V; ++k) t[k] = __ldg(p + k);
  }
}

template <int V, typename T16>
__device__ __forceinline__ void load_vals16(const T16* p, float* t) {
  if (V == 8) {
    uint4 q = __ldg(reinterpret_cast<const uint4*>(p));
    unpack2(p, q.x, t);
    unpack2(p, q.y, t + 2);
    unpack2(p, q.z, t + 4);
    unpack2(p, q.w, t + 6);
  } else {
    uint2 q = __ldg(reinterpret_cast<const uint2*>(p));
    unpack2(p, q.x, t);
    unpack2(p, q.y, t + 2);
  }
}

template <int V>
__device__ __forceinline__ void load_vals(const bf16_t* p, float* t) {
  load_vals16<V>(p, t);
}

template <int V>
__device__ __forceinline__ void load_vals(const f16_t* p, float* t) {
  load_vals16<V>(p, t);
}

// corner_add adds w·value[row, col..col+V) to acc unless the corner
// (y, x) is outside level l or its row is padding.
template <int V, typename T>
__device__ __forceinline__ void corner_add(const T* v, const float* mask, const Levels& L, int l, int y, int x,
                                           float w, int stride, int col, float* acc) {
  if (y < 0 || x < 0 || y >= L.h[l] || x >= L.w[l]) return;
  i64 row = (i64)L.start[l] + (i64)y * L.w[l] + x;
  if (mask && mask[row] != 0.f) return;
  const T* p = v + row * stride + col;
  float t[V];
  load_vals<V>(p, t);
  for (int k = 0; k < V; ++k) acc[k] += w * t[k];
}

// sample_point adds a · bilinear(level l at normalized (locx, locy)) for
// V channels: the pixel is (locy·H − 0.5, locx·W − 0.5); a point with a
// coordinate ≤ −1 or ≥ the size adds nothing; corners outside add zero
// (grid_sample, bilinear, zeros, align_corners=False).
template <int V, typename T>
__device__ __forceinline__ void sample_point(const T* v, const float* mask, const Levels& L, int l, float locx,
                                             float locy, float a, int stride, int col, float* acc) {
  float fh = (float)L.h[l], fw = (float)L.w[l];
  float h = locy * fh - 0.5f, w = locx * fw - 0.5f;
  if (!(h > -1.f && w > -1.f && h < fh && w < fw)) return;
  int hl = (int)floorf(h), wl = (int)floorf(w);
  float lh = h - (float)hl, lw = w - (float)wl;
  float hh = 1.f - lh, hw = 1.f - lw;
  corner_add<V, T>(v, mask, L, l, hl, wl, hh * hw * a, stride, col, acc);
  corner_add<V, T>(v, mask, L, l, hl, wl + 1, hh * lw * a, stride, col, acc);
  corner_add<V, T>(v, mask, L, l, hl + 1, wl, lh * hw * a, stride, col, acc);
  corner_add<V, T>(v, mask, L, l, hl + 1, wl + 1, lh * lw * a, stride, col, acc);
}

// MSDeformCore: for n, q, m, d (S value rows of M·D channels, L levels, P points):
//   out[n, q, m·D + d] = Σ_l Σ_p attn[n, q, m, l, p] ·
//                        bilinear(value[n, :, m, d] on level l, loc[n, q, m, l, p, :])
// (with T 16-bit, value is the bf16 or half copy, each element widened to
// float; the sums are fp32 as for T = float).
template <int V, typename T>
__device__ void msdeform_core(const T* value, const float* loc, const float* attn, float* out, int N, int Q,
                              int M, int D, int P, const Levels& L) {
  int DV = D / V;
  i64 S = total_rows(L);
  int LP = L.n * P;
  FOR_EACH(i, (i64)N * Q * M * DV) {
    int dv = (int)(i % DV);
    i64 head = i / DV;  // (n·Q + q)·M + m
    int m = (int)(head % M);
    i64 n = head / ((i64)M * Q);
    const T* v = value + n * S * M * D;
    float acc[V];
    for (int k = 0; k < V; ++k) acc[k] = 0.f;
    const float* lc = loc + head * LP * 2;
    const float* at = attn + head * LP;
    for (int l = 0; l < L.n; ++l)
      for (int p = 0; p < P; ++p) {
        int j = l * P + p;
        sample_point<V, T>(v, nullptr, L, l, lc[2 * j], lc[2 * j + 1], at[j], M * D, m * D + dv * V, acc);
      }
    float* o = out + head * D + dv * V;
    for (int k = 0; k < V; ++k) o[k] = acc[k];
  }
}

extern "C" __global__ void msdeform_core_v4(const float* value, const float* loc, const float* attn, float* out, int N,
                                            int Q, int M, int D, int P, Levels L) {
  msdeform_core<4, float>(value, loc, attn, out, N, Q, M, D, P, L);
}

extern "C" __global__ void msdeform_core_v1(const float* value, const float* loc, const float* attn, float* out, int N,
                                            int Q, int M, int D, int P, Levels L) {
  msdeform_core<1, float>(value, loc, attn, out, N, Q, M, D, P, L);
}

// The 16-bit variants: value is [N, S, M·D] in bf16_t or f16_t (from
// f32_to_bf16 / f32_to_f16), D % V == 0, V = 8 or 4. (Written out, not
// generated by a macro: a kernel whose body is one source line crashes
// NVRTC 11.8's sm_90 code generator under -lineinfo.)
extern "C" __global__ void msdeform_core_bf16_v8(const bf16_t* value, const float* loc, const float* attn, float* out,
                                                 int N, int Q, int M, int D, int P, Levels L) {
  msdeform_core<8, bf16_t>(value, loc, attn, out, N, Q, M, D, P, L);
}

extern "C" __global__ void msdeform_core_bf16_v4(const bf16_t* value, const float* loc, const float* attn, float* out,
                                                 int N, int Q, int M, int D, int P, Levels L) {
  msdeform_core<4, bf16_t>(value, loc, attn, out, N, Q, M, D, P, L);
}

extern "C" __global__ void msdeform_core_f16_v8(const f16_t* value, const float* loc, const float* attn, float* out,
                                                int N, int Q, int M, int D, int P, Levels L) {
  msdeform_core<8, f16_t>(value, loc, attn, out, N, Q, M, D, P, L);
}

extern "C" __global__ void msdeform_core_f16_v4(const f16_t* value, const float* loc, const float* attn, float* out,
                                                int N, int Q, int M, int D, int P, Levels L) {
  msdeform_core<4, f16_t>(value, loc, attn, out, N, Q, M, D, P, L);
}

// MSDeformSample (MSDeformAttn between its projections): per (n, q, m),
//   A[l, p] = softmax over the L·P logits[n, q, m·L·P + l·P + p]
//   R = 2: loc = ref[n, q, l] + off[n, q, m, l, p] / (W_l, H_l)
//   R = 4: loc = ref[n, q, l, :2] + off[n, q, m, l, p] / P · ref[n, q, l, 2:] · 0.5
// then MSDeformCore with those weights and locations; rows whose padding
// mask [N, S] is nonzero read as zero (mask may be null).
template <int V, typename T>
__device__ void msdeform_sample(const T* value, const float* ref, const float* off, const float* logits,
                                const float* mask, float* out, int N, int Q, int M, int D, int P, int R,
                                const Levels& L) {
  int DV = D / V;
  i64 S = total_rows(L);
  int LP = L.n * P;
  FOR_EACH(i, (i64)N * Q * M * DV) {
    int dv = (int)(i % DV);
    i64 head = i / DV;
    int m = (int)(head % M);
    i64 nq = head / M;
    i64 n = nq / Q;
    const T* v = value + n * S * M * D;
    const float* mk = mask ? mask + n * S : nullptr;
    const float* lg = logits + head * LP;
    float mx = NEG_INF;
    for (int j = 0; j < LP; ++j) mx = fmaxf(mx, lg[j]);
    float sum = 0.f;
    for (int j = 0; j < LP; ++j) sum += expf(lg[j] - mx);
    float inv = 1.f / sum;
    const float* rr = ref + nq * L.n * R;
    const float* o2 = off + head * LP * 2;
    float acc[V];
    for (int k = 0; k < V; ++k) acc[k] = 0.f;
    for (int l = 0; l < L.n; ++l) {
      float rx = rr[l * R], ry = rr[l * R + 1];
      for (int p = 0; p < P; ++p) {
        int j = l * P + p;
        float ox = o2[2 * j], oy = o2[2 * j + 1];
        float x, y;
        if (R == 4) {
          x = rx + ox / (float)P * rr[l * 4 + 2] * 0.5f;
          y = ry + oy / (float)P * rr[l * 4 + 3] * 0.5f;
        } else {
          x = rx + ox / (float)L.w[l];
          y = ry + oy / (float)L.h[l];
        }
        float a = expf(lg[j] - mx) * inv;
        sample_point<V, T>(v, mk, L, l, x, y, a, M * D, m * D + dv * V, acc);
      }
    }
    float* o = out + head * D + dv * V;
    for (int k = 0; k < V; ++k) o[k] = acc[k];
  }
}

extern "C" __global__ void msdeform_sample_v4(const float* value, const float* ref, const float* off,
                                              const float* logits, const float* mask, float* out, int N, int Q, int M,
                                              int D, int P, int R, Levels L) {
  msdeform_sample<4, float>(value, ref, off, logits, mask, out, N, Q, M, D, P, R, L);
}

extern "C" __global__ void msdeform_sample_v1(const float* value, const float* ref, const float* off,
                                              const float* logits, const float* mask, float* out, int N, int Q, int M,
                                              int D, int P, int R, Levels L) {
  msdeform_sample<1, float>(value, ref, off, logits, mask, out, N, Q, M, D, P, R, L);
}

// The 16-bit variants, as for MSDeformCore.
extern "C" __global__ void msdeform_sample_bf16_v8(const bf16_t* value, const float* ref, const float* off,
                                                   const float* logits, const float* mask, float* out, int N, int Q,
                                                   int M, int D, int P, int R, Levels L) {
  msdeform_sample<8, bf16_t>(value, ref, off, logits, mask, out, N, Q, M, D, P, R, L);
}

extern "C" __global__ void msdeform_sample_bf16_v4(const bf16_t* value, const float* ref, const float* off,
                                                   const float* logits, const float* mask, float* out, int N, int Q,
                                                   int M, int D, int P, int R, Levels L) {
  msdeform_sample<4, bf16_t>(value, ref, off, logits, mask, out, N, Q, M, D, P, R, L);
}

extern "C" __global__ void msdeform_sample_f16_v8(const f16_t* value, const float* ref, const float* off,
                                                  const float* logits, const float* mask, float* out, int N, int Q,
                                                  int M, int D, int P, int R, Levels L) {
  msdeform_sample<8, f16_t>(value, ref, off, logits, mask, out, N, Q, M, D, P, R, L);
}

extern "C" __global__ void msdeform_sample_f16_v4(const f16_t* value, const float* ref, const float* off,
                                                  const float* logits, const float* mask, float* out, int N, int Q,
                                                  int M, int D, int P, int R, Levels L) {
  msdeform_sample<4, f16_t>(value, ref, off, logits, mask, out, N, Q, M, D, P, R, L);
}
