package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// outlookOracle is VOLO's unfold → softmax attention → fold in float64,
// written the way the original computes it: the unfolded windows of v
// (zero outside), attn @ windows per head, and the fold's scatter-add
// dropping positions in the padding.
func outlookOracle(o ops.OutlookCore, v, logits []float32) []float64 {
	gh, gw, k2, d := o.GridH(), o.GridW(), o.K*o.K, o.Dim/o.Heads
	out := make([]float64, o.Batch*o.Height*o.Width*o.Dim)
	pix := func(b, y, x, c int) int { return ((b*o.Height+y)*o.Width+x)*o.Dim + c }
	inside := func(y, x int) bool { return y >= 0 && y < o.Height && x >= 0 && x < o.Width }
	for b := 0; b < o.Batch; b++ {
		for wy := 0; wy < gh; wy++ {
			for wx := 0; wx < gw; wx++ {
				for h := 0; h < o.Heads; h++ {
					row := logits[((b*gh+wy)*gw+wx)*o.Heads*k2*k2+h*k2*k2:]
					for i := 0; i < k2; i++ {
						mx := math.Inf(-1)
						for j := 0; j < k2; j++ {
							mx = math.Max(mx, o.Scale*float64(row[i*k2+j]))
						}
						var sum float64
						for j := 0; j < k2; j++ {
							sum += math.Exp(o.Scale*float64(row[i*k2+j]) - mx)
						}
						y, x := wy*o.Stride-o.Pad+i/o.K, wx*o.Stride-o.Pad+i%o.K
						if !inside(y, x) {
							continue
						}
						for j := 0; j < k2; j++ {
							a := math.Exp(o.Scale*float64(row[i*k2+j])-mx) / sum
							sy, sx := wy*o.Stride-o.Pad+j/o.K, wx*o.Stride-o.Pad+j%o.K
							if !inside(sy, sx) {
								continue
							}
							for c := h * d; c < (h+1)*d; c++ {
								out[pix(b, y, x, c)] += a * float64(v[pix(b, sy, sx, c)])
							}
						}
					}
				}
			}
		}
	}
	return out
}

// TestOutlookCoreMatchesOracle checks the gathered fold on every path for
// odd and even sizes, other head counts and a kernel the released models
// do not use (k5 p2 s3).
func TestOutlookCoreMatchesOracle(t *testing.T) {
	shapes := []ops.OutlookCore{
		{Batch: 1, Height: 28, Width: 28, Dim: 192, Heads: 6, K: 3, Pad: 1, Stride: 2},
		{Batch: 2, Height: 9, Width: 12, Dim: 40, Heads: 2, K: 3, Pad: 1, Stride: 2},
		{Batch: 1, Height: 7, Width: 5, Dim: 45, Heads: 5, K: 3, Pad: 1, Stride: 2},
		{Batch: 1, Height: 1, Width: 2, Dim: 3, Heads: 1, K: 3, Pad: 1, Stride: 2},
		{Batch: 1, Height: 11, Width: 10, Dim: 14, Heads: 2, K: 5, Pad: 2, Stride: 3},
	}
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		for _, o := range shapes {
			o.Scale = 1 / math.Sqrt(float64(o.Dim/o.Heads))
			be := New(2)
			k4 := o.K * o.K * o.K * o.K
			v := randSlice(rng, o.Batch*o.Height*o.Width*o.Dim, -1, 1)
			logits := randSlice(rng, o.Batch*o.GridH()*o.GridW()*o.Heads*k4, -4, 4)
			in := []*tensor{
				be.testTensor(t, bench.Shape{o.Batch, o.Height, o.Width, o.Dim}, v),
				be.testTensor(t, bench.Shape{o.Batch, o.GridH(), o.GridW(), o.Heads * k4}, logits),
			}
			out := []*tensor{be.testTensor(t, bench.Shape{o.Batch, o.Height * o.Width, o.Dim}, nil)}
			if err := be.outlookCore(o, in, out); err != nil {
				t.Fatal(err)
			}
			checkClose(t, fmt.Sprintf("%+v", o), out[0].data, outlookOracle(o, v, logits))
		}
	})
}

// TestAvgPoolNHWCMatchesOracle checks ceil-mode pooling with partial
// windows at the bottom and right edges.
func TestAvgPoolNHWCMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, a := range []ops.AvgPoolNHWC{
		{Batch: 2, Height: 9, Width: 12, Chans: 40, K: 2},
		{Batch: 1, Height: 7, Width: 5, Chans: 3, K: 3},
		{Batch: 1, Height: 28, Width: 28, Chans: 192, K: 2},
	} {
		be := New(2)
		x := randSlice(rng, a.Batch*a.Height*a.Width*a.Chans, -1, 1)
		in := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Height, a.Width, a.Chans}, x)}
		out := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.OutH(), a.OutW(), a.Chans}, nil)}
		if err := be.avgPoolNHWC(a, in, out); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(out[0].data))
		for b := 0; b < a.Batch; b++ {
			for oy := 0; oy < a.OutH(); oy++ {
				for ox := 0; ox < a.OutW(); ox++ {
					for c := 0; c < a.Chans; c++ {
						var sum float64
						var n int
						for y := oy * a.K; y < min(oy*a.K+a.K, a.Height); y++ {
							for xx := ox * a.K; xx < min(ox*a.K+a.K, a.Width); xx++ {
								sum += float64(x[((b*a.Height+y)*a.Width+xx)*a.Chans+c])
								n++
							}
						}
						want[((b*a.OutH()+oy)*a.OutW()+ox)*a.Chans+c] = sum / float64(n)
					}
				}
			}
		}
		checkClose(t, fmt.Sprintf("%+v", a), out[0].data, want)
	}
}

