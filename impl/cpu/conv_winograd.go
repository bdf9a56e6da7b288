package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// Winograd F(2×2, 3×3) convolution. A 3×3, stride-1 convolution computes
// each 2×2 block of outputs (a tile) from the 4×4 patch of padded input
// under it with 16 products per channel pair instead of 36:
//
//	Y[o] = Aᵀ ( Σ_c U[o, c] ⊙ V[c] ) A,   U = G g[o, c] Gᵀ,  V[c] = Bᵀ d[c] B
//
// with d[c] the 4×4 patch of channel c, g the 3×3 kernel and
//
//	Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1]
//	G  = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1]
//	Aᵀ = [1 1 1 0; 0 1 −1 −1]
//
// The sum over c is, for each of the 16 positions (ξ, ν) of the 4×4
// transform, a matrix product M[ξν] = U[ξν] · V[ξν] of the filters [O, C]
// by the transformed tiles [C, tiles]: 2.25× fewer multiply-adds than the
// direct convolution, for the price of the three transforms, which are
// additions and subtractions (the filter's halves are exact in binary).
//
// Layout. The padded image P of each channel is split into its four
// stride-2 phases Q[py, px][i, j] = P[2i+py, 2j+px], (TH+1)×(TW+1) planes
// for TH×TW tiles, so patch element (a, b) of tile (ty, tx) is
// Q[a mod 2, b mod 2][ty + a/2, tx + b/2]: a shifted view of a plane.
// Tiles are numbered over the whole plane width, t = ty·(TW+1) + tx, the
// column tx = TW being discarded (as the direct convolution's wide rows),
// so every transform is a few additions of whole shifted planes, over all
// the channels of a worker at once, through the SIMD elementwise kernels.

// useWinograd reports whether conv c runs as a Winograd convolution: 3×3,
// stride 1, no dilation, on a SIMD path of the float32 backend, with
// enough channels on both sides that the product dominates the transforms
// (which cost about as much per channel as per output channel), unless
// convPath forces a path.
func useWinograd(c ops.Conv2d, bf16 bool) bool {
	if kern.Active() == kern.ISAGo || bf16 || c.KernelH != 3 || c.KernelW != 3 || c.StrideH != 1 || c.StrideW != 1 ||
		c.DilationH != 1 || c.DilationW != 1 || c.OutH() < 2 || c.OutW() < 2 {
		return false
	}
	switch convPath {
	case "windows", "direct", "nowinograd":
		return false
	case "winograd":
		return true
	}
	return c.InChans >= winogradMinChans && c.OutChans >= winogradMinChans &&
		ceilDiv(c.OutH(), 2)*ceilDiv(c.OutW(), 2) >= winogradMinTiles
}

// winogradMinChans is the fewest input and output channels, and
// winogradMinTiles the fewest tiles per image, for which the Winograd
// path is chosen. Below them its transforms (about as costly per channel
// as per output channel) or its transformed weight (16/9 of the weight,
// read again for every image) outweigh the products it saves. Measured
// direct/Winograd on two threads (TestConvWinogradAB, 3×3 pad 1, BN and
// ReLU): 1.52× for 256 channels at 14×14, 1.12× for 128 at 28×28, but
// 0.79× for 512 at 7×7 (16 tiles), 0.94× for 64 at 56×56, 0.82× for 64
// at 16×16 and 0.69× for 32 at 64×64.
const (
	winogradMinChans = 128
	winogradMinTiles = 36
)

// winogradCols is the number of tiles one work item's 16 products cover:
// two microkernel column panels.
const winogradCols = 64

// winogradMaxPart is the most output channels one work item computes, so
// that its 16 product tiles (16 × rows × winogradCols) stay in L2.
const winogradMaxPart = 96

// winoGeom is the tile geometry of one Winograd convolution.
type winoGeom struct {
	c          ops.Conv2d
	oh, ow     int
	th, tw     int // tiles
	hq, wq     int // phase planes: (TH+1)×(TW+1)
	ps         int // floats per channel in a plane array: hq·wq and slack
	n          int // wide tiles TH·wq
	blocks     int // column blocks of winogradCols wide tiles
	parts      int // output-channel parts
	partRows   int // output channels per part (the last may have fewer)
	kernelRows int // rows of C one part's product writes (partRows rounded up)
}

