//go:build mutation

package cpu

import (
	"math"
	"slices"

	"vitbench/bench/ops"
)

// Mutations of the transformer nodes: activation, LayerNorm, attention,
// tokens and heads (ViT, DeiT, T2T-ViT and VOLO blocks, the DETR decoder's
// self-attention).

func init() {
	addMutation("gelu_tanh", "GELU by its tanh approximation instead of the exact erf form",
		func(g ops.Gemm) bool { return g.Act == "gelu" }, geluMutated(geluTanh))
	addMutation("gelu_as_relu", "ReLU where the model has GELU",
		func(g ops.Gemm) bool { return g.Act == "gelu" },
		func(b *Backend, g ops.Gemm, in, out []*tensor) error { g.Act = "relu"; return b.gemm(g, in, out) })
	addMutation("layernorm_eps_x10", "LayerNorm eps ten times the model's (1e-5 for timm's 1e-6, 1e-4 for 1e-5)", nil,
		func(b *Backend, n ops.LayerNorm, in, out []*tensor) error {
			n.Eps *= 10
			return b.layerNorm(n, in, out)
		})
	addMutation("layernorm_unbiased_var", "LayerNorm with the unbiased variance (torch.var's default, divisor D−1)", nil,
		layerNormUnbiased)
	addMutation("attn_scale_from_dim", "attention scale dim^-0.5 instead of head_dim^-0.5",
		func(a ops.AttentionCore) bool { return a.Heads > 1 },
		func(b *Backend, a ops.AttentionCore, in, out []*tensor) error {
			a.Scale = 1 / math.Sqrt(float64(a.Heads*a.HeadDim))
			return b.attentionCore(a, in, out)
		})
	addMutation("t2t_scale_head_dim", "T2T-ViT's token_transformer scale head_dim^-0.5 instead of its dim^-0.5 quirk",
		func(a ops.AttentionCore) bool { return math.Abs(a.Scale*math.Sqrt(float64(a.HeadDim))-1) > 1e-9 },
		func(b *Backend, a ops.AttentionCore, in, out []*tensor) error {
			a.Scale = 1 / math.Sqrt(float64(a.HeadDim))
			return b.attentionCore(a, in, out)
		})
	addMutation("qkv_split_per_head", "fused qkv split as reshape(B, N, heads, 3, D) instead of (B, N, 3, heads, D)",
		func(a ops.AttentionCore) bool { return a.Heads > 1 }, qkvSplitPerHead)
	addMutation("softmax_over_queries", "attention softmax over the query axis instead of the keys", nil, softmaxOverQueries)
	addMutation("class_attn_keys_without_cls", "class attention's keys and values from the patch tokens only, without the class token",
		nil, func(b *Backend, c ops.ClassAttnCore, in, out []*tensor) error {
			e, n := c.Heads*c.HeadDim, c.Tokens
			kv := zeroTensor([]int{c.Batch, n - 1, 2 * e})
			for i := 0; i < c.Batch; i++ {
				copy(kv.data[i*(n-1)*2*e:(i+1)*(n-1)*2*e], in[1].data[(i*n+1)*2*e:(i+1)*n*2*e])
			}
			c.Tokens = n - 1
			return b.classAttnCore(c, replaced(in, 1, kv), out)
		})
	addMutation("distilled_head_cls_only", "DeiT distilled output = the class head alone instead of the mean of both heads", nil,
		func(b *Backend, a ops.Average, in, out []*tensor) error { copy(out[0].data, in[0].data); return nil })
	addMutation("dist_token_first", "DeiT tokens [dist, cls, patches] instead of [cls, dist, patches]",
		func(t ops.TokensPrefix) bool { return t.Prefix == 2 },
		func(b *Backend, t ops.TokensPrefix, in, out []*tensor) error {
			sw := slices.Clone(in)
			sw[1], sw[2] = in[2], in[1]
			return b.tokensPrefix(t, sw, out)
		})
	addMutation("head_on_mean_token", "head on the mean of all tokens (global average pooling) instead of the class token", nil,
		func(b *Backend, t ops.TakeToken, in, out []*tensor) error {
			for img := 0; img < t.Batch; img++ {
				dst := out[0].data[img*t.Dim : (img+1)*t.Dim]
				for d := range dst {
					var s float64
					for k := 0; k < t.Tokens; k++ {
						s += float64(in[0].data[(img*t.Tokens+k)*t.Dim+d])
					}
					dst[d] = float32(s / float64(t.Tokens))
				}
			}
			return nil
		})
	addMutation("patch_tokens_column_major", "patch tokens in column-major order (x outer) instead of row-major", nil,
		func(b *Backend, n ops.PatchEmbed, in, out []*tensor) error {
			tmp := zeroTensor(out[0].shape)
			if err := b.patchEmbed(n, in, []*tensor{tmp}); err != nil {
				return err
			}
			gh, gw, e := n.GridH(), n.GridW(), n.EmbedDim
			for img := 0; img < n.Batch; img++ {
				for gy := 0; gy < gh; gy++ {
					for gx := 0; gx < gw; gx++ {
						src := tmp.data[((img*gh+gy)*gw+gx)*e:][:e]
						copy(out[0].data[((img*gw+gx)*gh+gy)*e:][:e], src)
					}
				}
			}
			return nil
		})
}

