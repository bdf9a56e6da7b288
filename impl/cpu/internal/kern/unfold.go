package kern

// UnfoldGeom is the geometry of an nn.Unfold over one image.
type UnfoldGeom struct {
	C, H, W                int
	KH, KW, SH, SW, PH, PW int
	DH, DW                 int
	OH, OW                 int // window rows and columns
}

// UnfoldRows writes windows [lo, hi) (row-major window index l = oy·OW+ox)
// of image x [C, H, W] into out, one token of C·KH·KW values per window:
//
//	for l in [lo, hi), c, ky, kx:
//	  y := oy·SH − PH + ky·DH;  x := ox·SW − PW + kx·DW
//	  out[(l−lo)·C·KH·KW + c·KH·KW + ky·KW + kx] = x[c, y, x] if inside, else 0
func UnfoldRows(g UnfoldGeom, x []float32, out []float32, lo, hi int) {
	cols := g.C * g.KH * g.KW
	for l := lo; l < hi; l++ {
		oy, ox := l/g.OW, l%g.OW
		row := out[(l-lo)*cols : (l-lo+1)*cols]
		y0, x0 := oy*g.SH-g.PH, ox*g.SW-g.PW
		// The taps of this window that fall inside the image; the same for
		// every channel.
		kyLo, kyHi := clampTaps(y0, g.DH, g.KH, g.H)
		kxLo, kxHi := clampTaps(x0, g.DW, g.KW, g.W)
		if kyLo == 0 && kyHi == g.KH && kxLo == 0 && kxHi == g.KW && g.DW == 1 {
			unfoldInterior(g, x, row, y0, x0)
			continue
		}
		unfoldEdge(g, x, row, y0, x0, kyLo, kyHi, kxLo, kxHi)
	}
}

// unfoldInterior gathers one window that lies wholly inside the image with
// unit column dilation: every kernel row is a contiguous run of KW values.
func unfoldInterior(g UnfoldGeom, x, row []float32, y0, x0 int) {
	kw, plane := g.KW, g.H*g.W
	d := 0
	if kw == 3 { // the 3×3 convolutions and soft splits: unrolled
		for c := 0; c < g.C; c++ {
			s := c*plane + y0*g.W + x0
			for ky := 0; ky < g.KH; ky++ {
				dst := row[d : d+3 : d+3]
				src := x[s : s+3 : s+3]
				dst[0], dst[1], dst[2] = src[0], src[1], src[2]
				d += 3
				s += g.DH * g.W
			}
		}
		return
	}
	for c := 0; c < g.C; c++ {
		s := c*plane + y0*g.W + x0
		for ky := 0; ky < g.KH; ky++ {
			dst := row[d : d+kw]
			src := x[s : s+kw]
			if kw >= 8 {
				copy(dst, src)
			} else {
				for i := range dst {
					dst[i] = src[i]
				}
			}
			d += kw
			s += g.DH * g.W
		}
	}
}

// unfoldEdge gathers one window that overlaps the padding (or uses column
// dilation): taps outside [kyLo, kyHi) × [kxLo, kxHi) are zero.
func unfoldEdge(g UnfoldGeom, x, row []float32, y0, x0, kyLo, kyHi, kxLo, kxHi int) {
	kw, plane := g.KW, g.H*g.W
	for c := 0; c < g.C; c++ {
		for ky := 0; ky < g.KH; ky++ {
			dst := row[(c*g.KH+ky)*kw : (c*g.KH+ky+1)*kw]
			if ky < kyLo || ky >= kyHi || kxLo >= kxHi {
				for i := range dst {
					dst[i] = 0
				}
				continue
			}
			src := x[c*plane+(y0+ky*g.DH)*g.W:]
			for kx := 0; kx < kxLo; kx++ {
				dst[kx] = 0
			}
			for kx := kxLo; kx < kxHi; kx++ {
				dst[kx] = src[x0+kx*g.DW]
			}
			for kx := kxHi; kx < kw; kx++ {
				dst[kx] = 0
			}
		}
	}
}

// clampTaps returns the range [lo, hi) of taps t < k for which
// start + t·step lies in [0, size).
func clampTaps(start, step, k, size int) (int, int) {
	lo, hi := 0, k
	for lo < k && start+lo*step < 0 {
		lo++
	}
	for hi > lo && start+(hi-1)*step >= size {
		hi--
	}
	return lo, hi
}

// unfoldRef is UnfoldRows over every window as the plain loop of its doc
// comment: the oracle.
func unfoldRef(g UnfoldGeom, x []float32, out []float32) {
	cols := g.C * g.KH * g.KW
	for l := 0; l < g.OH*g.OW; l++ {
		oy, ox := l/g.OW, l%g.OW
		for c := 0; c < g.C; c++ {
			for ky := 0; ky < g.KH; ky++ {
				for kx := 0; kx < g.KW; kx++ {
					y := oy*g.SH - g.PH + ky*g.DH
					xx := ox*g.SW - g.PW + kx*g.DW
					v := float32(0)
					if y >= 0 && y < g.H && xx >= 0 && xx < g.W {
						v = x[c*g.H*g.W+y*g.W+xx]
					}
					out[l*cols+c*g.KH*g.KW+ky*g.KW+kx] = v
				}
			}
		}
	}
}
