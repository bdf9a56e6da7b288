// Deformable DETR's small nodes around its transformer and backbone. Each
// follows the CPU backend's arithmetic (float32, with exp/log/sin/cos in
// double where it uses float64) so both agree to a few ulp.

// valid_extent counts the unpadded rows (down column 0) and columns (along
// row 0) of an h×w mask (nonzero = padded).
__device__ void valid_extent(const float* m, int h, int w, int* rows, int* cols) {
  int r = 0, c = 0;
  for (int y = 0; y < h; ++y) r += m[(i64)y * w] == 0.f;
  for (int x = 0; x < w; ++x) c += m[x] == 0.f;
  *rows = r;
  *cols = c;
}

// ValidRatios: for n, l: out[n, l] = (valid_W / W_l, valid_H / H_l) of the level's
// mask (mask null: 1, 1).
extern "C" __global__ void valid_ratios_f32(const float* mask, float* out, int N, Levels L) {
  i64 S = total_rows(L);
  FOR_EACH(i, (i64)N * L.n) {
    int l = (int)(i % L.n);
    i64 n = i / L.n;
    int vh = L.h[l], vw = L.w[l];
    if (mask) valid_extent(mask + n * S + L.start[l], L.h[l], L.w[l], &vh, &vw);
    out[i * 2] = (float)vw / (float)L.w[l];
    out[i * 2 + 1] = (float)vh / (float)L.h[l];
  }
}

// EncoderRefPoints: for n, s (pixel (r, c) of level l), l2:
//   out[n, s, l2] = ((c + 0.5) / (vr[n, l, 0]·W_l) · vr[n, l2, 0], (r + 0.5) / (vr[n, l, 1]·H_l) · vr[n, l2, 1])
extern "C" __global__ void encoder_ref_points_f32(const float* vr, float* out, int N, Levels L) {
  i64 S = total_rows(L);
  FOR_EACH(i, (i64)N * S * L.n) {
    int l2 = (int)(i % L.n);
    i64 s = (i / L.n) % S, n = i / (L.n * S);
    int l = level_of(L, s);
    int pix = (int)(s - L.start[l]);
    int r = pix / L.w[l], c = pix % L.w[l];
    const float* v = vr + n * L.n * 2;
    float dx = v[l * 2] * (float)L.w[l], dy = v[l * 2 + 1] * (float)L.h[l];
    float rx = ((float)c + 0.5f) / dx, ry = ((float)r + 0.5f) / dy;
    out[i * 2] = rx * v[l2 * 2];
    out[i * 2 + 1] = ry * v[l2 * 2 + 1];
  }
}

// ScaleRefs: for n, q, l, j < R: out[n, q, l, j] = ref[n, q, j] · vr[n, l, j mod 2]
extern "C" __global__ void scale_refs_f32(const float* ref, const float* vr, float* out, int N, int Q, int Lv, int R) {
  FOR_EACH(i, (i64)N * Q * Lv * R) {
    int j = (int)(i % R);
    i64 t = i / R;
    int l = (int)(t % Lv);
    i64 nq = t / Lv, n = nq / Q;
    out[i] = ref[nq * R + j] * vr[(n * Lv + l) * 2 + j % 2];
  }
}

__device__ __forceinline__ bool inside_prop(float p) { return p > 0.01f && p < 0.99f; }

// Proposals: for n, s (pixel (r, c) of level l, valid extent vh×vw from the mask):
//   p = ((c + 0.5)/vw, (r + 0.5)/vh, 0.05·2^l, 0.05·2^l)
//   out[n, s, :] = log(p / (1 − p)) if every p_j is in (0.01, 0.99) and s is not padding, else +∞
extern "C" __global__ void proposals_f32(const float* mask, float* out, int N, Levels L) {
  i64 S = total_rows(L);
  FOR_EACH(i, (i64)N * S) {
    i64 s = i % S, n = i / S;
    int l = level_of(L, s);
    int pix = (int)(s - L.start[l]);
    int r = pix / L.w[l], c = pix % L.w[l];
    int vh = L.h[l], vw = L.w[l];
    bool ok = true;
    if (mask) {
      valid_extent(mask + n * S + L.start[l], L.h[l], L.w[l], &vh, &vw);
      ok = mask[i] == 0.f;
    }
    float wh = 0.05f * (float)(1 << l);
    float p[4] = {((float)c + 0.5f) / (float)vw, ((float)r + 0.5f) / (float)vh, wh, wh};
    for (int j = 0; j < 4; ++j) ok = ok && inside_prop(p[j]);
    for (int j = 0; j < 4; ++j) out[i * 4 + j] = ok ? (float)log((double)(p[j] / (1.f - p[j]))) : POS_INF;
  }
}

