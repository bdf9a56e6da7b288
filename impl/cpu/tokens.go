package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// tokensPrefix writes [cls (, dist), patches] + pos_embed for every image.
func (b *Backend) tokensPrefix(t ops.TokensPrefix, in, out []*tensor) error {
	n, e, p := t.Patches, t.Dim, t.Prefix
	want := []bench.Shape{{t.Batch, n, e}, {1, 1, e}}
	if p == 2 {
		want = append(want, bench.Shape{1, 1, e})
	}
	want = append(want, bench.Shape{1, n + p, e})
	if err := checkShapes("tokens_prefix", in, want); err != nil {
		return err
	}
	if err := checkShapes("tokens_prefix", out, []bench.Shape{{t.Batch, n + p, e}}); err != nil {
		return err
	}
	patches, pos, y := in[0].data, in[len(in)-1].data, out[0].data
	for img := 0; img < t.Batch; img++ {
		dst := y[img*(n+p)*e : (img+1)*(n+p)*e]
		for j := 0; j < p; j++ {
			kern.Add(e, in[1+j].data, pos[j*e:(j+1)*e], dst[j*e:(j+1)*e])
		}
		kern.Add(n*e, patches[img*n*e:(img+1)*n*e], pos[p*e:], dst[p*e:])
	}
	return nil
}

// takeToken copies one token of every image.
func (b *Backend) takeToken(t ops.TakeToken, in, out []*tensor) error {
	if err := checkShapes("take_token", in, []bench.Shape{{t.Batch, t.Tokens, t.Dim}}); err != nil {
		return err
	}
	if err := checkShapes("take_token", out, []bench.Shape{{t.Batch, 1, t.Dim}}); err != nil {
		return err
	}
	for img := 0; img < t.Batch; img++ {
		src := in[0].data[(img*t.Tokens+t.Index)*t.Dim:]
		copy(out[0].data[img*t.Dim:(img+1)*t.Dim], src[:t.Dim])
	}
	return nil
}

// average writes (a + b) / 2.
func (b *Backend) average(a ops.Average, in, out []*tensor) error {
	if err := checkShapes("average", in, []bench.Shape{a.Shape, a.Shape}); err != nil {
		return err
	}
	if err := checkShapes("average", out, []bench.Shape{a.Shape}); err != nil {
		return err
	}
	n := len(out[0].data)
	kern.Add(n, in[0].data, in[1].data, out[0].data)
	kern.Scale(n, 0.5, out[0].data, out[0].data)
	return nil
}

// reshape copies the elements into the new shape.
func (b *Backend) reshape(r ops.Reshape, in, out []*tensor) error {
	if r.From.Elems() != r.To.Elems() {
		return errShape("reshape", r.From, r.To)
	}
	if err := checkShapes("reshape", in, []bench.Shape{r.From}); err != nil {
		return err
	}
	if err := checkShapes("reshape", out, []bench.Shape{r.To}); err != nil {
		return err
	}
	parallelCopy(b.threads, out[0].data, in[0].data)
	return nil
}

// parallelCopy copies src into dst, split between workers in runs of at
// least 16 Ki values: a reshape of VOLO-D1's 28×28×192 tokens (600 KB)
// took about 80 µs on one worker.
func parallelCopy(threads int, dst, src []float32) {
	parallelChunks(threads, len(src), 1<<14, func(_, lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

// tokensToImage transposes tokens [B, H·W, C] to an image [B, C, H, W].
func (b *Backend) tokensToImage(t ops.TokensToImage, in, out []*tensor) error {
	hw := t.Height * t.Width
	if err := checkShapes("tokens_to_image", in, []bench.Shape{{t.Batch, hw, t.Chans}}); err != nil {
		return err
	}
	if err := checkShapes("tokens_to_image", out, []bench.Shape{{t.Batch, t.Chans, t.Height, t.Width}}); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	for img := 0; img < t.Batch; img++ {
		src, dst := x[img*hw*t.Chans:(img+1)*hw*t.Chans], y[img*t.Chans*hw:(img+1)*t.Chans*hw]
		// Runs of tokens per worker piece, each transposed in 8×8 blocks
		// into the channels' rows.
		parallelFor(b.threads, hw, flattenGrain(t.Chans), func(p0, p1 int) {
			kern.Transpose(p1-p0, t.Chans, src[p0*t.Chans:], t.Chans, dst[p0:], hw)
		})
	}
	return nil
}
