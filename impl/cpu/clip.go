package cpu

import (
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// tokenEmbed writes table[id] + pos[t] for every token of every sequence.
func (b *Backend) tokenEmbed(n ops.TokenEmbed, in, out []*tensor) error {
	l, w := n.Context, n.Width
	if err := checkShapes("token_embed", in, []bench.Shape{{n.Batch, l}, {n.Vocab, w}, {n.Positions(), w}}); err != nil {
		return err
	}
	if err := checkShapes("token_embed", out, []bench.Shape{{n.Batch, l, w}}); err != nil {
		return err
	}
	ids, table, pos, y := in[0].data, in[1].data, in[2].data, out[0].data
	for i, v := range ids {
		id, err := tokenID(v, n.Vocab)
		if err != nil {
			return fmt.Errorf("cpu: token_embed: text[%d, %d]: %v", i/l, i%l, err)
		}
		t := i % l
		kern.Add(w, table[id*w:(id+1)*w], pos[t*w:(t+1)*w], y[i*w:(i+1)*w])
	}
	return nil
}

// tokenID converts a token id stored as float32 to its index, or says why
// it is not one.
func tokenID(v float32, vocab int) (int, error) {
	if !(v >= 0 && v < float32(vocab)) || v != float32(math.Trunc(float64(v))) {
		return 0, fmt.Errorf("token id %g is not an integer in [0, %d)", v, vocab)
	}
	return int(v), nil
}

// eotArgmax is the first index of the largest id of one sequence, as
// torch.argmax returns it.
func eotArgmax(ids []float32) int {
	best := 0
	for t, v := range ids {
		if v > ids[best] {
			best = t
		}
	}
	return best
}

// eotPool copies, per sequence, the token at the end-of-text position.
func (b *Backend) eotPool(n ops.EOTPool, in, out []*tensor) error {
	l, w := n.Context, n.Width
	if err := checkShapes("eot_pool", in, []bench.Shape{{n.Batch, l, w}, {n.Batch, l}}); err != nil {
		return err
	}
	if err := checkShapes("eot_pool", out, []bench.Shape{{n.Batch, 1, w}}); err != nil {
		return err
	}
	x, ids, y := in[0].data, in[1].data, out[0].data
	for s := 0; s < n.Batch; s++ {
		t := eotArgmax(ids[s*l : (s+1)*l])
		copy(y[s*w:(s+1)*w], x[(s*l+t)*w:(s*l+t+1)*w])
	}
	return nil
}

// clipLogits writes exp(logit_scale)·(img/‖img‖)·(txt/‖txt‖)ᵀ, the norms
// and dot products summed in float64.
func (b *Backend) clipLogits(n ops.ClipLogits, in, out []*tensor) error {
	e := n.Dim
	if err := checkShapes("clip_logits", in, []bench.Shape{{n.Images, e}, {n.Texts, e}, {}}); err != nil {
		return err
	}
	if err := checkShapes("clip_logits", out, []bench.Shape{{n.Images, n.Texts}}); err != nil {
		return err
	}
	img, txt, y := in[0].data, in[1].data, out[0].data
	scale := math.Exp(float64(in[2].data[0]))
	norm := func(v []float32) float64 {
		s := 0.0
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	tn := make([]float64, n.Texts)
	for j := range tn {
		tn[j] = norm(txt[j*e : (j+1)*e])
	}
	for i := 0; i < n.Images; i++ {
		a := img[i*e : (i+1)*e]
		in := norm(a)
		for j := 0; j < n.Texts; j++ {
			t := txt[j*e : (j+1)*e]
			dot := 0.0
			for k, v := range a {
				dot += float64(v) * float64(t[k])
			}
			y[i*n.Texts+j] = float32(scale * dot / (in * tn[j]))
		}
	}
	return nil
}

// attnPoolTokens writes [mean of the tokens, tokens] + pos for every image.
func (b *Backend) attnPoolTokens(n ops.AttnPoolTokens, in, out []*tensor) error {
	t, c := n.Tokens, n.Chans
	if err := checkShapes("attn_pool_tokens", in, []bench.Shape{{n.Batch, t, c}, {t + 1, c}}); err != nil {
		return err
	}
	if err := checkShapes("attn_pool_tokens", out, []bench.Shape{{n.Batch, t + 1, c}}); err != nil {
		return err
	}
	x, pos, y := in[0].data, in[1].data, out[0].data
	parallelFor(b.threads, n.Batch, 1, func(lo, hi int) {
		sum := make([]float64, c)
		for img := lo; img < hi; img++ {
			src, dst := x[img*t*c:(img+1)*t*c], y[img*(t+1)*c:(img+1)*(t+1)*c]
			clear(sum)
			for k := 0; k < t; k++ {
				for j, v := range src[k*c : (k+1)*c] {
					sum[j] += float64(v)
				}
			}
			for j := range sum {
				dst[j] = float32(sum[j]/float64(t)) + pos[j]
			}
			kern.Add(t*c, src, pos[c:], dst[c:])
		}
	})
	return nil
}
