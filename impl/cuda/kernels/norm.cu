// Normalizations and the attention softmax: one block per normalized row
// or group, block reductions in common.cuh.

// LayerNorm: for each row r < rows of x [rows, D], as the CPU backend:
//   μ = mean(x[r, :]);  σ² = mean((x[r, :] − μ)²)            (in double)
//   hi = (float)μ;  lo = (float)(μ − hi);  s = (float)(1 / √(σ² + eps))
//   out[r, d] = (float)(((x[r, d] − hi) − lo) · s) · gamma[d] + beta[d]
// One block per row; the row is read three times (from L1/L2).
extern "C" __global__ void layernorm_f32(const float* x, const float* gamma, const float* beta, float* out, int D,
                                         float eps) {
  const float* row = x + (i64)blockIdx.x * D;
  float* o = out + (i64)blockIdx.x * D;
  double s = 0;
  for (int d = threadIdx.x; d < D; d += blockDim.x) s += row[d];
  double mean = block_sum(s) / D;
  double q = 0;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    double c = row[d] - mean;
    q += c * c;
  }
  float r = (float)(1.0 / sqrt(block_sum(q) / D + (double)eps));
  float hi = (float)mean, lo = (float)(mean - (double)hi);
  for (int d = threadIdx.x; d < D; d += blockDim.x)
    o[d] = __fmul_rn(__fsub_rn(__fsub_rn(row[d], hi), lo), r) * gamma[d] + beta[d];
}

// GroupNorm: for each image b and group g of x [B, C, H·W] (cg = C/G
// channels of hw pixels, contiguous):
//   μ, σ² = mean and biased variance of the group (in double)
//   out[b, c, p] = x[b, c, p] · s + (beta[c] − μ·s),  s = gamma[c] / √(σ² + eps)
// then, when swish ≠ 0 (VQGAN's Normalize + nonlinearity), out = out·sigmoid(out).
// One block per (b, g).
extern "C" __global__ void group_norm_f32(const float* x, const float* gamma, const float* beta, float* out, int G,
                                          int cg, i64 hw, double eps, int swish) {
  i64 size = (i64)cg * hw;
  const float* v = x + (i64)blockIdx.x * size;
  float* o = out + (i64)blockIdx.x * size;
  double s = 0;
  for (i64 i = threadIdx.x; i < size; i += blockDim.x) s += v[i];
  double mean = block_sum(s) / (double)size;
  double q = 0;
  for (i64 i = threadIdx.x; i < size; i += blockDim.x) {
    double c = v[i] - mean;
    q += c * c;
  }
  double rstd = 1.0 / sqrt(block_sum(q) / (double)size + eps);
  int c0 = (blockIdx.x % G) * cg;
  for (i64 i = threadIdx.x; i < size; i += blockDim.x) {
    int c = c0 + (int)(i / hw);
    float sc = (float)rstd * gamma[c];
    float sh = beta[c] - (float)mean * sc;
    float r = v[i] * sc + sh;
    // swish r·sigmoid(r) as the CPU backend's SiLU: r·(r ≥ 0 ? 1 : e)/(1 + e), e = exp(−|r|)
    if (swish) {
      float e = expf(-fabsf(r));
      r = r * (r >= 0.f ? 1.f : e) / (1.f + e);
    }
    o[i] = r;
  }
}

// Scaled softmax over each row of x [rows, n], in place:
//   m = max_j scale·x[r, j];  x[r, j] = exp(scale·x[r, j] − m) / Σ_j exp(scale·x[r, j] − m)
// One block per row.
extern "C" __global__ void softmax_rows_f32(float* x, int n, float scale) {
  float* row = x + (i64)blockIdx.x * n;
  float m = NEG_INF;
  for (int j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, scale * row[j]);
  m = block_max(m);
  float s = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    float e = expf(scale * row[j] - m);
    row[j] = e;
    s += e;
  }
  float inv = 1.f / block_sum(s);
  for (int j = threadIdx.x; j < n; j += blockDim.x) row[j] *= inv;
}

// Causal softmax_rows_f32: the rows are the query rows i = blockIdx.x mod n
// of (image, head) score matrices [n, n]; keys j > i are masked (−∞ before
// the softmax, so they come out 0):
//   v[j] = scale·x[j] for j ≤ i;  m = max v;  row[j] = exp(v[j] − m)/Σ exp(v − m) (j ≤ i), 0 (j > i)
extern "C" __global__ void softmax_causal_rows_f32(float* x, int n, float scale) {
  float* row = x + (i64)blockIdx.x * n;
  int q = (int)(blockIdx.x % n);
  float m = NEG_INF;
  for (int j = threadIdx.x; j <= q; j += blockDim.x) m = fmaxf(m, scale * row[j]);
  m = block_max(m);
  float s = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    float e = j <= q ? expf(scale * row[j] - m) : 0.f;
    row[j] = e;
    s += e;
  }
  float inv = 1.f / block_sum(s);
  for (int j = threadIdx.x; j < n; j += blockDim.x) row[j] *= inv;
}
