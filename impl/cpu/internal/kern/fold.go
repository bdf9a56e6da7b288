package kern

// FoldChannel sums channel c of the token-major windows x [OH·OW, C·KH·KW]
// into plane [H, W], which it overwrites:
//
//	plane = 0
//	for ky, kx, l: y := oy·SH − PH + ky·DH;  x := ox·SW − PW + kx·DW
//	  if inside: plane[y·W + x] += x[l·C·KH·KW + c·KH·KW + ky·KW + kx]
//
// Taps are visited kernel offset first, then window, the order of
// PyTorch's col2im, so every pixel's sum rounds as PyTorch's does.
// Channels are independent: workers split them.
func FoldChannel(g UnfoldGeom, x []float32, c int, plane []float32) {
	plane = plane[:g.H*g.W]
	clear(plane)
	cols := g.C * g.KH * g.KW
	for ky := 0; ky < g.KH; ky++ {
		for kx := 0; kx < g.KW; kx++ {
			col := c*g.KH*g.KW + ky*g.KW + kx
			for oy := 0; oy < g.OH; oy++ {
				y := oy*g.SH - g.PH + ky*g.DH
				if y < 0 || y >= g.H {
					continue
				}
				row := plane[y*g.W : (y+1)*g.W]
				for ox := 0; ox < g.OW; ox++ {
					xx := ox*g.SW - g.PW + kx*g.DW
					if xx >= 0 && xx < g.W {
						row[xx] += x[(oy*g.OW+ox)*cols+col]
					}
				}
			}
		}
	}
}

// foldRef is FoldChannel over every channel as its plain loop: the oracle.
func foldRef(g UnfoldGeom, x []float32, out []float32) {
	clear(out)
	cols := g.C * g.KH * g.KW
	for c := 0; c < g.C; c++ {
		for ky := 0; ky < g.KH; ky++ {
			for kx := 0; kx < g.KW; kx++ {
				for l := 0; l < g.OH*g.OW; l++ {
					oy, ox := l/g.OW, l%g.OW
					y := oy*g.SH - g.PH + ky*g.DH
					xx := ox*g.SW - g.PW + kx*g.DW
					if y >= 0 && y < g.H && xx >= 0 && xx < g.W {
						out[c*g.H*g.W+y*g.W+xx] += x[l*cols+c*g.KH*g.KW+ky*g.KW+kx]
					}
				}
			}
		}
	}
}