func newWinoGeom(c ops.Conv2d, threads int) winoGeom {
	g := winoGeom{c: c, oh: c.OutH(), ow: c.OutW()}
	g.th, g.tw = ceilDiv(g.oh, 2), ceilDiv(g.ow, 2)
	g.hq, g.wq = g.th+1, g.tw+1
	g.ps = g.hq*g.wq + g.wq + 1
	g.n = g.th * g.wq
	g.blocks = ceilDiv(g.n, winogradCols)
	// Enough parts that every worker has about two items, none over
	// winogradMaxPart rows.
	g.parts = max(ceilDiv(c.OutChans, winogradMaxPart), ceilDiv(2*threads, g.blocks))
	g.parts = min(g.parts, ceilDiv(c.OutChans, 16))
	g.partRows = ceilDiv(c.OutChans, g.parts)
	g.parts = ceilDiv(c.OutChans, g.partRows)
	return g
}

// winoWeight is a convolution weight transformed for the Winograd path:
// U[ξν] [O, C] per part of output channels, packed, and the bias.
type winoWeight struct {
	geom  winoGeom
	parts [][16]*kern.PackedA
	bias  []float32
}

// winogradWeight transforms the folded weight wf [O, C, 3, 3] into
// U[ξν][o, c] = (G g[o, c] Gᵀ)[ξ, ν] (in float64, rounded once) and packs
// it in parts of g.partRows output channels.
func winogradWeight(g winoGeom, wf, bias []float32) *winoWeight {
	o, c := g.c.OutChans, g.c.InChans
	u := make([][]float32, 16)
	for i := range u {
		u[i] = make([]float32, o*c)
	}
	for oc := 0; oc < o*c; oc++ {
		k := wf[oc*9 : oc*9+9]
		var gg [4][3]float64 // G·g
		for col := 0; col < 3; col++ {
			g0, g1, g2 := float64(k[col]), float64(k[3+col]), float64(k[6+col])
			gg[0][col], gg[1][col], gg[2][col], gg[3][col] = g0, (g0+g1+g2)/2, (g0-g1+g2)/2, g2
		}
		for xi := 0; xi < 4; xi++ {
			h0, h1, h2 := gg[xi][0], gg[xi][1], gg[xi][2]
			row := [4]float64{h0, (h0 + h1 + h2) / 2, (h0 - h1 + h2) / 2, h2}
			for nu, v := range row {
				u[xi*4+nu][oc] = float32(v)
			}
		}
	}
	w := &winoWeight{geom: g, bias: bias, parts: make([][16]*kern.PackedA, g.parts)}
	for p := range w.parts {
		o0 := p * g.partRows
		rows := min(g.partRows, o-o0)
		for i := range 16 {
			w.parts[p][i] = kern.PackA(rows, c, u[i][o0*c:], c)
		}
	}
	return w
}

func (w *winoWeight) bytes() int64 {
	var n int64
	for _, p := range w.parts {
		for _, pa := range p {
			n += pa.Bytes()
		}
	}
	return n + int64(len(w.bias))*4
}

func (w *winoWeight) current() bool {
	for _, p := range w.parts {
		for _, pa := range p {
			if !pa.Current() {
				return false
			}
		}
	}
	return true
}

