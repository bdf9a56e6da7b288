package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// splitRows is the granularity of a split of the output channels: a
// multiple of every taps microkernel's panel height, so that only the
// last group has a partial panel.
const splitRows = 12

// directSplit is a direct convolution's weight split into groups of
// output channels: group i holds channels [at[i], at[i+1]), packed as its
// own matrix (kern.PackA, the bias as the last column), so that workers
// can share a small feature map by channels instead of by positions.
type directSplit struct {
	at  []int
	pas []*kern.PackedA
}

// directGroups is how many groups of output channels conv c runs in on
// the direct path: one per thread when its output positions make fewer
// than two blocks per thread (ResNet's and VQGAN's small maps, where
// splitting by positions leaves threads idle or unbalanced), and one
// otherwise. It is 0 when c does not run on the direct path.
func (b *Backend) directGroups(c ops.Conv2d) int {
	if b.bf16 && c.OutChans > b.bf16DirectMaxOut {
		return 0
	}
	// cpu-bf16 keeps its bf16 implicit GEMM on small maps.
	small := !b.bf16 && kern.Active() != kern.ISAGo && convPath != "windows" && c.KernelH*c.KernelW > 1
	if !useDirect(c) && !small {
		return 0
	}
	g := newDirectGeom(c)
	blocks := (g.n + directBlock - 1) / directBlock
	groups := min(b.threads, c.OutChans/splitRows)
	if blocks >= 2*b.threads || groups < 2 {
		if !useDirect(c) {
			return 0 // one group on a small map: the implicit GEMM is as fast
		}
		return 1
	}
	return groups
}

// newDirectSplit packs the folded weight wf [O, K] and bias in groups
// channel groups of whole splitRows panels.
func newDirectSplit(o, k, groups int, wf, bias []float32) directSplit {
	s := directSplit{at: make([]int, groups+1)}
	panels := (o + splitRows - 1) / splitRows
	for i := 1; i <= groups; i++ {
		s.at[i] = min(o, i*panels/groups*splitRows)
	}
	for i := 0; i < groups; i++ {
		o0, o1 := s.at[i], s.at[i+1]
		s.pas = append(s.pas, directWeight(o1-o0, k, wf[o0*k:o1*k], bias[o0:o1]))
	}
	return s
}

// bytes is the memory the packed groups hold.
func (s directSplit) bytes() int64 {
	var n int64
	for _, pa := range s.pas {
		n += pa.Bytes()
	}
	return n
}

// current reports whether every group is packed for the active ISA path.
func (s directSplit) current() bool {
	for _, pa := range s.pas {
		if !pa.Current() {
			return false
		}
	}
	return true
}

// conv2dDirectSplit is conv2dDirect with the work split by channel group
// as well as by block of output positions: task t computes the block
// t % blocks of group t / blocks, so with one group per thread each
// worker reads the whole padded image and its own part of the weight.
func (b *Backend) conv2dDirectSplit(c ops.Conv2d, s directSplit, g directGeom, x, y, res []float32) {
	oh, ow, o := c.OutH(), c.OutW(), c.OutChans
	rows := 0
	for _, pa := range s.pas {
		rows = max(rows, pa.Rows())
	}
	blocks := (g.n + directBlock - 1) / directBlock
	groups := len(s.pas)
	threads := min(b.threads, blocks*groups)
	buf, release := b.scratch(g.size + threads*rows*directBlock)
	defer release()
	padded, tiles := buf[:g.size], buf[g.size:]
	for img := 0; img < c.Batch; img++ {
		g.pad(x[img*c.InChans*c.Height*c.Width:], padded, b.threads)
		base := img * o * oh * ow
		parallelChunks(threads, blocks*groups, 1, func(w, lo, hi int) {
			tile := tiles[w*rows*directBlock : (w+1)*rows*directBlock]
			for t := lo; t < hi; t++ {
				gr, blk := t/blocks, t%blocks
				o0, o1 := s.at[gr], s.at[gr+1]
				w0 := blk * directBlock
				nb := min(directBlock, g.n-w0)
				kern.SgemmTaps(s.pas[gr], padded[w0:], g.taps, nb, tile, directBlock)
				storeDirectBlock(tile, y[base:], res, base, o1-o0, o0, oh, ow, g.wq, w0, nb, c.ReLU)
			}
		})
	}
}

// storeDirectBlock copies the valid outputs of one block of wide output
// positions [w0, w0+nb) of channels [ch0, ch0+chans) from tile (row
// stride directBlock) into the NCHW planes y (OH×OW each), adding
// res[resOff + …] and then applying the ReLU when res is not nil, or
// applying the ReLU alone when relu.
func storeDirectBlock(tile, y, res []float32, resOff, chans, ch0, oh, ow, wq, w0, nb int, relu bool) {
	for oy := w0 / wq; oy*wq < w0+nb && oy < oh; oy++ {
		q0, q1 := max(w0-oy*wq, 0), min(w0+nb-oy*wq, ow)
		if q0 >= q1 {
			continue
		}
		n := q1 - q0
		for ch := 0; ch < chans; ch++ {
			src := tile[ch*directBlock+oy*wq+q0-w0:][:n]
			at := ((ch0+ch)*oh+oy)*ow + q0
			dst := y[at : at+n]
			switch {
			case res != nil:
				kern.Add(n, src, res[resOff+at:resOff+at+n], dst)
				if relu {
					kern.ReLU(n, dst, dst)
				}
			case relu:
				kern.ReLU(n, src, dst)
			default:
				copy(dst, src)
			}
		}
	}
}
