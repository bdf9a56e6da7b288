// Multi-scale deformable attention sampling (Deformable DETR), channel-
// vectorized: one thread per (n, q, m) and V consecutive channels of the
// head, so that the threads of a warp read consecutive channels of each
// corner row (float4 loads when V = 4). Every thread recomputes the
// locations and corner weights of its head's L·P points, which are shared
// by its channels.

// corner_add adds w·value[row, col..col+V) to acc unless the corner
// (y, x) is outside level l or its row is padding.
template <int V>
__device__ __forceinline__ void corner_add(const float* v, const float* mask, const Levels& L, int l, int y, int x,
                                           float w, int stride, int col, float* acc) {
  if (y < 0 || x < 0 || y >= L.h[l] || x >= L.w[l]) return;
  i64 row = (i64)L.start[l] + (i64)y * L.w[l] + x;
  if (mask && mask[row] != 0.f) return;
  const float* p = v + row * stride + col;
  if (V == 4) {
    float4 t = __ldg(reinterpret_cast<const float4*>(p));
    acc[0] += w * t.x;
    acc[1] += w * t.y;
    acc[2] += w * t.z;
    acc[3] += w * t.w;
  } else {
    for (int k = 0; k < V; ++k) acc[k] += w * __ldg(p + k);
  }
}

// sample_point adds a · bilinear(level l at normalized (locx, locy)) for
// V channels: the pixel is (locy·H − 0.5, locx·W − 0.5); a point with a
// coordinate ≤ −1 or ≥ the size adds nothing; corners outside add zero
// (grid_sample, bilinear, zeros, align_corners=False).
template <int V>
__device__ __forceinline__ void sample_point(const float* v, const float* mask, const Levels& L, int l, float locx,
                                             float locy, float a, int stride, int col, float* acc) {
  float fh = (float)L.h[l], fw = (float)L.w[l];
  float h = locy * fh - 0.5f, w = locx * fw - 0.5f;
  if (!(h > -1.f && w > -1.f && h < fh && w < fw)) return;
  int hl = (int)floorf(h), wl = (int)floorf(w);
  float lh = h - (float)hl, lw = w - (float)wl;
  float hh = 1.f - lh, hw = 1.f - lw;
  corner_add<V>(v, mask, L, l, hl, wl, hh * hw * a, stride, col, acc);
  corner_add<V>(v, mask, L, l, hl, wl + 1, hh * lw * a, stride, col, acc);
  corner_add<V>(v, mask, L, l, hl + 1, wl, lh * hw * a, stride, col, acc);
  corner_add<V>(v, mask, L, l, hl + 1, wl + 1, lh * lw * a, stride, col, acc);
}

// MSDeformCore: for n, q, m, d (S value rows of M·D channels, L levels, P points):
//   out[n, q, m·D + d] = Σ_l Σ_p attn[n, q, m, l, p] ·
//                        bilinear(value[n, :, m, d] on level l, loc[n, q, m, l, p, :])
template <int V>
__device__ void msdeform_core(const float* value, const float* loc, const float* attn, float* out, int N, int Q,
                              int M, int D, int P, const Levels& L) {
  int DV = D / V;
  i64 S = total_rows(L);
  int LP = L.n * P;
  FOR_EACH(i, (i64)N * Q * M * DV) {
    int dv = (int)(i % DV);
    i64 head = i / DV;  // (n·Q + q)·M + m
    int m = (int)(head % M);
    i64 n = head / ((i64)M * Q);
    const float* v = value + n * S * M * D;
    float acc[V];
    for (int k = 0; k < V; ++k) acc[k] = 0.f;
    const float* lc = loc + head * LP * 2;
    const float* at = attn + head * LP;
    for (int l = 0; l < L.n; ++l)
      for (int p = 0; p < P; ++p) {
        int j = l * P + p;
        sample_point<V>(v, nullptr, L, l, lc[2 * j], lc[2 * j + 1], at[j], M * D, m * D + dv * V, acc);
      }
    float* o = out + head * D + dv * V;
    for (int k = 0; k < V; ++k) o[k] = acc[k];
  }
}

extern "C" __global__ void msdeform_core_v4(const float* value, const float* loc, const float* attn, float* out, int N,
                                            int Q, int M, int D, int P, Levels L) {
  msdeform_core<4>(value, loc, attn, out, N, Q, M, D, P, L);
}

extern "C" __global__ void msdeform_core_v1(const float* value, const float* loc, const float* attn, float* out, int N,
                                            int Q, int M, int D, int P, Levels L) {
  msdeform_core<1>(value, loc, attn, out, N, Q, M, D, P, L);
}

// MSDeformSample (MSDeformAttn between its projections): per (n, q, m),
//   A[l, p] = softmax over the L·P logits[n, q, m·L·P + l·P + p]
//   R = 2: loc = ref[n, q, l] + off[n, q, m, l, p] / (W_l, H_l)
//   R = 4: loc = ref[n, q, l, :2] + off[n, q, m, l, p] / P · ref[n, q, l, 2:] · 0.5
// then MSDeformCore with those weights and locations; rows whose padding
// mask [N, S] is nonzero read as zero (mask may be null).
template <int V>
__device__ void msdeform_sample(const float* value, const float* ref, const float* off, const float* logits,
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
    const float* v = value + n * S * M * D;
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
        sample_point<V>(v, mk, L, l, x, y, a, M * D, m * D + dv * V, acc);
      }
    }
    float* o = out + head * D + dv * V;
    for (int k = 0; k < V; ++k) o[k] = acc[k];
  }
}

extern "C" __global__ void msdeform_sample_v4(const float* value, const float* ref, const float* off,
                                              const float* logits, const float* mask, float* out, int N, int Q, int M,
                                              int D, int P, int R, Levels L) {
  msdeform_sample<4>(value, ref, off, logits, mask, out, N, Q, M, D, P, R, L);
}

extern "C" __global__ void msdeform_sample_v1(const float* value, const float* ref, const float* off,
                                              const float* logits, const float* mask, float* out, int N, int Q, int M,
                                              int D, int P, int R, Levels L) {
  msdeform_sample<1>(value, ref, off, logits, mask, out, N, Q, M, D, P, R, L);
}
