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