// conv2dWinograd runs conv c (3×3, stride 1) by Winograd F(2×2, 3×3), one
// image at a time: the workers transform their channels' tiles, then share
// the (column block, output part) items, each running its 16 products
// into a tile buffer and transforming that into the output, adding the
// bias (and the residual, then the ReLU, when the node has them).
func (b *Backend) conv2dWinograd(c ops.Conv2d, w *winoWeight, x, y, res []float32) {
	g := w.geom
	cin, ps := c.InChans, g.ps
	kernelRows := w.parts[0][0].Rows()
	tileSize := 16 * kernelRows * winogradCols
	vSize := 16*cin*ps + winogradCols
	buf, release := b.scratch(4*cin*ps + 8*cin*ps + vSize + b.threads*tileSize)
	defer release()
	q, z := buf[:4*cin*ps], buf[4*cin*ps:12*cin*ps]
	v, tiles := buf[12*cin*ps:12*cin*ps+vSize], buf[12*cin*ps+vSize:]
	clear(v[16*cin*ps:])
	taps := make([]int, cin)
	for ch := range taps {
		taps[ch] = ch * ps
	}
	inImage, outImage := cin*c.Height*c.Width, c.OutChans*g.oh*g.ow
	items := g.blocks * g.parts
	for img := 0; img < c.Batch; img++ {
		xi := x[img*inImage : (img+1)*inImage]
		parallelFor(b.threads, cin, 1, func(lo, hi int) { g.transformInput(xi, q, z, v, lo, hi) })
		var ri []float32
		if res != nil {
			ri = res[img*outImage : (img+1)*outImage]
		}
		yi := y[img*outImage : (img+1)*outImage]
		parallelChunks(min(b.threads, items), items, 1, func(wk, lo, hi int) {
			m := tiles[wk*tileSize : (wk+1)*tileSize]
			for it := lo; it < hi; it++ {
				blk, part := it/g.parts, it%g.parts
				w0 := blk * winogradCols
				nb := min(winogradCols, g.n-w0)
				pas := &w.parts[part]
				for i := range 16 {
					kern.SgemmTaps(pas[i], v[i*cin*ps+w0:], taps, nb, m[i*kernelRows*winogradCols:], winogradCols)
				}
				o0 := part * g.partRows
				g.transformOutput(m, kernelRows, pas[0].M, o0, w0, nb, w.bias, yi, ri, c.ReLU)
			}
		})
	}
}

// transformInput writes the transformed tiles of channels [lo, hi) of the
// image x [C, H, W]: the phase planes q, their transform along x, z, and
// along y, v (16 planes per channel, v[ξν][ch·ps + t]).
func (g winoGeom) transformInput(x, q, z, v []float32, lo, hi int) {
	c, cin, ps, wq := g.c, g.c.InChans, g.ps, g.wq
	plane := g.hq * g.wq
	for ph := 0; ph < 4; ph++ {
		py, px := ph/2, ph%2
		// Plane column j reads image column 2j + px − PW, inside for j in [j0, j1).
		j0 := max(0, ceilDiv(c.PadW-px, 2))
		j1 := min(wq, ceilDiv(c.Width+c.PadW-px, 2))
		for ch := lo; ch < hi; ch++ {
			dst := q[(ph*cin+ch)*ps : (ph*cin+ch+1)*ps]
			img := x[ch*c.Height*c.Width : (ch+1)*c.Height*c.Width]
			for i := 0; i < g.hq; i++ {
				row := dst[i*wq : (i+1)*wq]
				yy := 2*i + py - c.PadH
				if yy < 0 || yy >= c.Height || j0 >= j1 {
					clear(row)
					continue
				}
				clear(row[:j0])
				src := img[yy*c.Width : (yy+1)*c.Width]
				off := px - c.PadW
				for j := j0; j < j1; j++ {
					row[j] = src[2*j+off]
				}
				clear(row[j1:])
			}
			clear(dst[plane:])
		}
	}
	// Along x: z[py, ν][s] from q[py, 0] and q[py, 1] at s and s+1 (Bᵀ's
	// rows), over the channels' planes at once; the last channel stops at
	// its plane so no worker reads past its channels.
	span := (hi-lo-1)*ps + plane
	at := func(a []float32, block, shift int) []float32 {
		o := (block*cin+lo)*ps + shift
		return a[o : o+span]
	}
	for py := 0; py < 2; py++ {
		e0, e1 := at(q, 2*py, 0), at(q, 2*py, 1)           // Q[py, 0] at s, s+1
		o0, o1 := at(q, 2*py+1, 0), at(q, 2*py+1, 1)       // Q[py, 1] at s, s+1
		kern.AddScaled(span, -1, e0, e1, at(z, py*4+0, 0)) // d0 − d2
		kern.Add(span, o0, e1, at(z, py*4+1, 0))           // d1 + d2
		kern.AddScaled(span, -1, e1, o0, at(z, py*4+2, 0)) // d2 − d1
		kern.AddScaled(span, -1, o0, o1, at(z, py*4+3, 0)) // d1 − d3
	}
	// Along y: v[ξ, ν][t] from z[0, ν] and z[1, ν] at t and t + wq.
	span = (hi-lo-1)*ps + g.n
	for nu := 0; nu < 4; nu++ {
		a0, a1 := at(z, nu, 0), at(z, nu, wq)     // Z[0, ν] at t, t+wq
		b0, b1 := at(z, 4+nu, 0), at(z, 4+nu, wq) // Z[1, ν] at t, t+wq
		kern.AddScaled(span, -1, a0, a1, at(v, 0*4+nu, 0))
		kern.Add(span, b0, a1, at(v, 1*4+nu, 0))
		kern.AddScaled(span, -1, a1, b0, at(v, 2*4+nu, 0))
		kern.AddScaled(span, -1, b0, b1, at(v, 3*4+nu, 0))
	}
	// The last channel's columns past the tiles are read by the products'
	// rounded-up panels: keep them finite.
	for i := 0; i < 16; i++ {
		clear(v[(i*cin+hi-1)*ps+g.n : (i*cin+hi)*ps])
	}
}

