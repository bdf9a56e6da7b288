package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// directBands is how the direct path (conv2dDirect) cuts a batch into
// tasks: each image's output rows into bands of about the same height,
// and, when the bands of the batch are fewer than the workers, the output
// channels into parts. A task pads the plane rows its band reads (its rows
// and the kernel's reach below them) into its worker's own buffer, laid
// out like the whole padded image (directGeom) with planes of only those
// rows, and multiplies it block by block. A task's buffer holds, for row r
// of the band (output row oy0 + r) and position q,
//
//	Q[ch, py, px][oy0 + r + dy, q + dx] = band[r·Wq + q + taps[(ch, ky, kx)]]
//
// with taps[(ch, ky, kx)] = ((ch·SH + py)·SW + px)·plane + dy·Wq + dx and
// the ones plane at taps' last entry.
//
// A band's rows are written and read on one core; only the rows a band
// shares with the next are padded twice. Padding the whole image first,
// split between the workers by channels, left half of every block's rows
// written on the other core: on a 2-vCPU guest, where a line crosses
// between the cores in about 100–200 ns, that shared pad took as long on
// two workers as on one and slowed the products after it.
type directBands struct {
	bands    int // bands per image
	maxRows  int // output rows of the tallest band
	parts    int // parts of the output channels
	partRows int // rows of the product per part (a multiple of the row tile)
	plane    int // values per plane of a band's buffer
	ones     int // offset of the ones plane in it
	size     int // floats per band buffer
	taps     []int
}

// directBandMin is the fewest output positions (wide, OH·Wq per image) a
// band is cut to: at least four blocks of directBlock, so that a 3×3
// kernel's two extra rows add at most about a quarter to its padding.
const directBandMin = 4 * directBlock

// directBandsMaxWeight is the largest weight (bytes of the packed
// product) for which a map too small for a band per worker is still cut
// into that many bands rather than into parts of the channels: each band
// reads the whole weight, from L2 when it is this small. 64 channels at
// 16×16 ran 0.101 ms in two bands against 0.109 ms in two parts (one
// process, two threads, a Xeon guest); a larger weight (256 channels at
// 14×14: 2.4 MB) is better split, each worker streaming half of it.
const directBandsMaxWeight = 512 << 10

// newDirectBands plans the bands of conv c (geometry g) for threads
// workers and a product of rows rows (row tile tile): bands of at least
// directBandMin positions, about four per worker on a large image, their
// count over the batch rounded up to a multiple of the workers so that
// static halves balance. A map with fewer bands than workers is cut into
// one band per worker when the weight is small (directBandsMaxWeight);
// otherwise the channels are split too (channelParts), which also halves
// the weight each worker streams.
func newDirectBands(c ops.Conv2d, g directGeom, threads, rows, tile int) directBands {
	oh := c.OutH()
	target := max(directBandMin, ceilDiv(g.n, 4*threads))
	bands := min(oh, ceilDiv(g.n, target))
	if c.Batch*bands < threads && rows*(c.Cols()+1)*4 <= directBandsMaxWeight {
		bands = min(oh, ceilDiv(threads, c.Batch))
	}
	if tasks := c.Batch * bands; tasks >= threads {
		bands = min(oh, ceilDiv(ceilDiv(tasks, threads)*threads, c.Batch))
	}
	d := directBands{bands: bands, maxRows: ceilDiv(oh, bands)}
	d.parts, d.partRows = channelParts(threads, c.Batch*bands, rows, tile)
	reach := (c.KernelH - 1) * c.DilationH / c.StrideH // plane rows below an output row's first
	d.plane = (d.maxRows + reach) * g.wq
	d.ones = c.InChans * g.phases * d.plane
	d.size = d.ones + d.plane + g.wq + directBlock
	d.taps = make([]int, 0, c.Cols()+1)
	for ch := 0; ch < c.InChans; ch++ {
		for ky := 0; ky < c.KernelH; ky++ {
			dy, py := ky*c.DilationH/c.StrideH, ky*c.DilationH%c.StrideH
			for kx := 0; kx < c.KernelW; kx++ {
				dx, px := kx*c.DilationW/c.StrideW, kx*c.DilationW%c.StrideW
				d.taps = append(d.taps, ((ch*c.StrideH+py)*c.StrideW+px)*d.plane+dy*g.wq+dx)
			}
		}
	}
	d.taps = append(d.taps, d.ones)
	return d
}

