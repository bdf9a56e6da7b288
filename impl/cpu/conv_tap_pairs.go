package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// useTapPairs reports whether a convolution that goes to the implicit
// GEMM takes its windows from channel-last bf16 pair images
// (kern.TapPairsA) rather than from the NCHW images (kern.WindowsA): on
// cpu-bf16, for an even channel count. Packing the NCHW windows gathers,
// rounds and interleaves every value of every window; from the pair
// images a window is one copy per kernel row (KW·C/2 pairs), the images
// rounded once (docs/cpu-convolution.md, "The bf16 backend's windows").
// An odd channel count (an RGB stem) would take a zero channel per tap:
// measured against the fp32 direct convolution that takes ResNet's
// 7×7 stride-2 stem on cpu-bf16, it ran 1.19× faster at 224×224, as fast
// at 112×112 and 0.62-0.78× as fast at 100×130 and 100×128 (DETR's small
// case; interleaved runs, two threads, AMX), so those stay as they were.
func useTapPairs(c ops.Conv2d, bf16 bool) bool {
	return bf16 && c.InChans%2 == 0
}

// fillTapPairs rounds images x [B, C, H, W] into pairs (TapPairsLen(g,
// batch) of them), channel-last and padded, and returns them as the
// windows' im2col matrix; the rows are split between the workers.
func (b *Backend) fillTapPairs(g kern.UnfoldGeom, batch int, x []float32, pairs []uint32) *kern.TapPairsA {
	t := kern.NewTapPairsA(g, batch, pairs)
	rowLen := g.W * kern.TapPairsChans(g.C)
	buf, release := b.scratch(b.threads * rowLen)
	defer release()
	grain := max(1, (1<<14)/max(rowLen, 1))
	parallelWorkers(b.threads, t.PaddedRows(), grain, func(w, lo, hi int) {
		t.FillRows(x, lo, hi, buf[w*rowLen:(w+1)*rowLen])
	})
	return t
}

// pairScratch returns a temporary buffer of n pairs from the backend's
// pair arena (grown when too small, never shrunk), apart from the float
// arena (scratch), which the GEMM that reads the pairs uses; release must
// be called. Its bytes count toward Memory while in use. Contents are not
// cleared.
func (b *Backend) pairScratch(n int) (buf []uint32, release func()) {
	return fromArena(b, &b.pairArena, n)
}