// ZeroInvalid: for r < rows, d < D: out[r, d] = (any prop[r, :] infinite) ? 0 : x[r, d]
extern "C" __global__ void zero_invalid_f32(const float* x, const float* prop, float* out, i64 rows, int D) {
  FOR_EACH(i, rows * D) {
    const float* p = prop + (i / D) * 4;
    bool bad = isinf(p[0]) || isinf(p[1]) || isinf(p[2]) || isinf(p[3]);
    out[i] = bad ? 0.f : x[i];
  }
}

// Ranks for a stable descending sort, per image y = blockIdx.y of n items
// (item i's score at score[(y·n + i)·stride]):
//   rank[y, i] = #{j : s_j > s_i or (s_j = s_i and j < i)}
// Blocks of 256 threads compare against tiles of 256 scores in shared memory.
extern "C" __global__ void rank_desc_f32(const float* score, int stride, int n, int* rank) {
  __shared__ float tile[256];
  i64 y = blockIdx.y;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float* s = score + y * (i64)n * stride;
  float si = i < n ? s[(i64)i * stride] : 0.f;
  int r = 0;
  for (int t0 = 0; t0 < n; t0 += 256) {
    int j = t0 + threadIdx.x;
    if (j < n) tile[threadIdx.x] = s[(i64)j * stride];
    __syncthreads();
    int lim = min(256, n - t0);
    for (int jj = 0; jj < lim; ++jj) {
      float sj = tile[jj];
      r += (sj > si) || (sj == si && t0 + jj < i);
    }
    __syncthreads();
  }
  if (i < n) rank[y * n + i] = r;
}

// TopKRows gather: for n, i < S with rank[n, i] < K:
//   out[n, rank, :] = vals[n, i, :]   (W values)
extern "C" __global__ void topk_gather_f32(const int* rank, const float* vals, float* out, int N, int S, int K, int W) {
  FOR_EACH(t, (i64)N * S) {
    int r = rank[t];
    if (r >= K) continue;
    i64 n = t / S;
    const float* src = vals + t * W;
    float* dst = out + (n * K + r) * W;
    for (int w = 0; w < W; ++w) dst[w] = src[w];
  }
}

// PostProcess, after prob = sigmoid(logits) and its ranks: for n, i < Q·C with rank r < K:
//   scores[n, r] = prob[n, i];  labels[n, r] = i mod C
//   boxes[n, r] = (cx − w/2, cy − h/2, cx + w/2, cy + h/2) of box[n, i / C] scaled by the image's
//   valid width and height (unpadded columns of row 0, rows of column 0; W and H without a mask)
extern "C" __global__ void post_process_f32(const float* prob, const int* rank, const float* boxes, const float* mask,
                                            float* scores, float* labels, float* out4, int N, int Q, int C, int K,
                                            int H, int W) {
  i64 QC = (i64)Q * C;
  FOR_EACH(t, (i64)N * QC) {
    int r = rank[t];
    if (r >= K) continue;
    i64 n = t / QC, i = t % QC;
    float w = (float)W, h = (float)H;
    if (mask) {
      int vh, vw;
      valid_extent(mask + n * H * W, H, W, &vh, &vw);
      w = (float)vw;
      h = (float)vh;
    }
    i64 o = n * K + r;
    scores[o] = prob[t];
    labels[o] = (float)(i % C);
    const float* b = boxes + (n * Q + i / C) * 4;
    float cx = b[0], cy = b[1], bw = b[2], bh = b[3];
    out4[o * 4] = (cx - 0.5f * bw) * w;
    out4[o * 4 + 1] = (cy - 0.5f * bh) * h;
    out4[o * 4 + 2] = (cx + 0.5f * bw) * w;
    out4[o * 4 + 3] = (cy + 0.5f * bh) * h;
  }
}

