// IPT's nodes: the frozen mean shift, PixelShuffle, and forward_chop's
// tiling and stitching (bench/ops/ipt_nodes.go says what each computes).

// Mean shift: for b < B, o < C, p < P, i = (b·C + o)·P + p:
//   out[i] = bias[o] + Σ_c w[o·C + c] · x[(b·C + c)·P + p]
extern "C" __global__ void mean_shift_f32(const float* x, const float* w, const float* bias, float* out, int B, int C,
                                          i64 P) {
  FOR_EACH(i, (i64)B * C * P) {
    i64 p = i % P, r = i / P;
    int o = (int)(r % C);
    i64 b = r / C;
    float acc = bias[o];
    for (int c = 0; c < C; ++c) acc += w[o * C + c] * x[(b * C + c) * P + p];
    out[i] = acc;
  }
}

// PixelShuffle(R): for out [B, C, H·R, W·R] at (bc, oy, ox):
//   out = x[((bc·R² + (oy mod R)·R + ox mod R)·H + oy/R)·W + ox/R]
extern "C" __global__ void pixel_shuffle_f32(const float* x, float* out, int BC, int H, int W, int R) {
  FOR_EACH(i, (i64)BC * H * R * W * R) {
    i64 ox = i % ((i64)W * R), r = i / ((i64)W * R);
    i64 oy = r % ((i64)H * R), bc = r / ((i64)H * R);
    out[i] = x[((bc * R * R + (oy % R) * R + ox % R) * H + oy / R) * W + ox / R];
  }
}

// The chop geometry of one image (ops.Chop): tile step, grid and origins.
struct Chop {
  int H, W, P, S;
  __device__ int st() const { return P / 4; }
  __device__ int nh() const { return (H - P) / st() + 1; }
  __device__ int nw() const { return (W - P) / st() + 1; }
  __device__ int tiles() const { return nh() * nw() + nw() + nh() + 1; }
  __device__ void origin(int t, int* y, int* x) const {
    int a = nh(), b = nw(), s = st();
    if (t < a * b) {
      *y = t / b * s, *x = t % b * s;
    } else if (t < a * b + b) {
      *y = H - P, *x = (t - a * b) * s;
    } else if (t < a * b + b + a) {
      *y = (t - a * b - b) * s, *x = W - P;
    } else {
      *y = H - P, *x = W - P;
    }
  }
};

// along: the tiles k < n (cs apart) of a strip whose central crop holds p,
// or the first / last tile at the strip's ends (ops.Chop.Sources).
__device__ int chop_along(int p, int n, int extent, int cs, int* k) {
  if (p < cs) { k[0] = 0; return 1; }
  if (p >= extent - cs) { k[0] = n - 1; return 1; }
  int m = 0;
  for (int j = max(0, p / cs - 2); j <= min(n - 1, p / cs - 1); ++j)
    if (j * cs + cs <= p && p < j * cs + 3 * cs) k[m++] = j;
  return m;
}

// The tiles averaged into output pixel (y, x) of an image: ops.Chop.Sources.
__device__ int chop_sources(const Chop& c, int y, int x, int* src) {
  int s = c.S, st = c.st(), cs = st * s, ps = c.P * s, nh = c.nh(), nw = c.nw();
  int hc = ((nh - 1) * st + c.P) * s, wc = ((nw - 1) * st + c.P) * s;
  int kh = (c.P - (c.H - c.P) % st) * s / 2, kw = (c.P - (c.W - c.P) % st) * s / 2;
  bool bottom = y >= hc - kh, right = x >= wc - kw;
  int ky[2], kx[2], m = 0;
  if (bottom && right) { src[0] = c.tiles() - 1; return 1; }
  if (bottom) {
    int n = chop_along(x, nw, wc, cs, kx);
    for (int j = 0; j < n; ++j) src[m++] = nh * nw + kx[j];
    return m;
  }
  if (right) {
    int n = chop_along(y, nh, hc, cs, ky);
    for (int j = 0; j < n; ++j) src[m++] = nh * nw + nw + ky[j];
    return m;
  }
  if (y >= cs && y < hc - cs && x >= cs && x < wc - cs) {
    int a = chop_along(y, nh, hc, cs, ky), b = chop_along(x, nw, wc, cs, kx);
    for (int i = 0; i < a; ++i)
      for (int j = 0; j < b; ++j) src[m++] = ky[i] * nw + kx[j];
    return m;
  }
  if (x < ps) {
    int n = chop_along(y, nh, hc, cs, ky);
    for (int j = 0; j < n; ++j) src[m++] = ky[j] * nw;
    return m;
  }
  int n = chop_along(x, nw, wc, cs, kx);
  for (int j = 0; j < n; ++j) src[m++] = kx[j];
  return m;
}

// Tiles: out[(b·T + t)·C + c][y][x] = x[b][c][y0 + y][x0 + x], (y0, x0) the
// origin of tile t.
extern "C" __global__ void chop_tiles_f32(const float* x, float* out, int B, int C, int H, int W, int P) {
  Chop g = {H, W, P, 1};
  int T = g.tiles();
  FOR_EACH(i, (i64)B * T * C * P * P) {
    i64 xx = i % P, r = i / P;
    i64 yy = r % P;
    r /= P;
    i64 c = r % C, bt = r / C;
    int y0, x0;
    g.origin((int)(bt % T), &y0, &x0);
    out[i] = x[(((bt / T) * C + c) * H + y0 + yy) * W + x0 + xx];
  }
}

// Stitch: out[b][c][y][x] = mean over the sources t of
// y_tiles[(b·T + t)·C + c][y − y0·S][x − x0·S].
extern "C" __global__ void chop_stitch_f32(const float* y, float* out, int B, int C, int H, int W, int P, int S) {
  Chop g = {H, W, P, S};
  int T = g.tiles(), ps = P * S, oh = H * S, ow = W * S;
  FOR_EACH(i, (i64)B * C * oh * ow) {
    int ox = (int)(i % ow);
    i64 r = i / ow;
    int oy = (int)(r % oh);
    r /= oh;
    i64 c = r % C, b = r / C;
    int src[4];
    int n = chop_sources(g, oy, ox, src);
    float sum = 0.f;
    for (int k = 0; k < n; ++k) {
      int ty, tx;
      g.origin(src[k], &ty, &tx);
      sum += y[(((b * T + src[k]) * C + c) * ps + oy - ty * S) * ps + ox - tx * S];
    }
    out[i] = sum / (float)n;
  }
}