// geluTanh is GELU's tanh approximation.
func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// geluMutated runs a GELU gemm with act in place of the exact GELU: the
// product and bias first, then act, then the residual.
func geluMutated(act func(float64) float64) func(b *Backend, g ops.Gemm, in, out []*tensor) error {
	return func(b *Backend, g ops.Gemm, in, out []*tensor) error {
		plain := g
		plain.Act, plain.Residual, plain.ResidualLd, plain.ResidualOff = "", false, 0, 0
		pin := in
		if g.Residual {
			pin = in[:len(in)-1]
		}
		if err := b.gemm(plain, pin, out); err != nil {
			return err
		}
		ld := g.ResidualLd
		if ld == 0 {
			ld = g.N
		}
		y := out[0].data
		for r := 0; r < g.Batch*g.M; r++ {
			for j := 0; j < g.N; j++ {
				v := float32(act(float64(y[r*g.N+j])))
				if g.Residual {
					v += in[len(in)-1].data[r*ld+g.ResidualOff+j]
				}
				y[r*g.N+j] = v
			}
		}
		return nil
	}
}

// layerNormUnbiased is LayerNorm with the variance divided by D − 1.
func layerNormUnbiased(b *Backend, n ops.LayerNorm, in, out []*tensor) error {
	x, gamma, beta, y, d := in[0].data, in[1].data, in[2].data, out[0].data, n.Dim
	for r := 0; r < n.Batch*n.Tokens; r++ {
		row := x[r*d : (r+1)*d]
		var s, sq float64
		for _, v := range row {
			s += float64(v)
		}
		mean := s / float64(d)
		for _, v := range row {
			sq += (float64(v) - mean) * (float64(v) - mean)
		}
		rstd := 1 / math.Sqrt(sq/float64(d-1)+n.Eps)
		for i, v := range row {
			y[r*d+i] = float32((float64(v)-mean)*rstd)*gamma[i] + beta[i]
		}
	}
	return nil
}

// qkvSplitPerHead feeds the attention a fused qkv whose channels are read
// as h·3D + s·D + d, as a wrong reshape would.
func qkvSplitPerHead(b *Backend, a ops.AttentionCore, in, out []*tensor) error {
	hd, e := a.HeadDim, a.Heads*a.HeadDim
	src := in[0].data
	perm := cloneTensor(in[0])
	for r := 0; r < a.Batch*a.Tokens; r++ {
		for s := 0; s < 3; s++ {
			for h := 0; h < a.Heads; h++ {
				copy(perm.data[r*3*e+s*e+h*hd:][:hd], src[r*3*e+h*3*hd+s*hd:][:hd])
			}
		}
	}
	return b.attentionCore(a, []*tensor{perm}, out)
}

// softmaxOverQueries is attention whose probabilities are normalized over
// the queries (each key's column sums to one) instead of the keys.
func softmaxOverQueries(b *Backend, a ops.AttentionCore, in, out []*tensor) error {
	n, hd, e := a.Tokens, a.HeadDim, a.Heads*a.HeadDim
	qkv, y := in[0].data, out[0].data
	p := make([]float64, n*n)
	for img := 0; img < a.Batch; img++ {
		base := qkv[img*n*3*e:]
		for h := 0; h < a.Heads; h++ {
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					var s float64
					for d := 0; d < hd; d++ {
						s += float64(base[i*3*e+h*hd+d]) * float64(base[j*3*e+e+h*hd+d])
					}
					p[i*n+j] = s * a.Scale
				}
			}
			for j := 0; j < n; j++ {
				m := math.Inf(-1)
				for i := 0; i < n; i++ {
					m = math.Max(m, p[i*n+j])
				}
				var z float64
				for i := 0; i < n; i++ {
					p[i*n+j] = math.Exp(p[i*n+j] - m)
					z += p[i*n+j]
				}
				for i := 0; i < n; i++ {
					p[i*n+j] /= z
				}
			}
			for i := 0; i < n; i++ {
				for d := 0; d < hd; d++ {
					var s float64
					for j := 0; j < n; j++ {
						s += p[i*n+j] * float64(base[j*3*e+2*e+h*hd+d])
					}
					y[(img*n+i)*e+h*hd+d] = float32(s)
				}
			}
		}
	}
	return nil
}
