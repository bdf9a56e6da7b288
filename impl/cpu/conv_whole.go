package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// wholeMapBytes bounds the token-major output [B·OH·OW, O] that an
// implicit-GEMM convolution computes in one piece before writing it into
// NCHW (ResNet's 7×7 and 14×14 stages). Computed in chunks instead, a
// chunk of a wide output (O = 2048) holds a dozen positions, so every
// channel's run in NCHW is a dozen values and the transpose and the
// residual pass make thousands of short calls.
const wholeMapBytes = 1 << 20

// wholeMapResidualBytes is wholeMapBytes for a convolution with a
// residual, whose chunked store pays most for its short runs: it adds the
// residual run by run. Measured chunked/whole (two threads, interleaved):
// 1.69× for 512→2048 at 25×34 (DETR's last stage at 800×1066), 1.27× for
// 512→2048 at 7×7 and 1.13× for 256→1024 at 14×14 and 128→512 at 28×28,
// these three at batch 8. Without a residual whole maps past 1 MiB gain
// nothing (0.92-1.01×), so the bound stays there.
const wholeMapResidualBytes = 16 << 20

// wholeMap reports whether conv c's implicit GEMM computes its whole
// output before the NCHW store.
func wholeMap(c ops.Conv2d) bool {
	limit := int64(wholeMapBytes)
	if c.Residual {
		limit = wholeMapResidualBytes
	}
	return int64(c.Batch)*int64(c.OutH()*c.OutW())*int64(c.OutChans)*4 <= limit
}

// storeChansBlock is the channels one task of storeWhole writes.
const storeChansBlock = 64

// storeWhole writes tok [B·windows, o] into the NCHW output y [B, o,
// windows], adding res (same layout) and then applying the ReLU when res
// is not nil. Tasks take (image, block of channels): a block's planes
// are one contiguous run of y, so the residual pass is one call per task.
func (b *Backend) storeWhole(batch, windows, o int, tok, y, res []float32, relu bool) {
	blocks := (o + storeChansBlock - 1) / storeChansBlock
	threads := b.threads
	if batch*windows*o < 1<<15 {
		threads = 1
	}
	parallelFor(threads, batch*blocks, 1, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			img, c0 := t/blocks, t%blocks*storeChansBlock
			c1 := min(o, c0+storeChansBlock)
			at, n := (img*o+c0)*windows, (c1-c0)*windows
			kern.Transpose(windows, c1-c0, tok[img*windows*o+c0:], o, y[at:], windows)
			if res != nil {
				d := y[at : at+n]
				kern.Add(n, d, res[at:at+n], d)
				if relu {
					kern.ReLU(n, d, d)
				}
			}
		}
	})
}
