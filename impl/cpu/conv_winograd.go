package cpu

import (
	"sync"
	"sync/atomic"

	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/cpuinfo"
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
// so a vector of consecutive tiles reads each of its 16 patch elements
// as one contiguous load (kern.WinogradInput). The tiles of a group of
// images follow each other in the transformed planes, so the products'
// columns run over all of them; the output transform (kern.WinogradOutput)
// writes each tile row's two output rows with their columns interleaved,
// in the same wide layout, from which whole rows are copied out.

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
	switch {
	case convForced("windows") || convForced("direct") || convForced("nowinograd"):
		return false
	case convForced("winograd"):
		return true
	}
	// The share of the products' columns that are tiles of the map (the
	// rest: the rounding of a group of images to whole panels, and the
	// wide rows' last column when they are kept).
	th, tw := ceilDiv(c.OutH(), 2), ceilDiv(c.OutW(), 2)
	group := winogradGroup(c)
	if minChans := winogradMinChansHere(group * th * tw); c.InChans < minChans || c.OutChans < minChans {
		return false
	}
	rowTiles := winogradRows(th, tw, group)
	computed := ceilDiv(group*th*rowTiles, winogradPanel) * winogradPanel
	return float64(group*th*tw) >= winogradMinShare*float64(computed)
}

// winogradPanel is the column panel of the products the share is
// reckoned in (the AVX-512 microkernel's; AVX2's is half).
const winogradPanel = 32

// winogradRows chooses how the tiles of a group of images are numbered
// in the transformed planes: wide rows of tw+1 tiles (the last one
// discarded), which the input transform covers in one pass per channel,
// or dense rows of tw, one pass per tile row, when that saves a column
// panel of the products (a 16×16 map: 72 wide tiles take three panels,
// 64 dense ones two). It returns the rows' length in tiles: tw when
// dense, tw+1 when wide.
func winogradRows(th, tw, group int) (rowTiles int) {
	wide := ceilDiv(group*th*(tw+1), winogradPanel)
	if ceilDiv(group*th*tw, winogradPanel) < wide {
		return tw
	}
	return tw + 1
}

// winogradGroup is the number of images of a batch whose tiles share the
// products' columns: enough for about winogradGroupCols wide tiles, so
// that a small map's transformed weight is read for more than a few
// tiles and its last panel's rounding is shared.
func winogradGroup(c ops.Conv2d) int {
	n := ceilDiv(c.OutH(), 2) * (ceilDiv(c.OutW(), 2) + 1)
	return max(1, min(c.Batch, winogradGroupCols/n))
}

// winogradGroupCols is the number of wide tiles a group of images is
// sized to reach.
const winogradGroupCols = 256

// winogradMinChans is the fewest input and output channels, and
// winogradMinShare the smallest share of the products' columns that are
// real tiles, for which the Winograd path is chosen. Below them its
// transforms (about as costly per channel as per output channel) or its
// wasted columns outweigh the 2.25× fewer products; on a small map the
// transformed weight (16/9 of the weight) is also read for few tiles.
// Measured direct/Winograd on two threads (TestConvWinogradAB, 3×3 pad 1,
// BN and ReLU, with images grouped and dense rows where they pay; the
// share in brackets): 1.56× for 256 channels at 14×14 (0.77), 1.69× for
// 128 at 28×28 (0.88), 1.48× for 64 at 56×56 (0.94), 1.57× for 64 at
// 32×32 (0.89), 1.35× for 32 at 64×64 (0.97), 1.20× for 64 at 16×16
// (1.0), 1.57× for 256 at 13×13 batch 2 (0.77), 1.64× for 128 at 16×16
// batch 2, 1.87× for 256 at 8×8 batch 2, 1.30× and 1.36× for 512 at 7×7
// batch 2 and 8 (1.0); but 0.68× for 512 at 7×7 alone (16 tiles in a
// 32-column panel: 0.5).
const (
	winogradMinChans = 32
	winogradMinShare = 0.75
)

