package cpu

import (
	"vitbench/bench"
	"vitbench/impl/cpu/internal/kern"
)

// tensor is a host buffer.
type tensor struct {
	shape bench.Shape
	dtype bench.DType
	data  []float32
	// packed caches the tensor packed as the right-hand operand of a GEMM
	// (a weight [out, in] as Bᵀ) for the ISA path in use; Upload drops it.
	packed *kern.PackedB
	// version counts uploads and node writes, so caches derived from
	// several tensors (a conv weight with BatchNorm folded in, derived.go)
	// know when to rebuild.
	version uint64
	// folded caches the weight with other tensors folded in, with the
	// versions it was built from.
	folded *foldedWeight
	// headMajor caches a weight regrouped head by head for attn_pool
	// (headMajorWeight), with the version it was built from.
	headMajor *headMajorWeight
	// blocked says data holds the image [N, C, H, W] in the channel-blocked
	// layout NCHW16c instead (layout_blocked.go).
	blocked bool
}

func (t *tensor) Shape() bench.Shape { return t.shape }
func (t *tensor) DType() bench.DType { return t.dtype }
