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
}

func (t *tensor) Shape() bench.Shape { return t.shape }
func (t *tensor) DType() bench.DType { return t.dtype }
