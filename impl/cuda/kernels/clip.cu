// OpenAI CLIP's nodes around its transformers: the text tower's token
// embedding and end-of-text pooling, the network's similarity logits.

// Token embedding: for b < B, t < L, c < W, i = (b·L + t)·W + c:
//   id = text[b·L + t]; out[i] = table[id·W + c] + pos[t·W + c]
// An id that is not an integer in [0, V) gives NaN for the whole token
// (the CPU backend stops with an error instead).
extern "C" __global__ void token_embed_f32(const float* text, const float* table, const float* pos, float* out, int B,
                                           int L, int V, int W) {
  FOR_EACH(i, (i64)B * L * W) {
    i64 c = i % W, r = i / W;
    int t = (int)(r % L);
    float v = text[r];
    if (!(v >= 0.f && v < (float)V) || v != truncf(v)) {
      out[i] = __int_as_float(0x7fc00000);
      continue;
    }
    out[i] = table[(i64)v * W + c] + pos[(i64)t * W + c];
  }
}

// End-of-text pooling: for b < B, c < W: out[b·W + c] = x[(b·L + e)·W + c]
// with e the first index of the largest id of text[b·L : (b+1)·L].
extern "C" __global__ void eot_pool_f32(const float* x, const float* text, float* out, int B, int L, int W) {
  FOR_EACH(i, (i64)B * W) {
    i64 c = i % W, b = i / W;
    const float* ids = text + b * L;
    int e = 0;
    for (int t = 1; t < L; ++t)
      if (ids[t] > ids[e]) e = t;
    out[i] = x[(b * L + e) * W + c];
  }
}

// Similarity logits: for i < I, j < T (E features each), in double:
//   out[i·T + j] = exp(s[0]) · Σ_e img[i·E+e]·txt[j·E+e] / (‖img[i]‖ · ‖txt[j]‖)
extern "C" __global__ void clip_logits_f32(const float* img, const float* txt, const float* s, float* out, int I, int T,
                                           int E) {
  FOR_EACH(k, (i64)I * T) {
    i64 i = k / T, j = k % T;
    const float* a = img + i * E;
    const float* t = txt + j * E;
    double dot = 0, na = 0, nt = 0;
    for (int e = 0; e < E; ++e) {
      dot += (double)a[e] * t[e];
      na += (double)a[e] * a[e];
      nt += (double)t[e] * t[e];
    }
    out[k] = (float)(exp((double)s[0]) * dot / (sqrt(na) * sqrt(nt)));
  }
}

// Attention-pool tokens: for b < B, c < C, with N map tokens x [B, N, C]
// and positions pos [N+1, C]:
//   out[(b·(N+1))·C + c] = mean_t x[(b·N + t)·C + c] + pos[c]      (the mean in double)
//   out[(b·(N+1) + 1 + t)·C + c] = x[(b·N + t)·C + c] + pos[(1 + t)·C + c]
extern "C" __global__ void attn_pool_tokens_f32(const float* x, const float* pos, float* out, int B, int N, int C) {
  FOR_EACH(i, (i64)B * (N + 1) * C) {
    i64 c = i % C, r = i / C;
    i64 t = r % (N + 1), b = r / (N + 1);
    if (t == 0) {
      double s = 0;
      for (int k = 0; k < N; ++k) s += x[(b * N + k) * C + c];
      out[i] = (float)(s / N) + pos[c];
    } else {
      out[i] = x[(b * N + t - 1) * C + c] + pos[t * C + c];
    }
  }
}