// ProposalPosEmbed: for r, k < 4, j < 128 step 2, p = sigmoid(x[r, k])·2π:
//   out[r, 128·k + j] = sin(p / dim_t[j]);  out[r, 128·k + j + 1] = cos(p / dim_t[j + 1])
extern "C" __global__ void proposal_pos_embed_f32(const float* x, float* out, i64 rows, SineTable dt) {
  FOR_EACH(i, rows * 512) {
    int j = (int)(i % 128);
    i64 rk = i / 128;
    float p = sigmoid_d(x[rk]) * 6.28318530717958647692f;
    out[i] = (j & 1) ? (float)cos((double)(p / dt.v[j])) : (float)sin((double)(p / dt.v[j]));
  }
}

// nearest_index is F.interpolate's nearest source index for output i of
// in → out: min(⌊i·(in/out)⌋, in − 1), the ratio in float32.
__device__ __forceinline__ int nearest_index(int i, int in, int out) {
  if (in == out) return i;
  float scale = (float)in / (float)out;
  return min((int)((float)i * scale), in - 1);
}

// LevelMasks: for n, s (pixel (r, c) of level l):
//   out[n, s] = mask[n, nearest(r, H → H_l), nearest(c, W → W_l)] != 0 ? 1 : 0
extern "C" __global__ void level_masks_f32(const float* mask, float* out, int N, int H, int W, Levels L) {
  i64 S = total_rows(L);
  FOR_EACH(i, (i64)N * S) {
    i64 s = i % S, n = i / S;
    int l = level_of(L, s);
    int pix = (int)(s - L.start[l]);
    int r = nearest_index(pix / L.w[l], H, L.h[l]), c = nearest_index(pix % L.w[l], W, L.w[l]);
    out[i] = mask[(n * H + r) * W + c] != 0.f ? 1.f : 0.f;
  }
}

// Sine-embedding coordinates: for n, s (pixel (r, c) of level l), with
// unpadded = (mask null or mask[n, s'] == 0) for the level's pixels s':
//   ey = (#unpadded in column c, rows 0..r − 0.5) / (#unpadded in column c + 1e-6) · 2π
//   ex = (#unpadded in row r, columns 0..c − 0.5) / (#unpadded in row r + 1e-6) · 2π
//   emb[n, s] = (ey, ex)
extern "C" __global__ void sine_coords_f32(const float* mask, float* emb, int N, Levels L, float off) {
  i64 S = total_rows(L);
  FOR_EACH(i, (i64)N * S) {
    i64 s = i % S, n = i / S;
    int l = level_of(L, s);
    int w = L.w[l], h = L.h[l];
    int pix = (int)(s - L.start[l]);
    int r = pix / w, c = pix % w;
    const float* m = mask ? mask + n * S + L.start[l] : nullptr;
    float ycum = 0.f, ytot = 0.f, xcum = 0.f, xtot = 0.f;
    for (int y = 0; y < h; ++y) {
      float v = (m && m[(i64)y * w + c] != 0.f) ? 0.f : 1.f;
      ytot += v;
      if (y <= r) ycum += v;
    }
    for (int x = 0; x < w; ++x) {
      float v = (m && m[(i64)r * w + x] != 0.f) ? 0.f : 1.f;
      xtot += v;
      if (x <= c) xcum += v;
    }
    const float scale = 6.28318530717958647692f;
    emb[i * 2] = (ycum - off) / (ytot + 1e-6f) * scale;
    emb[i * 2 + 1] = (xcum - off) / (xtot + 1e-6f) * scale;
  }
}

