// VQGAN's nodes (taming-transformers' first stage): the Downsample's
// one-sided zero padding, the Upsample's nearest ×2 and the codebook search
// of VectorQuantizer2.

// Padding on the right and at the bottom: for p < B·C planes, y ≤ H, x ≤ W,
//   out[(p·(H+1) + y)·(W+1) + x] = y < H && x < W ? in[(p·H + y)·W + x] : 0
extern "C" __global__ void pad_right_bottom_f32(const float* in, float* out, i64 planes, int H, int W) {
  i64 W1 = W + 1, H1 = H + 1;
  FOR_EACH(i, planes * H1 * W1) {
    i64 x = i % W1, r = i / W1;
    i64 y = r % H1, p = r / H1;
    out[i] = (y < H && x < W) ? in[(p * H + y) * W + x] : 0.f;
  }
}

// Nearest ×2: out[(p·2H + y)·2W + x] = in[(p·H + y/2)·W + x/2].
extern "C" __global__ void upsample_nearest2x_f32(const float* in, float* out, i64 planes, int H, int W) {
  i64 W2 = 2 * (i64)W, H2 = 2 * (i64)H;
  FOR_EACH(i, planes * H2 * W2) {
    i64 x = i % W2, r = i / W2;
    i64 y = r % H2, p = r / H2;
    out[i] = in[(p * H + y / 2) * W + x / 2];
  }
}

// Codebook search, one block per position n = b·HW + s of z [B, C, HW]
// with the codebook e [codes, C]; every thread takes codes j ≡ tid:
//   d[j] = (Σ_c z[c]² + Σ_c e[j, c]²) − 2·Σ_c z[c]·e[j, c]    (float32, each sum in order)
//   idx = the first j of the smallest d[j]  (ties across threads: the lower j)
//   indices[n] = idx;  quant[b, c, s] = z[c] + (e[idx, c] − z[c])
// blockDim.x must be a power of two, at most 1024.
extern "C" __global__ void vector_quantize_f32(const float* z, const float* e, float* quant, float* indices, int C, int HW,
                                               int codes) {
  __shared__ float best_d[1024];
  __shared__ int best_j[1024];
  i64 n = blockIdx.x;
  i64 b = n / HW, s = n % HW;
  const float* zb = z + b * C * (i64)HW + s;
  float zn = 0.f;
  for (int c = 0; c < C; ++c) zn += zb[(i64)c * HW] * zb[(i64)c * HW];
  float bd = POS_INF;
  int bj = codes;
  for (int j = threadIdx.x; j < codes; j += blockDim.x) {
    const float* ej = e + (i64)j * C;
    float en = 0.f, dot = 0.f;
    for (int c = 0; c < C; ++c) {
      en += ej[c] * ej[c];
      dot += zb[(i64)c * HW] * ej[c];
    }
    float d = (zn + en) - 2.f * dot;
    if (d < bd) {
      bd = d;
      bj = j;
    }
  }
  best_d[threadIdx.x] = bd;
  best_j[threadIdx.x] = bj;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) {
      float d2 = best_d[threadIdx.x + o];
      int j2 = best_j[threadIdx.x + o];
      if (d2 < best_d[threadIdx.x] || (d2 == best_d[threadIdx.x] && j2 < best_j[threadIdx.x])) {
        best_d[threadIdx.x] = d2;
        best_j[threadIdx.x] = j2;
      }
    }
    __syncthreads();
  }
  int idx = best_j[0];
  if (threadIdx.x == 0) indices[n] = (float)idx;
  float* qb = quant + b * C * (i64)HW + s;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float v = zb[(i64)c * HW];
    qb[(i64)c * HW] = v + (e[(i64)idx * C + c] - v);
  }
}
