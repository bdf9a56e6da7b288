package kern

import "sync"

// WindowsA is the im2col matrix of a batch of images, as an ASource that
// packs straight from the images: row i is window Row0+i, that is window
// (Row0+i) mod OH·OW of image (Row0+i) / (OH·OW), and column
// c·KH·KW + ky·KW + kx holds x[c, y0+ky·DH, x0+kx·DW] (zero in the
// padding) — UnfoldRows' layout, the layout of a conv weight [O, C, KH, KW].
// Convolutions and patch embeddings multiply it without materializing it.
type WindowsA struct {
	g          UnfoldGeom
	x          []float32 // images [B, C, H, W]
	row0       int
	taps       []int // per column: c·H·W + ky·DH·W + kx·DW, from the window origin
	tapY, tapX []int // per column: ky·DH and kx·DW
}

// NewWindowsA describes the windows of images x [B, C, H, W] under g. Its
// tap tables depend on the geometry only and are built once per geometry
// (windowTapsOf).
func NewWindowsA(g UnfoldGeom, x []float32) *WindowsA {
	t := windowTapsOf(g)
	return &WindowsA{g: g, x: x, taps: t.taps, tapY: t.tapY, tapX: t.tapX}
}

// windowTaps is the read-only tap tables of WindowsA for one geometry.
type windowTaps struct{ taps, tapY, tapX []int }

// tapsKey is what the tap tables depend on.
type tapsKey struct{ c, h, w, kh, kw, dh, dw int }

// tapsCache holds windowTaps by tapsKey: a network asks for the same few
// geometries on every run. Building DeiT-Ti's patch tables (3·768 ints)
// took 8 µs per call alone and, inside the network, about 80 µs per run
// of the calling goroutine while the other worker waited (instrumented
// Enqueue; whole networks alternating run by run: deit_ti 1.004× on
// cpu-bf16, 1.013× on cpu).
var tapsCache sync.Map

// windowTapsOf returns g's tap tables: per column p = (c·KH + ky)·KW +
// kx, tapY[p] = ky·DH, tapX[p] = kx·DW and taps[p] = c·H·W + tapY[p]·W +
// tapX[p].
func windowTapsOf(g UnfoldGeom) *windowTaps {
	key := tapsKey{g.C, g.H, g.W, g.KH, g.KW, g.DH, g.DW}
	if t, ok := tapsCache.Load(key); ok {
		return t.(*windowTaps)
	}
	k := g.C * g.KH * g.KW
	t := &windowTaps{taps: make([]int, k), tapY: make([]int, k), tapX: make([]int, k)}
	for c := 0; c < g.C; c++ {
		for ky := 0; ky < g.KH; ky++ {
			for kx := 0; kx < g.KW; kx++ {
				p := (c*g.KH+ky)*g.KW + kx
				t.tapY[p], t.tapX[p] = ky*g.DH, kx*g.DW
				t.taps[p] = c*g.H*g.W + t.tapY[p]*g.W + t.tapX[p]
			}
		}
	}
	got, _ := tapsCache.LoadOrStore(key, t)
	return got.(*windowTaps)
}

// From returns the same windows starting at row row0 (for a worker's
// share of the rows).
func (w *WindowsA) From(row0 int) *WindowsA {
	v := *w
	v.row0 = row0
	return &v
}

// origin returns the offset in x of window r's top-left tap (which may lie
// in the padding) and whether every tap of the window is inside the image.
func (w *WindowsA) origin(r int) (off, y0, x0 int, inside bool) {
	g := w.g
	per := g.OH * g.OW
	img, l := r/per, r%per
	y0, x0 = (l/g.OW)*g.SH-g.PH, (l%g.OW)*g.SW-g.PW
	inside = y0 >= 0 && y0+(g.KH-1)*g.DH < g.H && x0 >= 0 && x0+(g.KW-1)*g.DW < g.W
	return img*g.C*g.H*g.W + y0*g.W + x0, y0, x0, inside
}

// tapOrZero is column q of the window whose top-left tap is at offset off
// (image row y0, column x0; see origin): its value, or zero in the padding.
func (w *WindowsA) tapOrZero(off, y0, x0, q int) float32 {
	y, x := y0+w.tapY[q], x0+w.tapX[q]
	if y < 0 || y >= w.g.H || x < 0 || x >= w.g.W {
		return 0
	}
	return w.x[off+w.taps[q]]
}

