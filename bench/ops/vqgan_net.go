package ops

import (
	"fmt"

	"vitbench/bench"
)

// vqNet builds the graphs of taming-transformers' first stage (Encoder,
// Decoder, VQModel; docs/reference-notes.md, VQGAN) with the original's
// state_dict names. After a recording pass, weights and macs hold the
// arrays its graphs read and its multiply-accumulates.
type vqNet struct {
	batch   int
	record  bool
	weights []bench.ArraySpec
	macs    int64
}

// vqEps is taming's Normalize: GroupNorm(32 groups, eps 1e-6, affine).
const (
	vqGroups = 32
	vqEps    = 1e-6
)

// fmap names and declares a [B, c, h, w] temp: tag plus its shape, so
// that every map of one shape and role shares a buffer.
func (v *vqNet) fmap(g *bench.Graph, tag string, c, h, w int) string {
	name := fmt.Sprintf("vq.%s.%dx%dx%d", tag, c, h, w)
	g.Temp(name, bench.Shape{v.batch, c, h, w})
	return name
}

func (v *vqNet) add(ws ...bench.ArraySpec) {
	if v.record {
		v.weights = append(v.weights, ws...)
	}
}

// norm appends Normalize (with swish when act) on the [B, c, h, w] map in.
func (v *vqNet) norm(g *bench.Graph, prefix, in, out string, c, h, w int, act bool) {
	v.add(bench.ArraySpec{Name: prefix + ".weight", Shape: bench.Shape{c}}, bench.ArraySpec{Name: prefix + ".bias", Shape: bench.Shape{c}})
	g.Steps = append(g.Steps, bench.Step{Node: GroupNorm{Batch: v.batch, Chans: c, Groups: vqGroups, Height: h, Width: w, Eps: vqEps, Swish: act},
		In: []string{in, prefix + ".weight", prefix + ".bias"}, Out: []string{out}})
}

// conv appends a k×k Conv2d with bias (padding pad, stride), plus the
// residual res when not "", on the [B, cin, h, w] map in; it returns the
// output's height and width.
func (v *vqNet) conv(g *bench.Graph, prefix, in, out string, cin, cout, h, w, k, stride, pad int, res string) (int, int) {
	u := Unfold{Batch: v.batch, InChans: cin, Height: h, Width: w, KernelH: k, KernelW: k, StrideH: stride, StrideW: stride,
		PadH: pad, PadW: pad, DilationH: 1, DilationW: 1}
	c := Conv2d{Unfold: u, OutChans: cout, Bias: true, Residual: res != ""}
	v.add(bench.ArraySpec{Name: prefix + ".weight", Shape: bench.Shape{cout, cin, k, k}}, bench.ArraySpec{Name: prefix + ".bias", Shape: bench.Shape{cout}})
	if v.record {
		v.macs += c.macsOf()
	}
	ins := []string{in, prefix + ".weight", prefix + ".bias"}
	if res != "" {
		ins = append(ins, res)
	}
	g.Steps = append(g.Steps, bench.Step{Node: c, In: ins, Out: []string{out}})
	return u.OutH(), u.OutW()
}

// resnetBlock appends ResnetBlock(cin → cout) (temb unused, dropout 0):
//
//	h = conv2(swish(norm2(conv1(swish(norm1(x))))))
//	out = shortcut(x) + h       shortcut = nin_shortcut (1×1 conv) when cin ≠ cout, else identity
func (v *vqNet) resnetBlock(g *bench.Graph, prefix, in, out string, cin, cout, h, w int) {
	a := v.fmap(g, "rb.a", cin, h, w)
	b := v.fmap(g, "rb.b", cout, h, w)
	c := v.fmap(g, "rb.c", cout, h, w)
	v.norm(g, prefix+"norm1", in, a, cin, h, w, true)
	v.conv(g, prefix+"conv1", a, b, cin, cout, h, w, 3, 1, 1, "")
	v.norm(g, prefix+"norm2", b, c, cout, h, w, true)
	short := in
	if cin != cout {
		short = v.fmap(g, "rb.short", cout, h, w)
		v.conv(g, prefix+"nin_shortcut", in, short, cin, cout, h, w, 1, 1, 0, "")
	}
	v.conv(g, prefix+"conv2", c, out, cout, cout, h, w, 3, 1, 1, short)
}

