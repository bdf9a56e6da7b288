package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// bilinear64 is the plain-loop bilinear rule shared by both deformable ops
// (docs/reference-notes.md, "Deformable attention sampling" and
// "Deformable convolution") in float64: at(y, x) reads one pixel; the
// point is dropped when a coordinate is ≤ −1 or ≥ its size, and each
// corner outside the image reads as zero.
func bilinear64(y, x float64, h, w int, at func(y, x int) float64) float64 {
	if !(y > -1 && x > -1 && y < float64(h) && x < float64(w)) {
		return 0
	}
	yl, xl := math.Floor(y), math.Floor(x)
	ly, lx := y-yl, x-xl
	px := func(yy, xx int) float64 {
		if yy < 0 || xx < 0 || yy >= h || xx >= w {
			return 0
		}
		return at(yy, xx)
	}
	y0, x0 := int(yl), int(xl)
	return (1-ly)*(1-lx)*px(y0, x0) + (1-ly)*lx*px(y0, x0+1) + ly*(1-lx)*px(y0+1, x0) + ly*lx*px(y0+1, x0+1)
}

// msdeformOracle is ops.MSDeformCore's doc comment as a float64 loop, with
// padded value rows (mask ≠ 0) read as zero.
func msdeformOracle(c ops.MSDeformCore, value, loc, attn, mask []float32) []float64 {
	s, l, m, d, p := c.Values(), len(c.Levels), c.Heads, c.HeadDim, c.Points
	out := make([]float64, c.Batch*c.Queries*m*d)
	for n := 0; n < c.Batch; n++ {
		for q := 0; q < c.Queries; q++ {
			for h := 0; h < m; h++ {
				for li, lv := range c.Levels {
					for pt := 0; pt < p; pt++ {
						j := (((n*c.Queries+q)*m+h)*l+li)*p + pt
						y := float64(loc[2*j+1])*float64(lv.H) - 0.5
						x := float64(loc[2*j])*float64(lv.W) - 0.5
						for ch := 0; ch < d; ch++ {
							v := bilinear64(y, x, lv.H, lv.W, func(yy, xx int) float64 {
								row := lv.Start + yy*lv.W + xx
								if mask != nil && mask[n*s+row] != 0 {
									return 0
								}
								return float64(value[((n*s+row)*m+h)*d+ch])
							})
							out[((n*c.Queries+q)*m+h)*d+ch] += float64(attn[j]) * v
						}
					}
				}
			}
		}
	}
	return out
}

func randSlice(rng *rand.Rand, n int, lo, hi float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float32()
	}
	return v
}

func (b *Backend) testTensor(t *testing.T, s bench.Shape, data []float32) *tensor {
	t.Helper()
	x, err := b.Alloc(s, bench.Float32)
	if err != nil {
		t.Fatal(err)
	}
	if data != nil {
		if err := b.Upload(x, data); err != nil {
			t.Fatal(err)
		}
	}
	return x.(*tensor)
}

// checkClose fails unless got matches the float64 oracle to NMSE ≤ 1e-12
// and every element within 1e-5 + 1e-5·|want|.
func checkClose(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	var num, den float64
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.Abs(g-w) > 1e-5+1e-5*math.Abs(w) {
			t.Fatalf("%s: element %d = %g, want %g", what, i, g, w)
		}
		num += (g - w) * (g - w)
		den += w * w
	}
	if den > 0 && num/den > 1e-12 {
		t.Fatalf("%s: NMSE %g", what, num/den)
	}
}

// forEachPath runs f on every kernel path this machine has.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	for _, p := range kern.Supported() {
		t.Run(string(p), func(t *testing.T) {
			prev := kern.SetISA(p)
			defer kern.SetISA(prev)
			f(t)
		})
	}
}

var msdeformShapes = []ops.MSDeformCore{
	{Batch: 2, Queries: 37, Heads: 3, HeadDim: 30, Points: 3, Levels: ops.LevelsOf([2]int{6, 4}, [2]int{3, 2})},
	{Batch: 1, Queries: 50, Heads: 2, HeadDim: 71, Points: 2, Levels: ops.LevelsOf([2]int{7, 5}, [2]int{4, 3}, [2]int{2, 2})},
	{Batch: 1, Queries: 9, Heads: 8, HeadDim: 32, Points: 4, Levels: ops.LevelsOf([2]int{10, 13}, [2]int{5, 7}, [2]int{3, 4}, [2]int{2, 2})},
	{Batch: 1, Queries: 5, Heads: 1, HeadDim: 1, Points: 1, Levels: ops.LevelsOf([2]int{1, 1})},
}

