package ops

// The nodes IPT adds (docs/reference-notes.md, "IPT"): the frozen mean
// shift, the upsampler's pixel shuffle, and the two halves of the
// original's tiled evaluation (forward_chop): cutting an image into tiles
// and stitching the tiles' outputs back together.

// MeanShift is IPT's MeanShift, a frozen 1×1 convolution over the colour
// channels: for x [B, Chans, Pixels] (an image [B, Chans, H, W]),
//
//	out[b, o, p] = bias[o] + Σ_c weight[o, c] · x[b, c, p]
//
// with weight [Chans, Chans, 1, 1] and bias [Chans]. The checkpoint holds
// the identity and ∓rgb_range·mean (sub_mean, add_mean).
type MeanShift struct{ Batch, Chans, Pixels int }

// OpName implements bench.Node.
func (MeanShift) OpName() string { return "mean_shift" }

// PixelShuffle is nn.PixelShuffle(R): x [B, Chans·R², H, W] to
// out [B, Chans, H·R, W·R] with
//
//	out[b, c, y·R + i, x·R + j] = x[b, c·R² + i·R + j, y, x]
type PixelShuffle struct{ Batch, Chans, Height, Width, R int }

// OpName implements bench.Node.
func (PixelShuffle) OpName() string { return "pixel_shuffle" }

// Chop is the geometry of IPT's forward_chop on one image of Height ×
// Width pixels (both at least Patch) with Patch × Patch tiles every
// Stride = Patch/4 pixels, for a model that scales by Scale. Its tiles,
// in the order ChopTiles writes them for each image:
//
//	main grid  (i, j), i < NH, j < NW, at (i·Stride, j·Stride), row-major
//	bottom strip j < NW at (Height − Patch, j·Stride)
//	right strip  i < NH at (i·Stride, Width − Patch)
//	corner          at (Height − Patch, Width − Patch)
//
// with NH = (Height − Patch)/Stride + 1 and NW likewise. The original also
// runs a top and a left strip; their tiles are the main grid's first row
// and first column, so they are not run twice here.
type Chop struct {
	Batch, Chans, Height, Width, Patch, Scale int
}

// Stride is the tile step, a quarter of the patch (the original's shave/2).
func (c Chop) Stride() int { return c.Patch / 4 }

// NH is the number of main-grid tile rows.
func (c Chop) NH() int { return (c.Height-c.Patch)/c.Stride() + 1 }

// NW is the number of main-grid tile columns.
func (c Chop) NW() int { return (c.Width-c.Patch)/c.Stride() + 1 }

// Tiles is the number of tiles per image.
func (c Chop) Tiles() int { return c.NH()*c.NW() + c.NW() + c.NH() + 1 }

// TileOrigin is the top-left input pixel of tile t (0 ≤ t < Tiles()).
func (c Chop) TileOrigin(t int) (y, x int) {
	nh, nw, st := c.NH(), c.NW(), c.Stride()
	switch {
	case t < nh*nw:
		return t / nw * st, t % nw * st
	case t < nh*nw+nw:
		return c.Height - c.Patch, (t - nh*nw) * st
	case t < nh*nw+nw+nh:
		return (t - nh*nw - nw) * st, c.Width - c.Patch
	}
	return c.Height - c.Patch, c.Width - c.Patch
}

// ChopTiles cuts every image of x [B, Chans, Height, Width] into the tiles
// of Chop: out [B·Tiles, Chans, Patch, Patch] with
//
//	out[b·Tiles + t, c, y, x] = x[b, c, y0 + y, x0 + x],  (y0, x0) = TileOrigin(t)
type ChopTiles struct{ Chop }

// OpName implements bench.Node.
func (ChopTiles) OpName() string { return "chop_tiles" }

// ChopStitch puts the outputs of Chop's tiles, y [B·Tiles, Chans, P, P]
// with P = Patch·Scale, together into out [B, Chans, Height·Scale,
// Width·Scale] as the original's forward_chop does: every output pixel is
// the mean of the same pixel in a set of tiles that ChopStitch.Sources
// names (in the interior the central crops of up to four main-grid tiles,
// at the edges the strips' crops, at the bottom and right the extra
// strips anchored at the last full tile).
type ChopStitch struct{ Chop }

// OpName implements bench.Node.
func (ChopStitch) OpName() string { return "chop_stitch" }

// Sources lists the tiles whose outputs are averaged into output pixel
// (y, x) of one image: it appends their indices to dst and returns it
// (at most four). Output coordinates are in the scaled image. This is the
// original's sequence of folds, crops, assignments and concatenations,
// solved for one pixel:
//
//	c = Stride·Scale; Hc = ((NH−1)·Stride + Patch)·Scale, Wc likewise
//	kh = ⌊(Patch − hcut)·Scale/2⌋, hcut = (Height − Patch) mod Stride; kw likewise
//	rows below Hc − kh come from the bottom strip, columns right of
//	Wc − kw from the right strip (the corner tile where both hold);
//	elsewhere: the interior (c ≤ y < Hc − c, c ≤ x < Wc − c) averages the
//	main tiles whose central 2c × 2c crop holds the pixel; the left
//	columns x < Patch·Scale average the first column's tiles whose
//	central rows hold it (the first tile alone for y < c); the top rows
//	y < c average the first row's tiles whose central columns hold it.
func (c Chop) Sources(y, x int, dst []int) []int {
	s, st := c.Scale, c.Stride()
	cs, ps := st*s, c.Patch*s
	nh, nw := c.NH(), c.NW()
	hc, wc := ((nh-1)*st+c.Patch)*s, ((nw-1)*st+c.Patch)*s
	kh := (c.Patch - (c.Height-c.Patch)%st) * s / 2
	kw := (c.Patch - (c.Width-c.Patch)%st) * s / 2
	bottom, right := y >= hc-kh, x >= wc-kw
	// along returns the tiles of a strip (n tiles cs apart) whose central
	// crop holds position p, or the first / last tile at the strip's ends.
	along := func(p, n, extent int, emit func(k int)) {
		switch {
		case p < cs:
			emit(0)
		case p >= extent-cs:
			emit(n - 1)
		default:
			for k := max(0, p/cs-2); k <= min(n-1, p/cs-1); k++ {
				if k*cs+cs <= p && p < k*cs+3*cs {
					emit(k)
				}
			}
		}
	}
	switch {
	case bottom && right:
		return append(dst, c.Tiles()-1)
	case bottom:
		along(x, nw, wc, func(j int) { dst = append(dst, nh*nw+j) })
		return dst
	case right:
		along(y, nh, hc, func(i int) { dst = append(dst, nh*nw+nw+i) })
		return dst
	case y >= cs && y < hc-cs && x >= cs && x < wc-cs:
		along(y, nh, hc, func(i int) {
			along(x, nw, wc, func(j int) { dst = append(dst, i*nw+j) })
		})
		return dst
	case x < ps:
		along(y, nh, hc, func(i int) { dst = append(dst, i*nw) })
		return dst
	}
	along(x, nw, wc, func(j int) { dst = append(dst, j) })
	return dst
}

// SourceOrigin is where output pixel (y, x) of the image lies in tile t's
// output: the tile's origin scaled, subtracted.
func (c Chop) SourceOrigin(t int) (y, x int) {
	ty, tx := c.TileOrigin(t)
	return ty * c.Scale, tx * c.Scale
}
