// T2T-ViT's performer attention around three cuBLAS products.

// Feature map in place: for each row r < rows with a[r, :] = w·x_r (M values)
// and x_r = x[r·ldx .. r·ldx + E):
//   a[r, j] = exp(a[r, j] − ‖x_r‖²/2) / √M     (in double, rounded once)
// One block per row.
extern "C" __global__ void performer_phi_f32(float* a, const float* x, int ldx, int M, int E) {
  const float* xr = x + (i64)blockIdx.x * ldx;
  double s = 0;
  for (int e = threadIdx.x; e < E; e += blockDim.x) s += (double)xr[e] * xr[e];
  double half = block_sum(s) / 2;
  float* ar = a + (i64)blockIdx.x * M;
  double inv = 1.0 / sqrt((double)M);
  for (int j = threadIdx.x; j < M; j += blockDim.x) ar[j] = (float)(exp((double)ar[j] - half) * inv);
}

// Column sums: for b < B, j < M: ksum[b, j] = Σ_t kp[b, t, j]   (double)
extern "C" __global__ void performer_ksum_f32(const float* kp, double* ksum, int B, int T, int M) {
  FOR_EACH(i, (i64)B * M) {
    i64 b = i / M;
    int j = (int)(i % M);
    const float* p = kp + b * T * M + j;
    double s = 0;
    for (int t = 0; t < T; ++t) s += p[(i64)t * M];
    ksum[i] = s;
  }
}

// Normalization: for b, t, e:  D = (float) Σ_j qp[b, t, j]·ksum[b, j];
//   out[b, t, e] ·= 1 / (D + eps)
extern "C" __global__ void performer_norm_f32(float* out, const float* qp, const double* ksum, int B, int T, int M,
                                              int E, float eps) {
  FOR_EACH(i, (i64)B * T * E) {
    i64 bt = i / E, b = bt / T;
    const float* q = qp + bt * M;
    const double* ks = ksum + b * M;
    double s = 0;
    for (int j = 0; j < M; ++j) s += (double)q[j] * ks[j];
    out[i] *= 1.f / ((float)s + eps);
  }
}
