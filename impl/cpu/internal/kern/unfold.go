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
		// The columns of this window that fall inside the image; they are
		// the same for every channel and kernel row.
		kxLo, kxHi := clampTaps(x0, g.DW, g.KW, g.W)
		for c := 0; c < g.C; c++ {
			plane := x[c*g.H*g.W : (c+1)*g.H*g.W]
			for ky := 0; ky < g.KH; ky++ {
				dst := row[(c*g.KH+ky)*g.KW : (c*g.KH+ky+1)*g.KW]
				yy := y0 + ky*g.DH
				if yy < 0 || yy >= g.H || kxLo >= kxHi {
					clear(dst)
					continue
				}
				clear(dst[:kxLo])
				src := plane[yy*g.W:]
				for kx := kxLo; kx < kxHi; kx++ {
					dst[kx] = src[x0+kx*g.DW]
				}
				clear(dst[kxHi:])
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