// TestMSDeformCoreMatchesOracle checks the fused sampling on every path
// against the float64 loop, with locations from −0.2 to 1.2 (outside the
// map on every side) and some exactly on pixel centres and borders.
func TestMSDeformCoreMatchesOracle(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		for _, c := range msdeformShapes {
			be := New(2)
			l := len(c.Levels)
			value := randSlice(rng, c.Batch*c.Values()*c.Heads*c.HeadDim, -1, 1)
			loc := randSlice(rng, c.Batch*c.Queries*c.Heads*l*c.Points*2, -0.2, 1.2)
			for i := 0; i < len(loc); i += 7 {
				loc[i] = []float32{0, 1, 0.5, -0.125, 1.125}[i%5] // centres and the −1 / size borders of W = 4
			}
			attn := randSlice(rng, c.Batch*c.Queries*c.Heads*l*c.Points, 0, 1)
			in := []*tensor{
				be.testTensor(t, bench.Shape{c.Batch, c.Values(), c.Heads, c.HeadDim}, value),
				be.testTensor(t, bench.Shape{c.Batch, c.Queries, c.Heads, l, c.Points, 2}, loc),
				be.testTensor(t, bench.Shape{c.Batch, c.Queries, c.Heads, l, c.Points}, attn),
			}
			out := []*tensor{be.testTensor(t, bench.Shape{c.Batch, c.Queries, c.Heads * c.HeadDim}, nil)}
			if err := be.msDeformCore(c, in, out); err != nil {
				t.Fatal(err)
			}
			checkClose(t, c.String(), out[0].data, msdeformOracle(c, value, loc, attn, nil))
		}
	})
}

// TestMSDeformSampleMatchesOracle checks the fused softmax, location and
// mask handling of ms_deform_attn against a float64 recomputation, for
// 2-d reference points (offsets normalized by (W, H)) and 4-d boxes.
func TestMSDeformSampleMatchesOracle(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		for _, c := range msdeformShapes {
			for _, refDims := range []int{2, 4} {
				be := New(2)
				s, l, m, d, p := c.Values(), len(c.Levels), c.Heads, c.HeadDim, c.Points
				node := ops.MSDeformSample{MSDeformCore: c, RefDims: refDims, Masked: true}
				value := randSlice(rng, c.Batch*s*m*d, -1, 1)
				ref := randSlice(rng, c.Batch*c.Queries*l*refDims, 0, 1)
				off := randSlice(rng, c.Batch*c.Queries*m*l*p*2, -3, 3)
				logits := randSlice(rng, c.Batch*c.Queries*m*l*p, -2, 2)
				mask := make([]float32, c.Batch*s)
				for i := range mask {
					if rng.IntN(4) == 0 {
						mask[i] = 1
					}
				}
				in := []*tensor{
					be.testTensor(t, bench.Shape{c.Batch, s, m * d}, value),
					be.testTensor(t, bench.Shape{c.Batch, c.Queries, l, refDims}, ref),
					be.testTensor(t, bench.Shape{c.Batch, c.Queries, m * l * p * 2}, off),
					be.testTensor(t, bench.Shape{c.Batch, c.Queries, m * l * p}, logits),
					be.testTensor(t, bench.Shape{c.Batch, s}, mask),
				}
				out := []*tensor{be.testTensor(t, bench.Shape{c.Batch, c.Queries, m * d}, nil)}
				if err := be.msDeformSample(node, in, out); err != nil {
					t.Fatal(err)
				}
				// The locations and weights, as MSDeformAttn.forward computes them.
				loc := make([]float32, len(off))
				attn := make([]float32, len(logits))
				for r := 0; r < c.Batch*c.Queries; r++ {
					for h := 0; h < m; h++ {
						row := logits[(r*m+h)*l*p : (r*m+h+1)*l*p]
						mx := math.Inf(-1)
						for _, v := range row {
							mx = math.Max(mx, float64(v))
						}
						var sum float64
						for _, v := range row {
							sum += math.Exp(float64(v) - mx)
						}
						for i, v := range row {
							attn[(r*m+h)*l*p+i] = float32(math.Exp(float64(v)-mx) / sum)
						}
						for li, lv := range c.Levels {
							rr := ref[(r*l+li)*refDims:]
							for pt := 0; pt < p; pt++ {
								j := ((r*m+h)*l+li)*p + pt
								if refDims == 2 {
									loc[2*j] = float32(float64(rr[0]) + float64(off[2*j])/float64(lv.W))
									loc[2*j+1] = float32(float64(rr[1]) + float64(off[2*j+1])/float64(lv.H))
								} else {
									loc[2*j] = float32(float64(rr[0]) + float64(off[2*j])/float64(p)*float64(rr[2])*0.5)
									loc[2*j+1] = float32(float64(rr[1]) + float64(off[2*j+1])/float64(p)*float64(rr[3])*0.5)
								}
							}
						}
					}
				}
				checkClose(t, c.String(), out[0].data, msdeformOracle(c, value, loc, attn, mask))
			}
		}
	})
}