// attnBlock appends AttnBlock(c): one head over all c channels,
//
//	h = norm(x);  q, k, v = 1×1 convs of h, read as tokens [HW, c] (position y·W + x)
//	out = x + proj_out(softmax(q kᵀ · c^−½) v)      (softmax over keys)
//
// The three 1×1 convolutions on the same map are one product on its
// tokens: h is read as tokens once, and q, k and v's weights and biases
// are stacked (as minGPT's are), so qkv [B, HW, 3c] is AttentionCore's
// input with one head of c channels.
func (v *vqNet) attnBlock(g *bench.Graph, prefix, in, out string, c, h, w int) {
	n := v.batch
	hn := v.fmap(g, "at.h", c, h, w)
	v.norm(g, prefix+"norm", in, hn, c, h, w, false)
	ht := fmt.Sprintf("vq.at.h.tok.%dx%d", c, h*w)
	g.Temp(ht, bench.Shape{n, h * w, c})
	var ws, bs []string
	for _, p := range []string{"q", "k", "v"} {
		v.add(bench.ArraySpec{Name: prefix + p + ".weight", Shape: bench.Shape{c, c, 1, 1}}, bench.ArraySpec{Name: prefix + p + ".bias", Shape: bench.Shape{c}})
		ws, bs = append(ws, prefix+p+".weight"), append(bs, prefix+p+".bias")
	}
	wqkv, bqkv := fmt.Sprintf("vq.at.wqkv.%d", c), fmt.Sprintf("vq.at.bqkv.%d", c)
	g.Temp(wqkv, bench.Shape{3 * c, c})
	g.Temp(bqkv, bench.Shape{3 * c})
	qkv := fmt.Sprintf("vq.at.qkv.%dx%d", c, h*w)
	g.Temp(qkv, bench.Shape{n, h * w, 3 * c})
	proj := Gemm{Batch: n, M: h * w, N: 3 * c, K: c, TransB: true, Bias: true}
	core := AttentionCore{Batch: n, Tokens: h * w, Heads: 1, HeadDim: c, Scale: 1 / sqrtInt(c)}
	if v.record {
		v.macs += int64(n) * int64(h*w) * int64(3*c) * int64(c)
		v.macs += core.MACs()
	}
	ctx := fmt.Sprintf("vq.at.ctx.%dx%d", c, h*w)
	g.Temp(ctx, bench.Shape{n, h * w, c})
	img := v.fmap(g, "at.ctx", c, h, w)
	g.Steps = append(g.Steps,
		bench.Step{Node: FlattenLevels{Batch: n, Chans: c, Levels: LevelsOf([2]int{h, w})}, In: []string{hn}, Out: []string{ht}},
		bench.Step{Node: Concat{Parts: 3, Elems: c * c}, In: ws, Out: []string{wqkv}},
		bench.Step{Node: Concat{Parts: 3, Elems: c}, In: bs, Out: []string{bqkv}},
		bench.Step{Node: proj, In: []string{ht, wqkv, bqkv}, Out: []string{qkv}},
		bench.Step{Node: core, In: []string{qkv}, Out: []string{ctx}},
		bench.Step{Node: TokensToImage{Batch: n, Chans: c, Height: h, Width: w}, In: []string{ctx}, Out: []string{img}})
	v.conv(g, prefix+"proj_out", img, out, c, c, h, w, 1, 1, 0, in)
}