// transformOutput finishes tiles [w0, w0+nb) of output channels
// [o0, o0+rows): m holds the 16 products M[ξν] [kernelRows, winogradCols];
// Y = Aᵀ M A (in place in m), then y[o, 2ty+i, 2tx+j] = Y[i, j] + bias[o]
// (+ res, then max(·, 0) when relu; max(·, 0) alone when relu and no res).
func (g winoGeom) transformOutput(m []float32, kernelRows, rows, o0, w0, nb int, bias, y, res []float32, relu bool) {
	size := kernelRows * winogradCols
	n := rows * winogradCols
	slot := func(xi, nu int) []float32 { return m[(xi*4+nu)*size : (xi*4+nu)*size+n] }
	// Along ν: S[ξ, 0] = M0 + M1 + M2 into slot ν=0, S[ξ, 1] = M1 − M2 − M3 into ν=3.
	for xi := 0; xi < 4; xi++ {
		m0, m1, m2, m3 := slot(xi, 0), slot(xi, 1), slot(xi, 2), slot(xi, 3)
		kern.AddScaled(n, -1, m1, m3, m3)
		kern.AddScaled(n, -1, m3, m2, m3)
		kern.Add(n, m0, m1, m0)
		kern.Add(n, m0, m2, m0)
	}
	// Along ξ, for both columns j (slots ν = 0 and 3).
	for _, nu := range [2]int{0, 3} {
		s0, s1, s2, s3 := slot(0, nu), slot(1, nu), slot(2, nu), slot(3, nu)
		kern.AddScaled(n, -1, s1, s3, s3)
		kern.AddScaled(n, -1, s3, s2, s3)
		kern.Add(n, s0, s1, s0)
		kern.Add(n, s0, s2, s0)
	}
	oh, ow, wq := g.oh, g.ow, g.wq
	for r := 0; r < rows; r++ {
		o := o0 + r
		bo := bias[o]
		plane := y[o*oh*ow : (o+1)*oh*ow]
		var rplane []float32
		if res != nil {
			rplane = res[o*oh*ow : (o+1)*oh*ow]
		}
		for i := 0; i < 2; i++ {
			for j := 0; j < 2; j++ {
				yv := slot(3*i, 3*j)[r*winogradCols : (r+1)*winogradCols]
				for t := w0; t < w0+nb; {
					ty, tx := t/wq, t%wq
					end := min(w0+nb, (ty+1)*wq)
					oy := 2*ty + i
					if oy >= oh {
						break
					}
					txEnd := min(end-ty*wq, g.tw)
					if 2*(txEnd-1)+j >= ow {
						txEnd--
					}
					dst := plane[oy*ow : (oy+1)*ow]
					src := yv[t-w0:]
					for k := tx; k < txEnd; k++ {
						val := src[k-tx] + bo
						if res != nil {
							val += rplane[oy*ow+2*k+j]
						}
						if relu && val < 0 {
							val = 0
						}
						dst[2*k+j] = val
					}
					t = end
				}
			}
		}
	}
}