// winogradMinChansFullWidth is winogradMinChans on the AVX-512 path of an
// Intel CPU, whose cores run a 512-bit FMA at full width (the figures
// above are from an AMD Zen 4, which splits it in two 256-bit halves): the
// products then take half the time they take on Zen 4 while the
// transforms, which move data more than they compute, do not shrink with
// them, so the Winograd path pays only from more channels. Measured
// default/Winograd there (TestConvWinogradAB, a 2-vCPU Xeon with AMX):
// 0.74× for 32 channels at 64×64, 0.99× for 64 at 16×16, 1.04× for 64 at
// 56×56, 1.16× for 64 at 32×32, 1.12–1.40× from 128 channels; in CLIP's
// ResNet-50 stem the direct path took 0.8 against 1.9 ms (32→32 at
// 112×112) and 1.8 against 2.4 ms (32→64).
const winogradMinChansFullWidth = 64

// fullWidthAVX512 says whether this is an Intel CPU (cpuinfo.Vendor),
// read once, at the first convolution that asks; with the AVX-512 path
// active its cores run 512-bit FMAs at full width.
var fullWidthAVX512 = sync.OnceValue(func() bool { return cpuinfo.Vendor() == "GenuineIntel" })

// vendorRulesOff is whether the dispatch ignores the CPU's vendor
// (SetVendorRules(false)).
var vendorRulesOff atomic.Bool

// SetVendorRules turns the convolution rules that depend on the CPU's
// vendor (the Winograd path's channels on Intel AVX-512) on or off and
// returns the previous setting. Off, every CPU takes the rules measured
// on AMD Zen 4, so that which path a convolution takes, and so what it
// allocates, depends on the ISA path alone: `vitbench baseline` measures
// peak bytes that way, the same on every machine.
func SetVendorRules(on bool) (was bool) { return !vendorRulesOff.Swap(!on) }

// winogradMinChansHere is winogradMinChans for this CPU and the active
// ISA path, for products of tiles columns (a group of images' 2×2 tiles):
// on the AVX-512 path of an Intel CPU (unless SetVendorRules turned the
// vendor's rules off) winogradMinChansFullWidth, or
// winogradMinChansFewTiles for at most winogradFewTiles columns.
func winogradMinChansHere(tiles int) int {
	if intelFullWidth() {
		if tiles <= winogradFewTiles {
			return winogradMinChansFewTiles
		}
		return winogradMinChansFullWidth
	}
	return winogradMinChans
}

// intelFullWidth reports whether the vendor's rules apply: the AVX-512
// path on an Intel CPU, the vendor's rules on (SetVendorRules).
func intelFullWidth() bool {
	return !vendorRulesOff.Load() && kern.Active() == kern.ISAAVX512 && fullWidthAVX512()
}

// winogradFewTiles and winogradMinChansFewTiles: on the Intel AVX-512
// path, products of at most a 16×16 map's 64 tiles take the Winograd path
// only from 128 channels. There the direct path (conv2dDirect, by bands)
// pads and multiplies on one core what the Winograd
// path passes between the cores three times (transformed image,
// products, output), with columns for only one panel of each product.
// Measured Winograd/direct from memory (TestConvColdAB, a 2-vCPU Xeon,
// BN and ReLU): 64 channels at 16×16 0.144/0.133 ms, with the residual
// 0.160/0.123 ms; but 128 channels at 16×16 0.316/0.398 ms and 512 at
// 14×14 3.39/3.88 ms, where the products dominate (256 at 14×14, 49
// tiles: 0.96 ms both). VQGAN's small networks, whose middle blocks are
// 64 channels at 16×16, ran 1.05-1.11× faster (in one process,
// alternating, 20 pairs).
const (
	winogradFewTiles         = 64
	winogradMinChansFewTiles = 128
)

// winogradCols is the number of tiles one work item's 16 products cover:
// two microkernel column panels.
const winogradCols = 64

// winogradMaxPart is the most output channels one work item computes, so
// that its 16 product tiles (16 × rows × winogradCols) stay in L2.
const winogradMaxPart = 96

