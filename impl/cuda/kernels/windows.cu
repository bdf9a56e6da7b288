// Sliding windows: unfold (token-major and channel-major), fold, pooling.
// Geometry: input C×H×W, kernel KH×KW, stride SH, SW, padding PH, PW,
// dilation DH, DW, OH×OW windows.

struct Geom {
  int C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};

// Token-major unfold (nn.Unfold + transpose(1, 2)): for b, l = oy·OW + ox, k = c·KH·KW + ky·KW + kx:
//   out[(b·L + l)·K + k] = x[b, c, oy·SH − PH + ky·DH, ox·SW − PW + kx·DW]  (0 outside)
extern "C" __global__ void unfold_tokens_f32(const float* x, float* out, int B, Geom g) {
  i64 L = (i64)g.OH * g.OW;
  int KK = g.KH * g.KW;
  i64 K = (i64)g.C * KK;
  FOR_EACH(i, (i64)B * L * K) {
    i64 k = i % K, t = i / K;
    i64 l = t % L, b = t / L;
    int c = (int)(k / KK), kk = (int)(k % KK);
    int y = (int)(l / g.OW) * g.SH - g.PH + (kk / g.KW) * g.DH;
    int xx = (int)(l % g.OW) * g.SW - g.PW + (kk % g.KW) * g.DW;
    float v = 0.f;
    if (y >= 0 && y < g.H && xx >= 0 && xx < g.W) v = x[((b * g.C + c) * g.H + y) * g.W + xx];
    out[i] = v;
  }
}

// Channel-major im2col for convolution as out[b] = W · cols[b]: for images
// b < nb, k = c·KH·KW + ky·KW + kx, l = oy·OW + ox:
//   cols[(b·K + k)·L + l] = x[b, c, oy·SH − PH + ky·DH, ox·SW − PW + kx·DW]  (0 outside)
extern "C" __global__ void im2col_f32(const float* x, float* cols, int nb, Geom g) {
  i64 L = (i64)g.OH * g.OW;
  int KK = g.KH * g.KW;
  i64 K = (i64)g.C * KK;
  FOR_EACH(i, (i64)nb * K * L) {
    i64 l = i % L, t = i / L;
    i64 k = t % K, b = t / K;
    int c = (int)(k / KK), kk = (int)(k % KK);
    int y = (int)(l / g.OW) * g.SH - g.PH + (kk / g.KW) * g.DH;
    int xx = (int)(l % g.OW) * g.SW - g.PW + (kk % g.KW) * g.DW;
    float v = 0.f;
    if (y >= 0 && y < g.H && xx >= 0 && xx < g.W) v = x[((b * g.C + c) * g.H + y) * g.W + xx];
    cols[i] = v;
  }
}

// Fold (nn.Fold of token-major windows), as a gather so that no two
// threads add into one pixel: for b, c, y, x:
//   out[b, c, y, x] = Σ over (ky, kx, oy, ox) with oy·SH − PH + ky·DH = y and ox·SW − PW + kx·DW = x
//                     of in[(b·L + oy·OW + ox)·K + c·KH·KW + ky·KW + kx]
extern "C" __global__ void fold_f32(const float* in, float* out, int B, Geom g) {
  i64 L = (i64)g.OH * g.OW;
  int KK = g.KH * g.KW;
  i64 K = (i64)g.C * KK;
  FOR_EACH(i, (i64)B * g.C * g.H * g.W) {
    int xx = (int)(i % g.W);
    int y = (int)((i / g.W) % g.H);
    int c = (int)((i / ((i64)g.W * g.H)) % g.C);
    i64 b = i / ((i64)g.W * g.H * g.C);
    float acc = 0.f;
    for (int ky = 0; ky < g.KH; ++ky) {
      int ty = y + g.PH - ky * g.DH;
      if (ty < 0 || ty % g.SH != 0) continue;
      int oy = ty / g.SH;
      if (oy >= g.OH) continue;
      for (int kx = 0; kx < g.KW; ++kx) {
        int tx = xx + g.PW - kx * g.DW;
        if (tx < 0 || tx % g.SW != 0) continue;
        int ox = tx / g.SW;
        if (ox >= g.OW) continue;
        acc += in[(b * L + (i64)oy * g.OW + ox) * K + (i64)c * KK + ky * g.KW + kx];
      }
    }
    out[i] = acc;
  }
}

// AvgPool2d (PyTorch's rules): for each plane p < planes and window (oy, ox):
//   y0 = oy·SH − PH, y1 = min(y0 + KH, H + PH) (likewise x);  size = (y1 − y0)·(x1 − x0)
//   clip to the image; out = Σ inside / (countIncludePad ? size : clipped area)
extern "C" __global__ void avg_pool_f32(const float* x, float* out, i64 planes, Geom g, int countIncludePad) {
  i64 per = (i64)g.OH * g.OW;
  FOR_EACH(i, planes * per) {
    i64 p = i / per;
    int oy = (int)((i % per) / g.OW), ox = (int)(i % g.OW);
    int y0 = oy * g.SH - g.PH, x0 = ox * g.SW - g.PW;
    int y1 = min(y0 + g.KH, g.H + g.PH), x1 = min(x0 + g.KW, g.W + g.PW);
    int size = (y1 - y0) * (x1 - x0);
    y0 = max(y0, 0);
    x0 = max(x0, 0);
    y1 = min(y1, g.H);
    x1 = min(x1, g.W);
    const float* src = x + p * g.H * g.W;
    float s = 0.f;
    for (int yy = y0; yy < y1; ++yy)
      for (int xx = x0; xx < x1; ++xx) s += src[yy * g.W + xx];
    int div = countIncludePad ? size : (y1 - y0) * (x1 - x0);
    out[i] = s / (float)div;
  }
}

// MaxPool2d (padding reads as −∞, NaN propagates): for each plane and window,
//   out = max over the window's pixels inside the image
extern "C" __global__ void max_pool_f32(const float* x, float* out, i64 planes, Geom g) {
  i64 per = (i64)g.OH * g.OW;
  FOR_EACH(i, planes * per) {
    i64 p = i / per;
    int oy = (int)((i % per) / g.OW), ox = (int)(i % g.OW);
    int y0 = oy * g.SH - g.PH, x0 = ox * g.SW - g.PW;
    const float* src = x + p * g.H * g.W;
    float best = NEG_INF;
    for (int ky = max(0, -y0); ky < g.KH && y0 + ky < g.H; ++ky)
      for (int kx = max(0, -x0); kx < g.KW && x0 + kx < g.W; ++kx) {
        float v = src[(y0 + ky) * g.W + x0 + kx];
        if (v > best || v != v) best = v;
      }
    out[i] = best;
  }
}