// PackA implements ASource.
func (w *WindowsA) PackA(pa []float32, i0, mb, mr, pc, kb int) {
	if full := mb / mr * mr; full > mr && w.packContiguous(pa, i0, full, mr, pc, kb) {
		if full == mb {
			return
		}
		pa, i0, mb = pa[full*kb:], i0+full, mb-full
	}
	var base [16]int
	for ir := 0; ir < mb; ir += mr {
		panel := pa[ir*kb : ir*kb+mr*kb]
		rows := min(mr, mb-ir)
		fast := rows == mr && mr <= len(base)
		for r := 0; fast && r < mr; r++ {
			off, _, _, inside := w.origin(w.row0 + i0 + ir + r)
			base[r], fast = off, inside
		}
		if fast && mr == 12 && w.g.SW == 1 && base[11] == base[0]+11 {
			// Twelve neighbouring windows of one row, unit stride: each
			// tap's twelve values are contiguous in the image.
			copyTaps12(w.x[base[0]:], w.taps[pc:pc+kb], panel)
			continue
		}
		if fast {
			// Every window inside the image: one gather per tap, the mr
			// values of a panel column written together, except that a
			// run of at least 8 taps next to each other in the image (a
			// patch row) is transposed in from mr contiguous rows.
			taps := w.taps[pc : pc+kb]
			for p := 0; p < len(taps); {
				run := 1
				for p+run < len(taps) && taps[p+run] == taps[p]+run {
					run++
				}
				if run >= 8 {
					var offs [16]int
					for r := range mr {
						offs[r] = base[r] + taps[p]
					}
					packRows(w.x, offs[:mr], run, panel[p*mr:])
					p += run
					continue
				}
				for _, t := range taps[p : p+run] {
					d := panel[p*mr : p*mr+mr]
					for r := range d {
						d[r] = w.x[base[r]+t]
					}
					p++
				}
			}
			continue
		}
		for r := 0; r < mr; r++ {
			if r >= rows {
				for p := 0; p < kb; p++ {
					panel[p*mr+r] = 0
				}
				continue
			}
			off, y0, x0, _ := w.origin(w.row0 + i0 + ir + r)
			for p := 0; p < kb; p++ {
				panel[p*mr+r] = w.tapOrZero(off, y0, x0, pc+p)
			}
		}
	}
}

// packContiguous packs the rows full tiles of mr rows when their windows
// are neighbours in one image with every tap inside it (a 1×1
// convolution without padding, or windows of one output row at unit
// stride): each tap's values for all the rows are then one run of the
// image, read in order and dealt out to the tiles' panels, where the
// tile-by-tile packing reads mr values of every tap, a plane apart, per
// tile. It reports false, packing nothing, when they are not. Measured
// tile by tile / contiguous on two threads, AVX2, ResNet's 1×1
// convolutions that stay on the implicit GEMM (BN, ReLU): 1.19× for
// 128→512 at 28×28 with the residual, 1.32× for 256→512, 1.05-1.08× at
// 14×14, 1.02-1.03× at 7×7.
func (w *WindowsA) packContiguous(pa []float32, i0, rows, mr, pc, kb int) bool {
	if w.g.SW != 1 {
		return false
	}
	first, _, _, _ := w.origin(w.row0 + i0)
	// Every window, not only the first and the last: with horizontal
	// padding, the last window of an output row and the first of the next
	// are neighbours in memory too, and lie partly in the padding.
	for r := 0; r < rows; r++ {
		if off, _, _, inside := w.origin(w.row0 + i0 + r); !inside || off != first+r {
			return false
		}
	}
	for p, t := range w.taps[pc : pc+kb] {
		src := w.x[first+t : first+t+rows]
		for ir := 0; ir+mr <= rows; ir += mr {
			copy(pa[ir*kb+p*mr:ir*kb+p*mr+mr], src[ir:ir+mr])
		}
	}
	return true
}

// PackPairs implements PairSource: rows [i0, i0+mb) and columns [pc,
// pc+kb) of the windows (kb even), rounded to bf16 pairs of neighbouring
// columns,
//
//	for r < mb, p < kb/2: dst[r·lda + p] = RoundBF16(A[i0+r, pc+2p]) | RoundBF16(A[i0+r, pc+2p+1])<<16
//
// (a tap in the padding is zero). Each window is gathered into one float32
// row, a copy per run of neighbouring taps, and rounded as a whole row
// (VCVTNE2PS2BF16 where it runs). Through PackA the bf16 GEMM would pack
// mr-row panels and regroup every value into rows one by one: on ViT-B/16's
// patch embedding that regrouping took a third of cpu-bf16's time.
func (w *WindowsA) PackPairs(dst []uint32, lda, i0, mb, pc, kb int) {
	if kb%2 != 0 {
		panic("kern: WindowsA.PackPairs of an odd number of columns")
	}
	wsp := workspace.Get().(*[]float32)
	defer workspace.Put(wsp)
	row := grow(wsp, kb)
	taps := w.taps[pc : pc+kb]
	// runs: the columns where a run of neighbouring taps starts, and kb.
	var first [64]int
	runs := first[:0]
	for p := 0; p < kb; p++ {
		if p == 0 || taps[p] != taps[p-1]+1 {
			runs = append(runs, p)
		}
	}
	runs = append(runs, kb)
	for r := range mb {
		off, y0, x0, inside := w.origin(w.row0 + i0 + r)
		if inside {
			for q, p := range runs[:len(runs)-1] {
				copy(row[p:runs[q+1]], w.x[off+taps[p]:])
			}
		} else {
			for p := range row {
				row[p] = w.tapOrZero(off, y0, x0, pc+p)
			}
		}
		packPairs(dst[r*lda:r*lda+kb/2], row)
	}
}
