// Elementwise ops and plain data movement. Each kernel's comment is the
// equivalent loop.

// for i < n: out[i] = a[i] + b[i]
extern "C" __global__ void add_f32(const float* a, const float* b, float* out, i64 n) {
  FOR_EACH(i, n) out[i] = a[i] + b[i];
}

// for i < n: out[i] = (a[i] + b[i]) · 0.5
extern "C" __global__ void average_f32(const float* a, const float* b, float* out, i64 n) {
  FOR_EACH(i, n) out[i] = (a[i] + b[i]) * 0.5f;
}

// for i < n: out[i] = max(x[i], 0)
extern "C" __global__ void relu_f32(const float* x, float* out, i64 n) {
  FOR_EACH(i, n) out[i] = fmaxf(x[i], 0.f);
}

// for i < n: out[i] = 1 / (1 + exp(−x[i]))   (in double, rounded once)
extern "C" __global__ void sigmoid_f32(const float* x, float* out, i64 n) {
  FOR_EACH(i, n) out[i] = sigmoid_d(x[i]);
}

// for r < rows, c < cols: dst[r·dld + c] = src[(r mod srcRows)·sld + c]
// (srcRows 0: no wrap). Token selection, column slices, batch repeats.
extern "C" __global__ void copy_rows_f32(float* dst, i64 dld, const float* src, i64 sld, i64 rows, i64 cols,
                                         i64 srcRows) {
  FOR_EACH(i, rows * cols) {
    i64 r = i / cols, c = i % cols;
    i64 sr = srcRows > 0 ? r % srcRows : r;
    dst[r * dld + c] = src[sr * sld + c];
  }
}

// TokensPrefix: for b, t < T, e < E (T = P + N):
//   out[b, t, e] = (t < P ? prefix_t[e] : patches[b, t − P, e]) + pos[t, e]
// with prefix_0 = cls and prefix_1 = dist.
extern "C" __global__ void tokens_prefix_f32(const float* patches, const float* cls, const float* dist,
                                             const float* pos, float* out, int B, int N, int E, int P) {
  i64 T = (i64)N + P;
  FOR_EACH(i, (i64)B * T * E) {
    i64 e = i % E, t = (i / E) % T, b = i / (E * T);
    float v = t == 0 && P > 0 ? cls[e] : (t == 1 && P > 1 ? dist[e] : patches[(b * N + t - P) * E + e]);
    out[i] = v + pos[t * E + e];
  }
}

// Batched transpose: for b, r < R, c < C: dst[b·dbs + c·R + r] = src[b·sbs + r·C + c],
// through a 32×33 shared tile (block 32×8).
extern "C" __global__ void transpose_f32(float* dst, i64 dbs, const float* src, i64 sbs, int R, int C) {
  __shared__ float tile[32][33];
  i64 b = blockIdx.z;
  int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  const float* s = src + b * sbs;
  float* d = dst + b * dbs;
  for (int j = threadIdx.y; j < 32; j += 8) {
    int r = r0 + j, c = c0 + threadIdx.x;
    if (r < R && c < C) tile[j][threadIdx.x] = s[(i64)r * C + c];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < 32; j += 8) {
    int c = c0 + j, r = r0 + threadIdx.x;
    if (r < R && c < C) d[(i64)c * R + r] = tile[threadIdx.x][j];
  }
}

// LevelEmbed: for n, s < S, d < D: out[n, s, d] = pos[n, s, d] + emb[level(s), d]
extern "C" __global__ void level_embed_f32(const float* pos, const float* emb, float* out, int N, int D, Levels L) {
  i64 S = total_rows(L);
  FOR_EACH(i, (i64)N * S * D) {
    i64 d = i % D, s = (i / D) % S;
    out[i] = pos[i] + emb[(i64)level_of(L, s) * D + d];
  }
}