// TestClassAttnCoreMatchesOracle checks one query per image against all
// tokens, on every path.
func TestClassAttnCoreMatchesOracle(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(15, 16))
		for _, c := range []ops.ClassAttnCore{
			{Batch: 2, Tokens: 10, Heads: 3, HeadDim: 10},
			{Batch: 1, Tokens: 197, Heads: 12, HeadDim: 32},
			{Batch: 3, Tokens: 1, Heads: 1, HeadDim: 7},
		} {
			c.Scale = 1 / math.Sqrt(float64(c.HeadDim))
			e := c.Heads * c.HeadDim
			be := New(2)
			q := randSlice(rng, c.Batch*e, -2, 2)
			kv := randSlice(rng, c.Batch*c.Tokens*2*e, -2, 2)
			in := []*tensor{be.testTensor(t, bench.Shape{c.Batch, 1, e}, q),
				be.testTensor(t, bench.Shape{c.Batch, c.Tokens, 2 * e}, kv)}
			out := []*tensor{be.testTensor(t, bench.Shape{c.Batch, 1, e}, nil)}
			if err := be.classAttnCore(c, in, out); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, c.Batch*e)
			for b := 0; b < c.Batch; b++ {
				for h := 0; h < c.Heads; h++ {
					s := make([]float64, c.Tokens)
					mx := math.Inf(-1)
					for j := range s {
						for d := 0; d < c.HeadDim; d++ {
							s[j] += float64(q[b*e+h*c.HeadDim+d]) * float64(kv[(b*c.Tokens+j)*2*e+h*c.HeadDim+d])
						}
						s[j] *= c.Scale
						mx = math.Max(mx, s[j])
					}
					var sum float64
					for j := range s {
						s[j] = math.Exp(s[j] - mx)
						sum += s[j]
					}
					for j := range s {
						for d := 0; d < c.HeadDim; d++ {
							want[b*e+h*c.HeadDim+d] += s[j] / sum * float64(kv[(b*c.Tokens+j)*2*e+e+h*c.HeadDim+d])
						}
					}
				}
			}
			checkClose(t, fmt.Sprintf("%+v", c), out[0].data, want)
		}
	})
}

// TestVOLOSmallNodes checks the downsample's patch rows, the class-token
// plumbing and the auxiliary-head merge on a small example each.
func TestVOLOSmallNodes(t *testing.T) {
	be := New(2)
	rng := rand.New(rand.NewPCG(17, 18))
	// Patch rows: a 2×2 stride-2 conv written as rows, odd sizes drop the last row and column.
	p := ops.PatchRowsNHWC{Batch: 2, Height: 5, Width: 7, Chans: 3, P: 2}
	x := randSlice(rng, 2*5*7*3, -1, 1)
	rows := []*tensor{be.testTensor(t, bench.Shape{2, 2, 3, 12}, nil)}
	if err := be.patchRowsNHWC(p, []*tensor{be.testTensor(t, bench.Shape{2, 5, 7, 3}, x)}, rows); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 2; b++ {
		for gy := 0; gy < 2; gy++ {
			for gx := 0; gx < 3; gx++ {
				for c := 0; c < 3; c++ {
					for ky := 0; ky < 2; ky++ {
						for kx := 0; kx < 2; kx++ {
							got := rows[0].data[((b*2+gy)*3+gx)*12+c*4+ky*2+kx]
							if want := x[((b*5+gy*2+ky)*7+gx*2+kx)*3+c]; got != want {
								t.Fatalf("patch row (%d,%d,%d) c%d k(%d,%d) = %g, want %g", b, gy, gx, c, ky, kx, got, want)
							}
						}
					}
				}
			}
		}
	}
	// Aux merge: cls + 0.5·max over tokens 1.. (the class token's row is ignored).
	aux := []float32{100, 100, 1, -5, 3, -7 /* image 1 */, -100, -100, -1, -2, -3, -4}
	cls := []float32{10, 20, 30, 40}
	out := []*tensor{be.testTensor(t, bench.Shape{2, 2}, nil)}
	if err := be.auxMerge(ops.AuxMerge{Batch: 2, Tokens: 3, Classes: 2}, []*tensor{
		be.testTensor(t, bench.Shape{2, 1, 2}, cls), be.testTensor(t, bench.Shape{2, 3, 2}, aux)}, out); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float32{11.5, 17.5, 29.5, 39} {
		if out[0].data[i] != want {
			t.Errorf("aux merge %d = %g, want %g", i, out[0].data[i], want)
		}
	}
	// Put token: every other token passes through.
	xs := randSlice(rng, 2*4*3, -1, 1)
	tok := []float32{1, 2, 3, 4, 5, 6}
	put := []*tensor{be.testTensor(t, bench.Shape{2, 4, 3}, nil)}
	if err := be.putToken(ops.PutToken{Batch: 2, Tokens: 4, Dim: 3}, []*tensor{
		be.testTensor(t, bench.Shape{2, 4, 3}, xs), be.testTensor(t, bench.Shape{2, 1, 3}, tok)}, put); err != nil {
		t.Fatal(err)
	}
	for i, got := range put[0].data {
		img, pos := i/12, i%12
		want := xs[i]
		if pos < 3 {
			want = tok[img*3+pos]
		}
		if got != want {
			t.Fatalf("put token element %d = %g, want %g", i, got, want)
		}
	}
}