// downsample appends Downsample (with_conv): zero padding on the right and
// bottom only, then a 3×3 stride-2 conv with padding 0; it returns the
// output size ⌊(h − 2)/2⌋ + 1 by ⌊(w − 2)/2⌋ + 1.
func (v *vqNet) downsample(g *bench.Graph, prefix, in, out string, c, h, w int) (int, int) {
	p := v.fmap(g, "pad", c, h+1, w+1)
	g.Steps = append(g.Steps, bench.Step{Node: PadRightBottom{Batch: v.batch, Chans: c, Height: h, Width: w}, In: []string{in}, Out: []string{p}})
	return v.conv(g, prefix+"conv", p, out, c, c, h+1, w+1, 3, 2, 0, "")
}

// upsample appends Upsample (with_conv): nearest ×2, then a 3×3 conv.
func (v *vqNet) upsample(g *bench.Graph, prefix, in, out string, c, h, w int) {
	u := v.fmap(g, "up", c, 2*h, 2*w)
	g.Steps = append(g.Steps, bench.Step{Node: UpsampleNearest2x{Batch: v.batch, Chans: c, Height: h, Width: w}, In: []string{in}, Out: []string{u}})
	v.conv(g, prefix+"conv", u, out, c, c, 2*h, 2*w, 3, 1, 1, "")
}

// vqConfig is taming's ddconfig (double_z false) with the image or latent
// size a case runs at.
type vqConfig struct {
	resolution, inCh, outCh, ch, nrb, zCh int
	chMult                                []int
	attn                                  map[int]bool
}

// downSize is the map size after one Downsample.
func downSize(n int) int { return (n-2)/2 + 1 }

// latent is the encoder's output size for an h×w image.
func (c vqConfig) latent(h, w int) (int, int) {
	for i := 0; i+1 < len(c.chMult); i++ {
		h, w = downSize(h), downSize(w)
	}
	return h, w
}

// pingPong returns the one of a, b that is not cur.
func pingPong(cur, a, b string) string {
	if cur == a {
		return b
	}
	return a
}

// encoder appends Encoder on image in [B, inCh, h, w], writing out
// [B, zCh, h', w'] (attention where the construction-time resolution is
// in attn_resolutions, whatever the input size).
func (v *vqNet) encoder(g *bench.Graph, c vqConfig, in, out string, h, w int) {
	p := "encoder."
	cur := v.fmap(g, "x0", c.ch, h, w)
	v.conv(g, p+"conv_in", in, cur, c.inCh, c.ch, h, w, 3, 1, 1, "")
	res, blockIn := c.resolution, c.ch
	for i, m := range c.chMult {
		blockOut := c.ch * m
		for j := 0; j < c.nrb; j++ {
			next := pingPong(cur, v.fmap(g, "x0", blockOut, h, w), v.fmap(g, "x1", blockOut, h, w))
			v.resnetBlock(g, fmt.Sprintf("%sdown.%d.block.%d.", p, i, j), cur, next, blockIn, blockOut, h, w)
			cur, blockIn = next, blockOut
			if c.attn[res] {
				next = pingPong(cur, v.fmap(g, "x0", blockIn, h, w), v.fmap(g, "x1", blockIn, h, w))
				v.attnBlock(g, fmt.Sprintf("%sdown.%d.attn.%d.", p, i, j), cur, next, blockIn, h, w)
				cur = next
			}
		}
		if i+1 < len(c.chMult) {
			oh, ow := downSize(h), downSize(w)
			next := v.fmap(g, "x0", blockIn, oh, ow)
			v.downsample(g, fmt.Sprintf("%sdown.%d.downsample.", p, i), cur, next, blockIn, h, w)
			cur, h, w, res = next, oh, ow, res/2
		}
	}
	cur = v.mid(g, p, cur, blockIn, h, w)
	hn := v.fmap(g, "norm_out", blockIn, h, w)
	v.norm(g, p+"norm_out", cur, hn, blockIn, h, w, true)
	v.conv(g, p+"conv_out", hn, out, blockIn, c.zCh, h, w, 3, 1, 1, "")
}