// PositionSine from the coordinates: for row t < rows, j < 128:
//   out[t, j]       = j even ? sin(ey / dim_t[j]) : cos(ey / dim_t[j])
//   out[t, 128 + j] = the same with ex
extern "C" __global__ void position_sine_f32(const float* emb, float* out, i64 rows, SineTable dt) {
  FOR_EACH(i, rows * 256) {
    int ch = (int)(i % 256);
    i64 t = i / 256;
    float e = emb[t * 2 + (ch >= 128)];
    int j = ch % 128;
    float a = e / dt.v[j];
    out[i] = (j & 1) ? (float)cos((double)a) : (float)sin((double)a);
  }
}

// inverse_sigmoid with eps 1e-5: x clamped to [0, 1], log(max(x, eps) / max(1 − x, eps)).
__device__ __forceinline__ float inverse_sigmoid(float x) {
  x = fminf(fmaxf(x, 0.f), 1.f);
  return (float)log((double)fmaxf(x, 1e-5f) / (double)fmaxf(1.f - x, 1e-5f));
}

// BoxDecode: for r, j < 4: out[r, j] = sigmoid(t[r, j] + (j < R ? inverse_sigmoid(ref[r, j]) : 0))
extern "C" __global__ void box_decode_f32(const float* t, const float* ref, float* out, i64 rows, int R) {
  FOR_EACH(i, rows * 4) {
    int j = (int)(i % 4);
    float v = t[i];
    if (j < R) v += inverse_sigmoid(ref[(i / 4) * R + j]);
    out[i] = sigmoid_d(v);
  }
}

// DETRQueries: for i < N·Q·D: qpos[i] = w[i mod Q·D] (query_embed.weight
// repeated over the batch) and tgt[i] = 0 (the decoder's input).
extern "C" __global__ void detr_queries_f32(const float* w, float* qpos, float* tgt, i64 n, i64 qd) {
  FOR_EACH(i, n) {
    qpos[i] = w[i % qd];
    tgt[i] = 0.f;
  }
}

// DETRPostProcess, one thread per query row r < N·Q of logits [N·Q, C+1]:
//   p = softmax(logits[r]); label = the first argmax of p[0 .. C); score = p[label]
//   boxes[r] = (cx − w/2, cy − h/2, cx + w/2, cy + h/2) · (W_n, H_n, W_n, H_n)
// with (H_n, W_n) image n's unpadded rows of column 0 and columns of row 0
// of mask [N, H, W] (H and W without a mask).
extern "C" __global__ void detr_post_process_f32(const float* logits, const float* box, const float* mask, float* scores,
                                                 float* labels, float* boxes, int N, int Q, int C, int H, int W) {
  FOR_EACH(r, (i64)N * Q) {
    const float* row = logits + r * (C + 1);
    float mx = row[0];
    for (int j = 1; j <= C; ++j) mx = fmaxf(mx, row[j]);
    double sum = 0.0;
    int best = 0;
    for (int j = 0; j <= C; ++j) {
      sum += exp((double)(row[j] - mx));
      if (j < C && row[j] > row[best]) best = j;
    }
    scores[r] = (float)(exp((double)(row[best] - mx)) / sum);
    labels[r] = (float)best;
    i64 n = r / Q;
    float vh = (float)H, vw = (float)W;
    if (mask) {
      const float* m = mask + n * (i64)H * W;
      int rows = 0, cols = 0;
      for (int y = 0; y < H; ++y) rows += m[(i64)y * W] == 0.f;
      for (int x = 0; x < W; ++x) cols += m[x] == 0.f;
      vh = (float)rows, vw = (float)cols;
    }
    const float* b = box + r * 4;
    float cx = b[0], cy = b[1], bw = b[2], bh = b[3];
    float* o = boxes + r * 4;
    o[0] = (cx - 0.5f * bw) * vw;
    o[1] = (cy - 0.5f * bh) * vh;
    o[2] = (cx + 0.5f * bw) * vw;
    o[3] = (cy + 0.5f * bh) * vh;
  }
}
