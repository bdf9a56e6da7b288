package cpu

import (
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// maxPool2d pools every (image, channel) plane (maxPoolPlane), the planes
// shared out between the workers.
func (b *Backend) maxPool2d(m ops.MaxPool2d, in, out []*tensor) error {
	oh, ow := m.OutH(), m.OutW()
	if err := checkShapes("max_pool2d", in, []bench.Shape{{m.Batch, m.Chans, m.Height, m.Width}}); err != nil {
		return err
	}
	if err := checkShapes("max_pool2d", out, []bench.Shape{{m.Batch, m.Chans, oh, ow}}); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	if in[0].blocked { // readsBlocked took it blocked: blockedMaxPoolable
		b.maxPoolBlocked(m, x, y)
		out[0].blocked = true
		return nil
	}
	out[0].blocked = false
	planes := m.Batch * m.Chans
	lay := newMaxPoolLayout(m)
	buf, release := b.scratch(b.threads * lay.per)
	defer release()
	parallelWorkers(b.threads, planes, 4, func(w, lo, hi int) {
		s := lay.scratch(buf[w*lay.per : (w+1)*lay.per])
		for pl := lo; pl < hi; pl++ {
			maxPoolPlane(m, x[pl*m.Height*m.Width:(pl+1)*m.Height*m.Width], y[pl*oh*ow:(pl+1)*oh*ow], s)
		}
	})
	return nil
}

// maxPoolResNetWindow reports whether m has ResNet's window (3×3, stride
// 2, padding 1), which maxPoolResNet pools in a few long calls.
func maxPoolResNetWindow(m ops.MaxPool2d) bool { return m.Kernel == 3 && m.Stride == 2 && m.Pad == 1 }

// maxPoolLayout sizes one worker's scratch for maxPoolPlane: for ResNet's
// window, pairs [(H−1)·W] (the maximum of each row and the next), padded
// [OH·2(OW+1)] (each output row's maximum down its window, with a −∞
// column before and after the plane's), even, odd and wide [OH·(OW+1)]
// (padded's columns split, and the outputs with one spare column per
// row); for other windows cols [W]. Each split buffer has a vector of
// slack, which kern.Deinterleave may write.
type maxPoolLayout struct {
	resnet                   bool
	width                    int // cols, for other windows
	pairs, padded, half, per int
}

func newMaxPoolLayout(m ops.MaxPool2d) maxPoolLayout {
	l := maxPoolLayout{resnet: maxPoolResNetWindow(m), width: m.Width}
	if !l.resnet {
		l.per = m.Width
		return l
	}
	slack, oh, ow := kern.RoundWidth(), m.OutH(), m.OutW()
	l.pairs = max(0, m.Height-1) * m.Width
	l.padded = oh*2*(ow+1) + 2*slack
	l.half = oh*(ow+1) + slack
	l.per = l.pairs + l.padded + 3*l.half
	return l
}

// maxPoolScratch is one worker's buffers (maxPoolLayout).
type maxPoolScratch struct{ cols, pairs, padded, even, odd, wide []float32 }

// scratch lays the buffers out in buf (l.per values) and fills padded
// with −∞, whose pad columns no plane overwrites.
func (l maxPoolLayout) scratch(buf []float32) maxPoolScratch {
	if !l.resnet {
		return maxPoolScratch{cols: buf[:l.width]}
	}
	s := maxPoolScratch{pairs: buf[:l.pairs]}
	rest := buf[l.pairs:]
	s.padded, rest = rest[:l.padded], rest[l.padded:]
	s.even, s.odd, s.wide = rest[:l.half], rest[l.half:2*l.half], rest[2*l.half:3*l.half]
	for i := range s.padded {
		s.padded[i] = float32(math.Inf(-1))
	}
	return s
}

// maxPoolPlane pools one plane src [H, W] into dst [OH, OW]:
//
//	dst[oy, ox] = max over the window's pixels inside the plane of src,
//	a NaN anywhere in the window giving NaN
//
// separably: the maximum down each window's rows, then across its
// columns, comparing in the order of the plain loop along each axis
// (kern.Max: out = y when y > x or y is NaN, else x). ResNet's window
// takes maxPoolResNet; other windows go output row by output row, column
// by column.
func maxPoolPlane(m ops.MaxPool2d, src, dst []float32, s maxPoolScratch) {
	if maxPoolResNetWindow(m) {
		maxPoolResNet(m, src, dst, s)
		return
	}
	oh, ow := m.OutH(), m.OutW()
	cols := s.cols
	for oy := 0; oy < oh; oy++ {
		y0 := oy*m.Stride - m.Pad
		ya, yb := max(y0, 0), min(y0+m.Kernel, m.Height)
		out := dst[oy*ow : (oy+1)*ow]
		if ya >= yb { // a window wholly in the padding (pad past kernel/2)
			for i := range out {
				out[i] = float32(math.Inf(-1))
			}
			continue
		}
		copy(cols, src[ya*m.Width:(ya+1)*m.Width])
		for yy := ya + 1; yy < yb; yy++ {
			kern.Max(m.Width, cols, src[yy*m.Width:(yy+1)*m.Width], cols)
		}
		for ox := range out {
			x0 := ox*m.Stride - m.Pad
			xa, xb := max(x0, 0), min(x0+m.Kernel, m.Width)
			if xa >= xb {
				out[ox] = float32(math.Inf(-1))
				continue
			}
			best := cols[xa]
			for _, v := range cols[xa+1 : xb] {
				best = maxNaN(best, v)
			}
			out[ox] = best
		}
	}
}

// maxPoolResNet is maxPoolPlane for ResNet's window, output row oy
// covering rows 2oy−1 … 2oy+1 and output column ox columns 2ox−1 …
// 2ox+1, in a few calls over the whole plane rather than several per
// output row:
//
//	pairs[r] = max(src[r], src[r+1])                 one call, every row r
//	padded[oy][1+x] = max(pairs[2oy−1], src[2oy+1])  per output row (the rows inside the plane)
//	even, odd = padded's even and odd columns        one call
//	wide = max(max(even, odd), even shifted by one)  two calls
//
// then OW of each row's OW+1 wide values are copied out. Padded holds −∞
// before and after each row's columns, so the first and last windows
// compare with −∞ where the plain loop skips the padding: the same
// maximum. DETR's small backbone (128 planes of 50×65) took 0.41 ms a
// node with several calls per output row and takes 0.14 ms, two threads
// (TestNodeProfile, the 2-vCPU Xeon; ONNX Runtime's took 0.04 ms).
func maxPoolResNet(m ops.MaxPool2d, src, dst []float32, s maxPoolScratch) {
	h, w := m.Height, m.Width
	oh, ow := m.OutH(), m.OutW()
	wp, half := 2*(ow+1), ow+1
	if h > 1 {
		kern.Max((h-1)*w, src, src[w:], s.pairs)
	}
	for oy := 0; oy < oh; oy++ {
		ya, yb := max(2*oy-1, 0), min(2*oy+2, h)
		row := s.padded[oy*wp+1 : oy*wp+1+w]
		switch yb - ya {
		case 3:
			kern.Max(w, s.pairs[ya*w:], src[(ya+2)*w:], row)
		case 2:
			copy(row, s.pairs[ya*w:(ya+1)*w])
		default:
			copy(row, src[ya*w:(ya+1)*w])
		}
	}
	n := oh * half
	kern.Deinterleave(n, s.padded, s.even, s.odd)
	kern.Max(n, s.even, s.odd, s.wide)
	kern.Max(n-1, s.wide, s.even[1:], s.wide)
	for oy := 0; oy < oh; oy++ {
		copy(dst[oy*ow:(oy+1)*ow], s.wide[oy*half:])
	}
}

// maxNaN is the larger of a and b, NaN when either is (b when both are).
func maxNaN(a, b float32) float32 {
	if b > a || b != b {
		return b
	}
	return a
}

// blockedMaxPoolable reports whether the max pool m runs on a blocked
// image: ResNet's window (3×3, stride 2, padding 1) over whole channel
// blocks (DETR's backbone, after its first convolution writes blocked).
func blockedMaxPoolable(m ops.MaxPool2d) bool {
	return maxPoolResNetWindow(m) && m.Chans%kern.BlockLanes == 0
}

// maxPoolBlocked is maxPoolResNet on a blocked image x, written blocked
// into y, 16 channels at a time: for output row oy of each block plane,
// the maximum down input rows 2oy−1 … 2oy+1 (those inside the plane, in
// order: kern.Max) into a row of the worker's scratch with a −∞ pixel
// before and after the plane's, then across each output pixel's three
// columns (kern.MaxPool3s2BlockedRow). The comparisons run in the NCHW
// pool's order, so both give the same bits. The output rows are numbered
// row, then plane, as avgPoolBlocked's.
func (b *Backend) maxPoolBlocked(m ops.MaxPool2d, x, y []float32) {
	const l = kern.BlockLanes
	h, w := m.Height, m.Width
	oh, ow := m.OutH(), m.OutW()
	planes := m.Batch * m.Chans / l
	in, out := h*w*l, oh*ow*l
	threads := b.conversionThreads(len(x))
	rowLen := (w + 2) * l
	buf, release := b.scratch(threads * rowLen)
	defer release()
	parallelWorkers(threads, planes*oh, 1, func(wk, lo, hi int) {
		row := buf[wk*rowLen : (wk+1)*rowLen]
		inner := row[l : (w+1)*l] // each output row overwrites it; the pad pixels around it stay −∞
		for i := range l {
			row[i], row[(w+1)*l+i] = float32(math.Inf(-1)), float32(math.Inf(-1))
		}
		for r := lo; r < hi; r++ {
			p, oy := r%planes, r/planes
			src := x[p*in : (p+1)*in]
			ya, yb := max(2*oy-1, 0), min(2*oy+2, h)
			copy(inner, src[ya*w*l:(ya+1)*w*l])
			for yy := ya + 1; yy < yb; yy++ {
				kern.Max(w*l, inner, src[yy*w*l:(yy+1)*w*l], inner)
			}
			kern.MaxPool3s2BlockedRow(ow, row, y[p*out+oy*ow*l:p*out+(oy+1)*ow*l])
		}
	})
}
