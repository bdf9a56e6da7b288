// Layout changes around the attention products (done by cuBLAS, softmax
// in norm.cu).

// Split the fused projection into heads: for b, n < N, s < 3, h < H, d < D:
//   dst[s][((b·H + h)·N + n)·D + d] = qkv[((b·N + n)·3 + s)·H·D + h·D + d]
// with dst[s] = dst + s·B·H·N·D (q, k, v one after another).
extern "C" __global__ void qkv_split_f32(const float* qkv, float* dst, int B, int N, int H, int D) {
  i64 per = (i64)B * H * N * D;
  FOR_EACH(i, 3 * per) {
    i64 d = i % D, t = i / D;
    i64 h = t % H;
    t /= H;
    i64 s = t % 3;
    t /= 3;
    i64 n = t % N, b = t / N;
    dst[s * per + ((b * H + h) * N + n) * D + d] = qkv[i];
  }
}

// Merge the heads back: for b, h, n, d: ctx[(b·N + n)·H·D + h·D + d] = o[((b·H + h)·N + n)·D + d]
extern "C" __global__ void heads_merge_f32(const float* o, float* ctx, int B, int N, int H, int D) {
  FOR_EACH(i, (i64)B * N * H * D) {
    i64 d = i % D, t = i / D;
    i64 h = t % H;
    t /= H;
    i64 n = t % N, b = t / N;
    ctx[i] = o[((b * H + h) * N + n) * D + d];
  }
}

// Gather one of q, k, v of nn.MultiheadAttention's core from a column
// slice of a wider tensor src [B, N, ld] (columns off … off + H·D) into
// heads: for b, h, n < N, d < D:
//   dst[((b·H + h)·N + n)·D + d] = src[(b·N + n)·ld + off + h·D + d]
extern "C" __global__ void heads_split_f32(const float* src, float* dst, int B, int N, int H, int D, int ld, int off) {
  FOR_EACH(i, (i64)B * H * N * D) {
    i64 d = i % D, t = i / D;
    i64 n = t % N;
    t /= N;
    i64 h = t % H, b = t / H;
    dst[i] = src[(b * N + n) * ld + off + h * D + d];
  }
}

// softmax_rows_f32 with a key padding mask: rows of nk scores, nq rows per
// (image, head) pair, pairs p0, p0 + 1, … (image = pair / H); keys j with
// mask[image·nk + j] ≠ 0 are −∞ before the softmax (so they come out 0).
extern "C" __global__ void softmax_keymask_rows_f32(float* x, int nq, int nk, float scale, const float* mask, int H,
                                                     i64 p0) {
  float* row = x + (i64)blockIdx.x * nk;
  const float* mk = mask + ((p0 + blockIdx.x / nq) / H) * nk;
  float m = NEG_INF;
  for (int j = threadIdx.x; j < nk; j += blockDim.x)
    if (mk[j] == 0.f) m = fmaxf(m, scale * row[j]);
  m = block_max(m);
  float s = 0.f;
  for (int j = threadIdx.x; j < nk; j += blockDim.x) {
    float e = mk[j] == 0.f ? expf(scale * row[j] - m) : 0.f;
    row[j] = e;
    s += e;
  }
  float inv = 1.f / block_sum(s);
  for (int j = threadIdx.x; j < nk; j += blockDim.x) row[j] *= inv;
}
