package kern

// PoolGeom is the geometry of a 2-d average pooling over one plane.
type PoolGeom struct {
	H, W, KH, KW, SH, SW, PH, PW int
	OH, OW                       int
	CountIncludePad              bool
}

// AvgPoolPlane averages one plane [H, W] into out [OH, OW] as
// nn.AvgPool2d does (ceil mode is in OH, OW):
//
//	for oy, ox:
//	  y0 := oy·SH − PH; y1 := min(y0+KH, H+PH)   (likewise x0, x1)
//	  size := (y1−y0)·(x1−x0)
//	  y0, x0 = max(y0, 0), max(x0, 0); y1, x1 = min(y1, H), min(x1, W)
//	  out[oy·OW+ox] = Σ plane[y0:y1, x0:x1] / (size if CountIncludePad else (y1−y0)·(x1−x0))
//
// A 2×2 pool of stride 2 without padding or partial windows (CLIP's
// anti-aliased downsampling) takes avgPool2x2, which sums in the same
// order.
func AvgPoolPlane(g PoolGeom, plane, out []float32) {
	if g.KH == 2 && g.KW == 2 && g.SH == 2 && g.SW == 2 && g.PH == 0 && g.PW == 0 && 2*g.OH <= g.H && 2*g.OW <= g.W {
		avgPool2x2(g, plane, out)
		return
	}
	avgPoolAny(g, plane, out)
}

// avgPoolAny is AvgPoolPlane for any geometry, the loop above.
func avgPoolAny(g PoolGeom, plane, out []float32) {
	for oy := 0; oy < g.OH; oy++ {
		y0 := oy*g.SH - g.PH
		y1 := min(y0+g.KH, g.H+g.PH)
		for ox := 0; ox < g.OW; ox++ {
			x0 := ox*g.SW - g.PW
			x1 := min(x0+g.KW, g.W+g.PW)
			size := (y1 - y0) * (x1 - x0)
			ya, xa, yb, xb := max(y0, 0), max(x0, 0), min(y1, g.H), min(x1, g.W)
			var sum float32
			for y := ya; y < yb; y++ {
				for _, v := range plane[y*g.W+xa : y*g.W+xb] {
					sum += v
				}
			}
			if !g.CountIncludePad {
				size = (yb - ya) * (xb - xa)
			}
			out[oy*g.OW+ox] = sum / float32(size)
		}
	}
}

// avgPool2x2 is AvgPoolPlane for 2×2 windows at stride 2 that all lie
// inside the plane:
//
//	out[oy·OW+ox] = (((a + b) + c) + d) / 4
//	with a, b = plane[2oy, 2ox], plane[2oy, 2ox+1], c, d the same on row 2oy+1
//
// On the SIMD paths a row's whole vectors of outputs take the generated
// row kernel (avgPool2x2Row: the same sums, times 0.25, which is exact),
// and on the AVX-512 path a remainder of at least 8 outputs the AVX2 one
// (ResNet's 14-wide rows); the rest, and the Go path, this loop. CLIP's stem pool plane (112×112
// → 56×56), warm: 1.1 µs against 3.8 µs for the loop alone
// (BenchmarkAvgPool2x2 "fast" before and after, the 2-vCPU Xeon, AVX-512).
func avgPool2x2(g PoolGeom, plane, out []float32) {
	k, w := winogradFor(active), RoundWidth()
	for oy := 0; oy < g.OH; oy++ {
		r0 := plane[2*oy*g.W:][:2*g.OW]
		r1 := plane[(2*oy+1)*g.W:][:2*g.OW]
		o := out[oy*g.OW:][:g.OW]
		ox := 0
		if k != nil {
			if ox = g.OW / w * w; ox > 0 {
				k.avgPool2x2(ox, &r0[0], &r1[0], &o[0])
			}
			if h := w / 2; k.avgPoolHalf != nil && g.OW-ox >= h {
				k.avgPoolHalf(h, &r0[2*ox], &r1[2*ox], &o[ox])
				ox += h
			}
		}
		for ; ox < len(o); ox++ {
			a, b := r0[2*ox:2*ox+2], r1[2*ox:2*ox+2]
			o[ox] = (a[0] + a[1] + b[0] + b[1]) / 4
		}
	}
}