// bandRows returns the output rows [oy0, oy1) of band i.
func (d directBands) bandRows(oh, i int) (oy0, oy1 int) {
	return i * oh / d.bands, (i + 1) * oh / d.bands
}

// padBand writes into dst the band buffer of output rows from oy0: plane
// rows [oy0, oy0 + plane/wq) of every phase plane of image x (zero past
// the padded image; rowBuf is padBandPairs' scratch for a horizontal
// stride of 2), then the ones plane and a cleared tail.
func (g directGeom) padBand(d directBands, x, dst, rowBuf []float32, oy0 int) {
	switch g.c.StrideW {
	case 2:
		g.padBandPairs(d, x, dst, rowBuf, oy0)
	case 1:
		g.padBandUnit(d, x, dst, oy0)
	default:
		hb := d.plane / g.wq
		for p := 0; p < g.c.InChans*g.phases; p++ {
			plane := dst[p*d.plane : (p+1)*d.plane]
			for i := 0; i < hb; i++ {
				row := plane[i*g.wq : (i+1)*g.wq]
				if oy0+i >= g.hq {
					clear(row)
					continue
				}
				g.padRow(x, row, p, oy0+i)
			}
		}
	}
	fill := dst[d.ones : d.ones+d.plane+directBlock]
	for i := range fill {
		fill[i] = 1
	}
	clear(dst[d.ones+d.plane+directBlock : d.size])
}

// padBandUnit is padBand's planes for a horizontal stride of 1: padRow
// for every row of the band, with the columns every row shares (the image
// row at column PW, zeros around it) worked out once. Calling padRow per
// row, whose integer divisions cost more than copying a 64-value row,
// took 13% of vq_decoder_small (CPU profile, the 2-vCPU Xeon).
func (g directGeom) padBandUnit(d directBands, x, dst []float32, oy0 int) {
	c := g.c
	hb := d.plane / g.wq
	j0 := min(c.PadW, g.wq)                  // plane column j reads image column j − PW,
	j1 := max(j0, min(g.wq, c.Width+c.PadW)) // inside for j in [j0, j1)
	for p := 0; p < c.InChans*g.phases; p++ {
		ch, py := p/g.phases, p%g.phases
		plane := dst[p*d.plane : (p+1)*d.plane]
		img := x[ch*c.Height*c.Width : (ch+1)*c.Height*c.Width]
		for i := 0; i < hb; i++ {
			row := plane[i*g.wq : (i+1)*g.wq]
			y := (oy0+i)*c.StrideH + py - c.PadH
			if oy0+i >= g.hq || y < 0 || y >= c.Height || j0 >= j1 {
				clear(row)
				continue
			}
			clear(row[:j0])
			copy(row[j0:j1], img[y*c.Width:(y+1)*c.Width])
			clear(row[j1:])
		}
	}
}

// padRowBuf is the scratch padBand needs for an image of plane rows wq
// wide: for a horizontal stride of 2, a zero-padded image row and the
// two halves of the last rows of a plane (padBandPairs).
func (g directGeom) padRowBuf() int {
	if g.c.StrideW != 2 {
		return 0
	}
	return 4 * kern.RoundWidth() * ceilDiv(g.wq, kern.RoundWidth())
}

// padBandPairs is padBand's planes for a horizontal stride of 2: for
// every channel and vertical phase py, each band row's image row is placed
// at column PW of a zeroed row of 2·wide values and split into its even
// (px = 0) and odd (px = 1) columns by kern.Deinterleave, the two planes
// being adjacent. The kernel writes whole vectors past wq, into the next
// rows of its plane, which are written after it; the last rows of a plane,
// where those vectors would leave it, go through the buffer's halves.
func (g directGeom) padBandPairs(d directBands, x, dst, buf []float32, oy0 int) {
	c := g.c
	hb := d.plane / g.wq
	wide := kern.RoundWidth() * ceilDiv(g.wq, kern.RoundWidth())
	row, lastEven, lastOdd := buf[:2*wide], buf[2*wide:3*wide], buf[3*wide:4*wide]
	clear(row)
	inside := row[c.PadW : c.PadW+min(c.Width, 2*g.wq-c.PadW)]
	for pair := 0; pair < c.InChans*c.StrideH; pair++ {
		ch, py := pair/c.StrideH, pair%c.StrideH
		p := pair * 2 // planes p (px = 0) and p+1 (px = 1)
		even, odd := dst[p*d.plane:(p+1)*d.plane], dst[(p+1)*d.plane:(p+2)*d.plane]
		img := x[ch*c.Height*c.Width : (ch+1)*c.Height*c.Width]
		for i := 0; i < hb; i++ {
			y := (oy0+i)*c.StrideH + py - c.PadH
			e, o := even[i*g.wq:(i+1)*g.wq], odd[i*g.wq:(i+1)*g.wq]
			if oy0+i >= g.hq || y < 0 || y >= c.Height {
				clear(e)
				clear(o)
				continue
			}
			copy(inside, img[y*c.Width:])
			if (hb-i)*g.wq >= wide {
				kern.Deinterleave(g.wq, row, even[i*g.wq:], odd[i*g.wq:])
				continue
			}
			kern.Deinterleave(g.wq, row, lastEven, lastOdd)
			copy(e, lastEven)
			copy(o, lastOdd)
		}
	}
}

