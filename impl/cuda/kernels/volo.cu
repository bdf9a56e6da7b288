// VOLO's nodes: channels-last pooling and patch rows, outlook attention's
// softmax and fold, the class-attention core, tokens and the aux head.

// AvgPoolNHWC (kernel = stride = K, ceil mode, no padding): for b, oy, ox, c:
//   out[b, oy, ox, c] = mean of x[b, y, x, c] over y in [oy·K, min(oy·K + K, H)), x likewise
extern "C" __global__ void avg_pool_nhwc_f32(const float* x, float* out, int B, int H, int W, int C, int K) {
  int OH = (H + K - 1) / K, OW = (W + K - 1) / K;
  FOR_EACH(i, (i64)B * OH * OW * C) {
    int c = (int)(i % C);
    i64 t = i / C;
    int ox = (int)(t % OW);
    t /= OW;
    int oy = (int)(t % OH);
    i64 b = t / OH;
    int y0 = oy * K, y1 = min(y0 + K, H), x0 = ox * K, x1 = min(x0 + K, W);
    float s = 0.f;
    for (int y = y0; y < y1; ++y)
      for (int xx = x0; xx < x1; ++xx) s += x[((b * H + y) * W + xx) * C + c];
    out[i] = s * (float)(1.0 / (double)((y1 - y0) * (x1 - x0)));
  }
}

// PatchRowsNHWC: for b, gy, gx, c, ky, kx:
//   out[b, gy, gx, c·P·P + ky·P + kx] = x[b, gy·P + ky, gx·P + kx, c]
extern "C" __global__ void patch_rows_nhwc_f32(const float* x, float* out, int B, int H, int W, int C, int P) {
  int GH = H / P, GW = W / P, K = C * P * P;
  FOR_EACH(i, (i64)B * GH * GW * K) {
    int k = (int)(i % K);
    i64 t = i / K;
    int gx = (int)(t % GW);
    t /= GW;
    int gy = (int)(t % GH);
    i64 b = t / GH;
    int c = k / (P * P), ky = (k / P) % P, kx = k % P;
    out[i] = x[((b * H + gy * P + ky) * W + gx * P + kx) * C + c];
  }
}

// Softmax of short rows, one thread per row: for r < rows of n values,
//   out[r, j] = exp(scale·x[r, j] − m) / Σ exp(scale·x[r, :] − m),  m = max_j scale·x[r, j]
extern "C" __global__ void softmax_short_f32(const float* x, float* out, i64 rows, int n, float scale) {
  FOR_EACH(r, rows) {
    const float* a = x + r * n;
    float* o = out + r * n;
    float m = NEG_INF;
    for (int j = 0; j < n; ++j) m = fmaxf(m, scale * a[j]);
    float s = 0.f;
    for (int j = 0; j < n; ++j) {
      float e = expf(scale * a[j] - m);
      o[j] = e;
      s += e;
    }
    float inv = 1.f / s;
    for (int j = 0; j < n; ++j) o[j] *= inv;
  }
}

// OutlookCore fold as a gather, from the softmaxed attention A
// [B, GH, GW, Heads, K², K²]: for b, y, x, c = h·D + d:
//   out[b, y, x, c] = Σ over windows (wy, wx) and positions i = (ky, kx) with
//                     wy·S − P + ky = y and wx·S − P + kx = x, and j = (jy, jx) with
//                     (sy, sx) = (wy·S − P + jy, wx·S − P + jx) inside the image,
//                     of A[b, wy, wx, h, i, j] · v[b, sy, sx, c]
// Windows are visited in increasing (wy, wx), as the scatter form adds them.
extern "C" __global__ void outlook_fold_f32(const float* A, const float* v, float* out, int B, int H, int W, int C,
                                            int heads, int K, int P, int S) {
  int GH = (H + 2 * P - K) / S + 1, GW = (W + 2 * P - K) / S + 1;
  int D = C / heads, K2 = K * K;
  FOR_EACH(i, (i64)B * H * W * C) {
    int c = (int)(i % C);
    i64 t = i / C;
    int x = (int)(t % W);
    t /= W;
    int y = (int)(t % H);
    i64 b = t / H;
    int h = c / D;
    float acc = 0.f;
    for (int ky = K - 1; ky >= 0; --ky) {
      int ty = y + P - ky;
      if (ty < 0 || ty % S != 0 || ty / S >= GH) continue;
      int wy = ty / S;
      for (int kx = K - 1; kx >= 0; --kx) {
        int tx = x + P - kx;
        if (tx < 0 || tx % S != 0 || tx / S >= GW) continue;
        int wx = tx / S;
        const float* a = A + ((((b * GH + wy) * GW + wx) * heads + h) * K2 + ky * K + kx) * K2;
        for (int jy = 0; jy < K; ++jy) {
          int sy = wy * S - P + jy;
          if (sy < 0 || sy >= H) continue;
          for (int jx = 0; jx < K; ++jx) {
            int sx = wx * S - P + jx;
            if (sx < 0 || sx >= W) continue;
            acc += a[jy * K + jx] * v[((b * H + sy) * W + sx) * C + c];
          }
        }
      }
    }
    out[i] = acc;
  }
}