// winoGeom is the tile geometry of one Winograd convolution.
type winoGeom struct {
	c        ops.Conv2d
	oh, ow   int
	th, tw   int   // tiles
	hq, wq   int   // phase planes: (TH+1)×(TW+1)
	ps       int   // floats per channel and image in the phase planes: hq·wq and slack
	n        int   // tiles per image in the transformed planes: TH·rowTiles
	group    int   // images whose tiles share the columns (winogradGroup)
	rowTiles int   // tiles per tile row in the transformed planes: wq (wide), or tw (dense) (winogradRows)
	vs       int   // floats per channel in a transformed plane: group·n and slack
	blocks   int   // column blocks of winogradCols wide tiles of a group
	parts    int   // output-channel parts
	partRows int   // output channels per part (the last may have fewer)
	taps     []int // the products' row offsets in a transformed plane: ch·vs
}

// newWinoGeom lays out conv c's tiles for a backend of threads workers:
// the phase planes, the image groups and their tile rows (winogradGroup,
// winogradRows), the column blocks and the parts of the output channels.
func newWinoGeom(c ops.Conv2d, threads int) winoGeom {
	g := winoGeom{c: c, oh: c.OutH(), ow: c.OutW()}
	g.th, g.tw = ceilDiv(g.oh, 2), ceilDiv(g.ow, 2)
	g.hq, g.wq = g.th+1, g.tw+1
	// Slack past each plane: the transforms read up to wq + 1 past a
	// tile and round their counts up to the vector width.
	g.ps = g.hq*g.wq + g.wq + 1 + 16
	g.group = winogradGroup(c)
	g.rowTiles = winogradRows(g.th, g.tw, g.group)
	g.n = g.th * g.rowTiles
	g.vs = g.group*g.n + 2*winogradCols
	g.blocks = ceilDiv(g.group*g.n, winogradCols)
	g.taps = make([]int, c.InChans)
	for ch := range g.taps {
		g.taps[ch] = ch * g.vs
	}
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
	u := winogradU(o, c, wf)
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

// winogradU returns the 16 transformed weights U = G g Gᵀ of the 3×3
// weight wf [O, C, 3, 3], each [O, C]: u[4ξ+ν][o·C + c], computed in
// float64 and rounded once.
func winogradU(o, c int, wf []float32) [][]float32 {
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
	return u
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

// conv2dWinograd runs conv c (3×3, stride 1) by Winograd F(2×2, 3×3), a
// group of images at a time, in three parallel phases: the workers
// split the channels' phase planes and transform all their tiles
// (kern.WinogradInput), or on large maps only fill the phase planes
// (winogradBlocksMinBytes); then they share the (column block, output
// part) items, each transforming its block of tiles first when the
// planes were left untransformed (transformBlock), running its 16
// products into a tile buffer and transforming those (kern.WinogradOutput,
// the bias added) into wide output rows; then each output channel's rows
// are copied into the NCHW output, adding the residual and applying the
// ReLU on the way.
func (b *Backend) conv2dWinograd(c ops.Conv2d, w *winoWeight, x, y, res []float32) {
	g := w.geom
	cin, o := c.InChans, c.OutChans
	kernelRows := w.parts[0][0].Rows()
	tileSize := 16 * kernelRows * winogradCols
	wide := 2 * g.blocks * winogradCols // floats per output channel and row parity
	rowBuf := 2*g.wq + 2*kern.RoundWidth()
	qSize, vSize := 4*cin*g.group*g.ps, 16*cin*g.vs
	blockSize := 0
	fused := g.transformPerItem(vSize, b.threads)
	if fused {
		vSize, blockSize = 0, 16*cin*winogradBlockStride
	}
	perWorker := tileSize + rowBuf + blockSize
	buf, release := b.scratch(qSize + vSize + b.threads*perWorker + 2*o*wide)
	defer release()
	q, v := buf[:qSize], buf[qSize:qSize+vSize]
	if fused {
		v = nil // the first phase fills the phase planes only
	}
	work := buf[qSize+vSize : qSize+vSize+b.threads*perWorker]
	wout := buf[qSize+vSize+b.threads*perWorker:]
	inImage, outImage := cin*c.Height*c.Width, o*g.oh*g.ow
	blockTaps := make([]int, cin)
	for ch := range blockTaps {
		blockTaps[ch] = ch * winogradBlockStride
	}
	for first := 0; first < c.Batch; first += g.group {
		imgs := min(g.group, c.Batch-first)
		cols := imgs * g.n
		blocks := ceilDiv(cols, winogradCols)
		colTile := w.parts[0][0].ColTile()
		parallelWorkers(min(b.threads, cin), cin, 1, func(wk, lo, hi int) {
			row := work[wk*perWorker+tileSize : wk*perWorker+tileSize+rowBuf]
			for ch := lo; ch < hi; ch++ {
				for i := 0; i < imgs; i++ {
					g.transformInput(x[(first+i)*inImage:(first+i+1)*inImage], q, v, ch, i, row)
				}
				if fused {
					continue
				}
				// The products' panels, rounded up to whole column
				// tiles, read past the tiles: keep those columns finite.
				done := (imgs-1)*g.n + (g.n+kern.RoundWidth()-1)/kern.RoundWidth()*kern.RoundWidth()
				if read := ceilDiv(cols, colTile) * colTile; done < read {
					for s := 0; s < 16; s++ {
						clear(v[(s*cin+ch)*g.vs+done : (s*cin+ch)*g.vs+read])
					}
				}
			}
		})
		items := blocks * g.parts
		parallelWorkers(min(b.threads, items), items, 1, func(wk, lo, hi int) {
			m := work[wk*perWorker : wk*perWorker+tileSize]
			vb := work[wk*perWorker+tileSize+rowBuf : (wk+1)*perWorker]
			have := -1 // the block vb holds
			for it := lo; it < hi; it++ {
				blk, part := it/g.parts, it%g.parts
				w0 := blk * winogradCols
				nb := min(winogradCols, cols-w0)
				pas := &w.parts[part]
				if fused {
					if blk != have {
						g.transformBlock(q, vb, w0, nb, colTile)
						have = blk
					}
					for s := range 16 {
						kern.SgemmTaps(pas[s], vb[s*cin*winogradBlockStride:], blockTaps, nb, m[s*kernelRows*winogradCols:], winogradCols)
					}
				} else {
					for s := range 16 {
						kern.SgemmTaps(pas[s], v[s*cin*g.vs+w0:], g.taps, nb, m[s*kernelRows*winogradCols:], winogradCols)
					}
				}
				o0 := part * g.partRows
				for r := 0; r < pas[0].M; r++ {
					plane := wout[(o0+r)*2*wide:]
					kern.WinogradOutput(nb, m[r*winogradCols:], kernelRows*winogradCols, w.bias[o0+r],
						plane[2*w0:wide], plane[wide+2*w0:2*wide])
				}
			}
		})
		var rs []float32
		if res != nil {
			rs = res[first*outImage : (first+imgs)*outImage]
		}
		g.storeRows(wout, wide, imgs, y[first*outImage:(first+imgs)*outImage], rs, c.ReLU, b.threads)
	}
}

// transformInput writes the transformed tiles of channel ch of the image
// x [C, H, W], image i of its group: its four phase planes into q
// (q[((ph·C + ch)·group + i)·ps + r·wq + j], each padded image row split by
// kern.Deinterleave through row, a buffer of 2·wq rounded up), then the
// 16 planes v[(ξν·C + ch)·vs + i·n + t]. The rounded-up count writes past
// image i's tiles: the images of a group go in order, each overwriting
// the previous one's excess. With v nil it writes the phase planes only.
func (g winoGeom) transformInput(x, q, v []float32, ch, i int, row []float32) {
	g.fillPhases(x, q, ch, i, row)
	if v == nil {
		return
	}
	cin, ps, wq := g.c.InChans, g.ps, g.wq
	at := func(ph int) int { return ((ph*cin+ch)*g.group + i) * ps }
	if g.rowTiles == g.wq {
		kern.WinogradInput(g.n, q[at(0):], cin*g.group*ps, wq, v[ch*g.vs+i*g.n:], cin*g.vs)
		return
	}
	// Dense rows: one pass per tile row, in order, each one's rounded-up
	// excess overwritten by the next.
	for ty := 0; ty < g.th; ty++ {
		kern.WinogradInput(g.tw, q[at(0)+ty*wq:], cin*g.group*ps, wq, v[ch*g.vs+i*g.n+ty*g.tw:], cin*g.vs)
	}
}

// fillPhases writes the four phase planes of channel ch of image x, image
// i of its group, into q (q[((ph·C + ch)·group + i)·ps + r·wq + j]), each
// padded image row split by kern.Deinterleave through row, a buffer of
// 2·wq rounded up.
func (g winoGeom) fillPhases(x, q []float32, ch, i int, row []float32) {
	c, cin, ps, wq := g.c, g.c.InChans, g.ps, g.wq
	plane := g.hq * wq
	img := x[ch*c.Height*c.Width : (ch+1)*c.Height*c.Width]
	clear(row)
	inside := row[c.PadW : c.PadW+min(c.Width, 2*wq-c.PadW)]
	at := func(ph int) int { return ((ph*cin+ch)*g.group + i) * ps }
	for py := 0; py < 2; py++ {
		even := q[at(2*py) : at(2*py)+ps]
		odd := q[at(2*py+1) : at(2*py+1)+ps]
		for r := 0; r < g.hq; r++ {
			yy := 2*r + py - c.PadH
			if yy < 0 || yy >= c.Height {
				clear(even[r*wq : (r+1)*wq])
				clear(odd[r*wq : (r+1)*wq])
				continue
			}
			copy(inside, img[yy*c.Width:])
			kern.Deinterleave(wq, row, even[r*wq:], odd[r*wq:])
		}
		clear(even[plane:])
		clear(odd[plane:])
	}
}

// winogradBlockStride is the floats per channel of a work item's
// transformed block: winogradCols tiles and the rounding of the last
// segment's count to a vector.
const winogradBlockStride = winogradCols + 16

// transformBlock writes the transformed tiles [w0, w0+nb) of the group's
// columns, every channel, from the phase planes q into vb, the 16
// planes of a block: vb[(ξν·C + ch)·winogradBlockStride + t − w0]. The
// tiles are cut into runs that are contiguous in the phase planes (one
// image's wide rows, or one dense row), transformed in order, each run's
// rounded-up excess overwritten by the next; the columns past nb up to
// the products' last column tile are cleared.
func (g winoGeom) transformBlock(q, vb []float32, w0, nb, colTile int) {
	cin, ps, wq, vs := g.c.InChans, g.ps, g.wq, winogradBlockStride
	read := min(vs, ceilDiv(nb, colTile)*colTile)
	for ch := 0; ch < cin; ch++ {
		for t := w0; t < w0+nb; {
			i, r := t/g.n, t%g.n
			qoff, cnt := r, min(w0+nb-t, g.n-r)
			if g.rowTiles != wq {
				qoff, cnt = r/g.tw*wq+r%g.tw, min(w0+nb-t, g.tw-r%g.tw)
			}
			at := (ch*g.group + i) * ps // phase plane 0 of channel ch, image i
			kern.WinogradInput(cnt, q[at+qoff:], cin*g.group*ps, wq, vb[ch*vs+t-w0:], cin*vs)
			t += cnt
		}
		if nb < read {
			for s := 0; s < 16; s++ {
				clear(vb[(s*cin+ch)*vs+nb : (s*cin+ch)*vs+read])
			}
		}
	}
}

// storeRows copies each output channel's wide rows (wout[o·2·wide + p·wide
// + 2·(i·n + ty·wq) + x] is image i's output row 2ty+p, column x) into the
// NCHW output y of imgs images, adding res (when not nil) and then
// applying the ReLU (when relu).
func (g winoGeom) storeRows(wout []float32, wide, imgs int, y, res []float32, relu bool, threads int) {
	oh, ow, o := g.oh, g.ow, g.c.OutChans
	parallelFor(threads, imgs*o, 1, func(lo, hi int) {
		for io := lo; io < hi; io++ {
			i, ch := io/o, io%o
			for oy := 0; oy < oh; oy++ {
				src := wout[ch*2*wide+(oy%2)*wide+2*(i*g.n+(oy/2)*g.rowTiles):][:ow]
				at := ((i*o+ch)*oh + oy) * ow
				var r []float32
				if res != nil {
					r = res[at : at+ow]
				}
				storeRun(src, r, y[at:at+ow], relu)
			}
		}
	})
}

// winogradBlocksMinBytes is the size of the transformed planes of a group
// (16 × C × tiles floats) from which each work item transforms its own
// block of tiles (transformBlock) into a per-worker buffer that stays in
// L2, instead of all the tiles being transformed first and the products
// reading them back from memory. Measured whole planes / per block on two
// threads (a 2-vCPU Xeon, 3×3 with BN and ReLU, interleaved): 1.12× for
// 64 channels at 56×56 (3.9 MB of planes), 1.11× for 128 at 56×56, 1.12×
// for 256 at 14×14 (3.0 MB), 1.08× for 512 at 14×14, 1.04× for 256 at
// 28×28, 1.08× for 64 at 64×64, 1.10× for 256 at 14×14, batch 8; but 0.97×
// for 128 at 28×28 (2.8 MB), 0.90× for 128 at 16×16, batch 2 (2 MB), and
// 0.61× for 512 at 7×7, batch 2 (one block, transformed by both workers).
// In one process, the networks alternating run by run: vq_encoder_f16
// 1.23×, detr_r50 (800×1066) 1.10×, clip_rn50 1.03×, detr_r50_small_b2
// 1.02×, the small VQGAN networks 0.99–1.01×.
const winogradBlocksMinBytes = 2 << 20

// transformPerItem reports whether each work item transforms its own
// block of tiles (transformBlock) for transformed planes of vSize floats
// shared by threads workers, rather than the workers transforming all the
// planes first: when the planes would not stay in L2
// (winogradBlocksMinBytes) and every worker has blocks of its own (the
// one block of a small map is transformed by every worker that takes one
// of its parts), unless they are a group of images' tiles numbered in
// dense rows; and, on the Intel AVX-512 path, for a single image's one
// block of wide rows too. There, transforming the whole planes first, the
// workers split by channels, left half of the planes every product reads
// written on the other core, where a line takes 110–230 ns to cross: each
// worker transforming the block itself ran, on two threads (one process),
// 256 channels at 14×14 in 0.757 against 0.93 ms, 128 at 14×14 0.232
// against 0.300 ms, 512 at 14×14 2.88 against 3.26 ms (clip_rn50 1.03×).
// With dense rows (16×16: a call per tile row of 8 tiles) or grouped
// images the block's transform costs more than the crossing saves: 128
// channels at 16×16 0.411 against 0.305 ms, 512 at 7×7 batch 2 2.87
// against 1.88 ms. Large planes of a group of images in dense rows keep
// whole planes too: a block then gathers short tile rows of several
// images. From memory (TestConvColdAB, cold weights, a 2-vCPU Xeon),
// whole planes / per block at batch 8: 256 channels at 7×9 2.72 / 3.45
// ms, 512 at 7×7 7.30 / 8.69 ms, 128 at 13×17 2.29 / 2.48 ms; but a group
// in wide rows stays per block, 256 at 14×14 6.43 / 5.80 ms, 512 at
// 14×14 23.0 / 20.6 ms (detr_r50_small_b2 at batch 8 1.02×, binaries
// alternating). VITBENCH_CONV's winoblocks and winoplanes force either.
func (g winoGeom) transformPerItem(vSize, threads int) bool {
	switch {
	case convForced("winoplanes"):
		return false
	case convForced("winoblocks"):
		return true
	}
	return vSize*4 > winogradBlocksMinBytes && g.blocks >= threads && (g.group == 1 || g.rowTiles == g.wq) ||
		g.blocks < threads && g.group == 1 && g.rowTiles == g.wq && intelFullWidth()
}