// conv2dDirect runs a convolution as a GEMM whose right operand is the
// padded image read in place (kern.SgemmTaps): no windows are packed.
// Workers take tasks of (image, band of output rows, part of the output
// channels) in order (directBands); each pads its band into its own
// buffer (once for consecutive parts of one band in a piece of tasks)
// and, block by block of directBlock wide positions, writes the tile of C
// into the NCHW output, adding the residual and applying the ReLU on the
// way.
func (b *Backend) conv2dDirect(c ops.Conv2d, pa *kern.PackedA, g directGeom, x, y, res []float32) {
	oh, ow, o := c.OutH(), c.OutW(), c.OutChans
	d := g.bands
	tasks := c.Batch * d.bands * d.parts
	threads := min(b.threads, tasks)
	rowBuf := g.padRowBuf()
	per := d.size + d.partRows*directBlock + rowBuf
	buf, release := b.scratch(threads * per)
	defer release()
	rows := pa.Rows()
	inImage := c.InChans * c.Height * c.Width
	parallelWorkers(threads, tasks, 1, func(w, lo, hi int) {
		band := buf[w*per : w*per+d.size]
		tile := buf[w*per+d.size : w*per+d.size+d.partRows*directBlock]
		rb := buf[(w+1)*per-rowBuf : (w+1)*per]
		have := -1 // the (image, band) this piece padded into band
		for task := lo; task < hi; task++ {
			img, bnd, part := task/(d.bands*d.parts), task/d.parts%d.bands, task%d.parts
			oy0, oy1 := d.bandRows(oh, bnd)
			if have != task/d.parts {
				g.padBand(d, x[img*inImage:(img+1)*inImage], band, rb, oy0)
				have = task / d.parts
			}
			base := img * o * oh * ow
			r0, r1 := part*d.partRows, min((part+1)*d.partRows, rows)
			n := (oy1 - oy0) * g.wq
			for w0 := 0; w0 < n; w0 += directBlock {
				nb := min(directBlock, n-w0)
				kern.SgemmTapsRows(pa, r0, r1, band[w0:], d.taps, nb, tile, directBlock)
				storeBlock(tile, directBlock, w0, nb, g.wq, ow, r0, min(r1, o), y[base+oy0*ow:], oh*ow, res, base+oy0*ow, c.ReLU)
			}
		}
	})
}

// storeBlock copies the valid run of each output row of a block of wide
// positions [w0, w0+nb) (row stride wq, ow valid) from the product's tile
// (row ch−r0 at stride ldt) into channels [r0, r1) of the output y (plane
// stride planeStride, position 0 at wide position 0), adding the residual
// at res[resBase + …] when res is not nil and applying the ReLU.
func storeBlock(tile []float32, ldt, w0, nb, wq, ow, r0, r1 int, y []float32, planeStride int, res []float32, resBase int, relu bool) {
	for oy := w0 / wq; oy*wq < w0+nb; oy++ {
		q0, q1 := max(w0-oy*wq, 0), min(w0+nb-oy*wq, ow)
		if q0 >= q1 {
			continue
		}
		n := q1 - q0
		for ch := r0; ch < r1; ch++ {
			src := tile[(ch-r0)*ldt+oy*wq+q0-w0:][:n]
			at := ch*planeStride + oy*ow + q0
			var r []float32
			if res != nil {
				r = res[resBase+at : resBase+at+n]
			}
			storeRun(src, r, y[at:at+n], relu)
		}
	}
}