// for b, i < n: out[b·n + i] = x[b·n + i] + y[i]
extern "C" __global__ void add_broadcast_f32(const float* x, const float* y, float* out, int B, i64 n) {
  FOR_EACH(i, (i64)B * n) out[i] = x[i] + y[i % n];
}

// PrependToken: for b, t ≤ N, e: out[b, t, e] = t == 0 ? tok[e] : x[b, t − 1, e]
extern "C" __global__ void prepend_token_f32(const float* x, const float* tok, float* out, int B, int N, int E) {
  i64 T = (i64)N + 1;
  FOR_EACH(i, (i64)B * T * E) {
    i64 e = i % E, t = (i / E) % T, b = i / (E * T);
    out[i] = t == 0 ? tok[e] : x[(b * N + t - 1) * E + e];
  }
}

// PutToken: for b, t, e: out[b, t, e] = t == idx ? tok[b, 0, e] : x[b, t, e]
extern "C" __global__ void put_token_f32(const float* x, const float* tok, float* out, int B, int N, int E, int idx) {
  FOR_EACH(i, (i64)B * N * E) {
    i64 e = i % E, t = (i / E) % N, b = i / ((i64)E * N);
    out[i] = t == idx ? tok[b * E + e] : x[i];
  }
}

// ClassAttnCore, one block per (b, h), scores in dynamic shared memory (N floats):
//   s[j] = scale · Σ_d q[b, 0, h·D + d] · kv[b, j, h·D + d];  p = softmax(s)
//   out[b, 0, h·D + d] = Σ_j p[j] · kv[b, j, H·D + h·D + d]
extern "C" __global__ void class_attn_f32(const float* q, const float* kv, float* out, int N, int heads, int D,
                                          float scale) {
  extern __shared__ float s[];
  int b = blockIdx.x / heads, h = blockIdx.x % heads;
  int E = heads * D;
  const float* qh = q + (i64)b * E + h * D;
  const float* base = kv + (i64)b * N * 2 * E;
  for (int j = threadIdx.x; j < N; j += blockDim.x) {
    const float* k = base + (i64)j * 2 * E + h * D;
    float a = 0.f;
    for (int d = 0; d < D; ++d) a += qh[d] * k[d];
    s[j] = scale * a;
  }
  __syncthreads();
  float m = NEG_INF;
  for (int j = threadIdx.x; j < N; j += blockDim.x) m = fmaxf(m, s[j]);
  m = block_max(m);
  float sum = 0.f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) {
    float e = expf(s[j] - m);
    s[j] = e;
    sum += e;
  }
  float inv = 1.f / block_sum(sum);
  __syncthreads();
  for (int d = 0; d < D; ++d) {
    float part = 0.f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) part += s[j] * base[(i64)j * 2 * E + E + h * D + d];
    float tot = block_sum(part);
    if (threadIdx.x == 0) out[(i64)b * E + h * D + d] = tot * inv;
  }
}

// AuxMerge: for b, c: out[b, c] = cls[b, 0, c] + 0.5 · max over n = 1 … N−1 of aux[b, n, c]
// (a NaN propagates, as torch.max)
extern "C" __global__ void aux_merge_f32(const float* cls, const float* aux, float* out, int B, int N, int C) {
  FOR_EACH(i, (i64)B * C) {
    i64 b = i / C;
    int c = (int)(i % C);
    const float* a = aux + b * N * C + c;
    float m = a[C];
    for (int n = 2; n < N; ++n) {
      float v = a[(i64)n * C];
      if (v > m || v != v) m = v;
    }
    out[i] = cls[i] + 0.5f * m;
  }
}
