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
func AvgPoolPlane(g PoolGeom, plane, out []float32) {
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
