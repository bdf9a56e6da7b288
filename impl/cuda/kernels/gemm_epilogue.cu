// The epilogues of GEMMs done by cuBLAS (which writes the plain product).

// Token-major (Linear): for r < rows, j < n:
//   v = c[r·n + j] + bias[j]                 (bias may be null)
//   v = act(v)                               act: 0 none, 1 ReLU, 2 exact GELU 0.5·v·(1 + erf(v/√2)) in double
//                                            (GELU(−∞) = 0, as the CPU backend, not NaN)
//                                            3 QuickGELU v·sigmoid(1.702·v), 1.702·v rounded to float
//                                            as PyTorch does, the rest in double
//   c[r·n + j] = v + res[r·ldr + j]          (res may be null; it already points at its first column)
extern "C" __global__ void gemm_epilogue_f32(float* c, const float* bias, const float* res, i64 ldr, i64 rows, int n,
                                             int act) {
  FOR_EACH(i, rows * n) {
    i64 r = i / n;
    int j = (int)(i % n);
    float v = c[i];
    if (bias) v += bias[j];
    if (act == 1) {
      v = fmaxf(v, 0.f);
    } else if (act == 2) {
      double x = v;
      v = isinf(x) && x < 0 ? 0.f : (float)(0.5 * x * (1.0 + erf(x / 1.41421356237309504880)));
    } else if (act == 3) {
      v = (float)((double)v / (1.0 + exp(-(double)(1.702f * v))));
    }
    if (res) v += res[r * ldr + j];
    c[i] = v;
  }
}

// Channel-major (convolution, NCHW): for b, o < O, p < hw, i = (b·O + o)·hw + p:
//   v = y[i] + bias[o]                                                  (bias may be null)
//   if bn: v = (v − mean[o]) · s + beta[o],  s = gamma[o] / √(var[o] + eps) (s in double)
//   if res: v += res[i];  if relu: v = max(v, 0)
extern "C" __global__ void nchw_epilogue_f32(float* y, const float* bias, const float* gamma, const float* beta,
                                             const float* mean, const float* var, double eps, const float* res,
                                             int relu, i64 total, int O, i64 hw) {
  FOR_EACH(i, total) {
    int o = (int)((i / hw) % O);
    float v = y[i];
    if (bias) v += bias[o];
    if (gamma) {
      double s = (double)gamma[o] / sqrt((double)var[o] + eps);
      v = (float)(((double)v - mean[o]) * s + beta[o]);
    }
    if (res) v += res[i];
    if (relu) v = fmaxf(v, 0.f);
    y[i] = v;
  }
}
