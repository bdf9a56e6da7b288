// Deformable convolution (torchvision deform_conv2d): the sampled columns,
// channel-major per image, for out[b] = W_g · cols[b] per weight group
// (cuBLAS), then the bias epilogue.

struct DGeom {
  int C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, OG;
};

// For images b < nb, channel c (offset group g = c / (C/OG)), tap
// k = ky·KW + kx and output pixel p = oy·OW + ox:
//   y = oy·SH − PH + ky·DH + offset[b, (g·KK + k)·2,     p]
//   x = ox·SW − PW + kx·DW + offset[b, (g·KK + k)·2 + 1, p]
//   cols[((b·C + c)·KK + k)·L + p] = mask[b, g·KK + k, p] · bilinear(x[b, c], y, x)
// (mask may be null = 1). bilinear is zero when y ≤ −1, y ≥ H, x ≤ −1 or
// x ≥ W, and reads each corner outside the image as zero.
extern "C" __global__ void deform_im2col_f32(const float* x, const float* offset, const float* mask, float* cols,
                                             int nb, DGeom g) {
  i64 L = (i64)g.OH * g.OW;
  int KK = g.KH * g.KW;
  int cpg = g.C / g.OG;
  FOR_EACH(i, (i64)nb * g.C * KK * L) {
    i64 p = i % L, t = i / L;
    int k = (int)(t % KK);
    t /= KK;
    int c = (int)(t % g.C);
    i64 b = t / g.C;
    int grp = c / cpg;
    int oy = (int)(p / g.OW), ox = (int)(p % g.OW);
    const float* off = offset + b * 2 * g.OG * KK * L;
    float dy = off[((i64)(grp * KK + k) * 2) * L + p];
    float dx = off[((i64)(grp * KK + k) * 2 + 1) * L + p];
    float m = mask ? mask[(b * g.OG * KK + grp * KK + k) * L + p] : 1.f;
    float sy = (float)(oy * g.SH - g.PH + (k / g.KW) * g.DH) + dy;
    float sx = (float)(ox * g.SW - g.PW + (k % g.KW) * g.DW) + dx;
    float v = 0.f;
    if (sy > -1.f && sx > -1.f && sy < (float)g.H && sx < (float)g.W) {
      float yf = floorf(sy), xf = floorf(sx);
      int yl = (int)yf, xl = (int)xf;
      float ly = sy - yf, lx = sx - xf, hy = 1.f - ly, hx = 1.f - lx;
      const float* img = x + (b * g.C + c) * g.H * g.W;
      if (yl >= 0 && xl >= 0) v += hy * hx * m * img[yl * g.W + xl];
      if (yl >= 0 && xl + 1 < g.W) v += hy * lx * m * img[yl * g.W + xl + 1];
      if (yl + 1 < g.H && xl >= 0) v += ly * hx * m * img[(yl + 1) * g.W + xl];
      if (yl + 1 < g.H && xl + 1 < g.W) v += ly * lx * m * img[(yl + 1) * g.W + xl + 1];
    }
    cols[i] = v;
  }
}
