package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// A pointwise (1×1, stride 1, no padding) convolution of an NCHW image is
// a matrix product as it stands: y[o, p] = Σ_c w[o, c]·x[c, p] + bias[o]
// over the H·W pixels p, the weight [O, C] read in place as the left
// operand and the image's [C, H·W] as the right one, packed per block of
// pixels (kern.Sgemm). The output is written in NCHW directly, where the
// implicit GEMM would gather the image into token-major rows and
// transpose its tokens back.

// usePointwise reports whether conv c runs as a pointwise product: 1×1,
// stride 1, no padding, at least pointwiseMinPixels pixels, on a SIMD
// path of the float32 backend, unless convPath forces a path.
func usePointwise(c ops.Conv2d, bf16 bool) bool {
	if kern.Active() == kern.ISAGo || bf16 || c.KernelH != 1 || c.KernelW != 1 || c.StrideH != 1 || c.StrideW != 1 ||
		c.PadH != 0 || c.PadW != 0 {
		return false
	}
	switch {
	case convForced("windows") || convForced("direct") || convForced("nopointwise"):
		return false
	case convForced("pointwise"):
		return true
	}
	return c.Height*c.Width >= pointwiseMinPixels
}

// pointwiseMinPixels is the fewest pixels per image for which a 1×1
// convolution runs as a pointwise product: enough blocks of pixels to
// share between the workers. Measured windows/pointwise on two threads
// (TestConvPointwiseAB, BN and ReLU): 1.14× for ResNet's 64→256 at 56×56
// with the residual, 1.30× for 64→64, 1.05× for 256→64, 0.99× for 256→128,
// 1.09× for 64→256 at batch 8; but 0.73-0.79× at 28×28 (four blocks) and
// 0.4-0.5× at 14×14 and 7×7 (one block: one worker).
const pointwiseMinPixels = 2048

// pointwiseCols is the number of pixels one task multiplies: its output
// block (O rows of it) stays in L2 for the epilogue.
const pointwiseCols = 256

// conv2dPointwise runs the pointwise convolution c with the folded weight
// wf [O, C] and bias: workers take (image, block of pointwiseCols pixels)
// tasks, each one product then, per output channel, the bias, the
// residual and the ReLU over the block's run of the plane.
func (b *Backend) conv2dPointwise(c ops.Conv2d, wf, bias, x, y, res []float32) {
	hw, cin, o := c.Height*c.Width, c.InChans, c.OutChans
	blocks := ceilDiv(hw, pointwiseCols)
	parallelFor(b.threads, c.Batch*blocks, 1, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			img, blk := task/blocks, task%blocks
			j0 := blk * pointwiseCols
			n := min(pointwiseCols, hw-j0)
			out := y[img*o*hw+j0:]
			kern.Sgemm(o, n, cin, wf, cin, x[img*cin*hw+j0:], hw, false, out, hw)
			for ch := 0; ch < o; ch++ {
				row := out[ch*hw : ch*hw+n]
				kern.Affine(n, 1, bias[ch], row, row)
				var r []float32
				if res != nil {
					at := (img*o+ch)*hw + j0
					r = res[at : at+n]
				}
				storeRun(row, r, row, c.ReLU)
			}
		}
	})
}