// deformConvOracle is ops.DeformConv2d's doc comment as a float64 loop.
func deformConvOracle(dc ops.DeformConv2d, x, offset, mask, weight, bias []float32) []float64 {
	oh, ow, taps := dc.OutH(), dc.OutW(), dc.Taps()
	c, h, w, o := dc.InChans, dc.Height, dc.Width, dc.OutChans
	cg, og, cpo := c/dc.Groups, o/dc.Groups, c/dc.OffsetGroups
	g2 := dc.OffsetGroups
	out := make([]float64, dc.Batch*o*oh*ow)
	for b := 0; b < dc.Batch; b++ {
		for oc := 0; oc < o; oc++ {
			gw := oc / og
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					acc := 0.0
					if bias != nil {
						acc = float64(bias[oc])
					}
					for ci := gw * cg; ci < (gw+1)*cg; ci++ {
						grp := ci / cpo
						for k := 0; k < taps; k++ {
							ky, kx := k/dc.KernelW, k%dc.KernelW
							at := func(ch int) int { return ((b*2*g2*taps+ch)*oh+oy)*ow + ox }
							dy, dx := offset[at(grp*2*taps+2*k)], offset[at(grp*2*taps+2*k+1)]
							mk := 1.0
							if mask != nil {
								mk = float64(mask[((b*g2*taps+grp*taps+k)*oh+oy)*ow+ox])
							}
							sy := float64(oy*dc.StrideH-dc.PadH+ky*dc.DilationH) + float64(dy)
							sx := float64(ox*dc.StrideW-dc.PadW+kx*dc.DilationW) + float64(dx)
							v := bilinear64(sy, sx, h, w, func(yy, xx int) float64 { return float64(x[((b*c+ci)*h+yy)*w+xx]) })
							acc += float64(weight[((oc*cg+ci-gw*cg)*dc.KernelH+ky)*dc.KernelW+kx]) * mk * v
						}
					}
					out[((b*o+oc)*oh+oy)*ow+ox] = acc
				}
			}
		}
	}
	return out
}

// TestDeformConv2dMatchesOracle checks the channels-last gather and the
// grouped GEMM on every path: groups, offset groups that straddle weight
// groups, stride, dilation, no mask, no bias, offsets up to ±4 pixels
// (far outside the image) and exact integer offsets (corners exactly on
// the border).
func TestDeformConv2dMatchesOracle(t *testing.T) {
	geom := func(b, c, h, w, kh, kw, s, p, d int) ops.Unfold {
		return ops.Unfold{Batch: b, InChans: c, Height: h, Width: w, KernelH: kh, KernelW: kw, StrideH: s, StrideW: s,
			PadH: p, PadW: p, DilationH: d, DilationW: d}
	}
	cases := []ops.DeformConv2d{
		{Unfold: geom(2, 12, 9, 7, 3, 3, 1, 1, 1), OutChans: 8, Groups: 2, OffsetGroups: 3, Bias: true, Mask: true},
		{Unfold: geom(1, 5, 11, 13, 3, 3, 2, 2, 2), OutChans: 6, Groups: 1, OffsetGroups: 1},
		{Unfold: geom(1, 6, 10, 8, 5, 3, 1, 2, 1), OutChans: 7, Groups: 1, OffsetGroups: 2, Bias: true, Mask: true},
		{Unfold: geom(1, 40, 17, 19, 3, 3, 1, 1, 1), OutChans: 36, Groups: 4, OffsetGroups: 2, Bias: true, Mask: true},
		{Unfold: geom(1, 33, 23, 23, 3, 3, 1, 1, 1), OutChans: 20, Groups: 1, OffsetGroups: 1, Bias: true, Mask: true},
	}
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		for _, dc := range cases {
			be := New(2)
			oh, ow, taps := dc.OutH(), dc.OutW(), dc.Taps()
			x := randSlice(rng, dc.Batch*dc.InChans*dc.Height*dc.Width, -1, 1)
			offset := randSlice(rng, dc.Batch*2*dc.OffsetGroups*taps*oh*ow, -4, 4)
			for i := 0; i < len(offset); i += 3 {
				offset[i] = float32(math.Round(float64(offset[i])))
			}
			weight := randSlice(rng, dc.OutChans*dc.InChans/dc.Groups*taps, -0.5, 0.5)
			in := []*tensor{be.testTensor(t, bench.Shape{dc.Batch, dc.InChans, dc.Height, dc.Width}, x),
				be.testTensor(t, bench.Shape{dc.Batch, 2 * dc.OffsetGroups * taps, oh, ow}, offset)}
			var mask, bias []float32
			if dc.Mask {
				mask = randSlice(rng, dc.Batch*dc.OffsetGroups*taps*oh*ow, 0, 1)
				in = append(in, be.testTensor(t, bench.Shape{dc.Batch, dc.OffsetGroups * taps, oh, ow}, mask))
			}
			in = append(in, be.testTensor(t, bench.Shape{dc.OutChans, dc.InChans / dc.Groups, dc.KernelH, dc.KernelW}, weight))
			if dc.Bias {
				bias = randSlice(rng, dc.OutChans, -1, 1)
				in = append(in, be.testTensor(t, bench.Shape{dc.OutChans}, bias))
			}
			out := []*tensor{be.testTensor(t, bench.Shape{dc.Batch, dc.OutChans, oh, ow}, nil)}
			for run := 0; run < 2; run++ { // the second run reuses the packed weights
				if err := be.deformConv2d(dc, in, out); err != nil {
					t.Fatal(err)
				}
				checkClose(t, "deform_conv2d", out[0].data, deformConvOracle(dc, x, offset, mask, weight, bias))
			}
		}
	})
}