// mid appends block_1, attn_1, block_2 on the [B, c, h, w] map cur and
// returns the name of the result.
func (v *vqNet) mid(g *bench.Graph, p, cur string, c, h, w int) string {
	for _, s := range []string{"block_1", "attn_1", "block_2"} {
		next := pingPong(cur, v.fmap(g, "x0", c, h, w), v.fmap(g, "x1", c, h, w))
		if s == "attn_1" {
			v.attnBlock(g, p+"mid."+s+".", cur, next, c, h, w)
		} else {
			v.resnetBlock(g, p+"mid."+s+".", cur, next, c, c, h, w)
		}
		cur = next
	}
	return cur
}

// decoder appends Decoder on the latent in [B, zCh, h, w], writing out
// [B, outCh, h·2^(L−1), w·2^(L−1)] (no tanh).
func (v *vqNet) decoder(g *bench.Graph, c vqConfig, in, out string, h, w int) {
	p := "decoder."
	levels := len(c.chMult)
	blockIn := c.ch * c.chMult[levels-1]
	res := c.resolution >> (levels - 1)
	cur := v.fmap(g, "x0", blockIn, h, w)
	v.conv(g, p+"conv_in", in, cur, c.zCh, blockIn, h, w, 3, 1, 1, "")
	cur = v.mid(g, p, cur, blockIn, h, w)
	for i := levels - 1; i >= 0; i-- {
		blockOut := c.ch * c.chMult[i]
		for j := 0; j <= c.nrb; j++ {
			next := pingPong(cur, v.fmap(g, "x0", blockOut, h, w), v.fmap(g, "x1", blockOut, h, w))
			v.resnetBlock(g, fmt.Sprintf("%sup.%d.block.%d.", p, i, j), cur, next, blockIn, blockOut, h, w)
			cur, blockIn = next, blockOut
			if c.attn[res] {
				next = pingPong(cur, v.fmap(g, "x0", blockIn, h, w), v.fmap(g, "x1", blockIn, h, w))
				v.attnBlock(g, fmt.Sprintf("%sup.%d.attn.%d.", p, i, j), cur, next, blockIn, h, w)
				cur = next
			}
		}
		if i > 0 {
			next := pingPong(cur, v.fmap(g, "x0", blockIn, 2*h, 2*w), v.fmap(g, "x1", blockIn, 2*h, 2*w))
			v.upsample(g, fmt.Sprintf("%sup.%d.upsample.", p, i), cur, next, blockIn, h, w)
			cur, h, w, res = next, 2*h, 2*w, res*2
		}
	}
	hn := v.fmap(g, "norm_out", blockIn, h, w)
	v.norm(g, p+"norm_out", cur, hn, blockIn, h, w, true)
	v.conv(g, p+"conv_out", hn, out, blockIn, c.outCh, h, w, 3, 1, 1, "")
}

// quantize appends quant_conv, the codebook search and post_quant_conv on
// the encoder output z [B, zCh, h, w], writing the decoder's input dz and
// the indices [B, h, w].
func (v *vqNet) quantize(g *bench.Graph, c vqConfig, embed, codes int, z, dz, indices string, h, w int) {
	zq := v.fmap(g, "quant_conv", embed, h, w)
	v.conv(g, "quant_conv", z, zq, c.zCh, embed, h, w, 1, 1, 0, "")
	q := v.fmap(g, "quant", embed, h, w)
	vq := VectorQuantize{Batch: v.batch, Chans: embed, Height: h, Width: w, Codes: codes}
	v.add(bench.ArraySpec{Name: "quantize.embedding.weight", Shape: bench.Shape{codes, embed}})
	if v.record {
		v.macs += vq.MACs()
	}
	g.Steps = append(g.Steps, bench.Step{Node: vq, In: []string{zq, "quantize.embedding.weight"}, Out: []string{q, indices}})
	v.conv(g, "post_quant_conv", q, dz, embed, c.zCh, h, w, 1, 1, 0, "")
}
