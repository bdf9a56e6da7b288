package cpu

import "vitbench/bench"

// tensor is a host buffer.
type tensor struct {
	shape bench.Shape
	dtype bench.DType
	data  []float32
}

func (t *tensor) Shape() bench.Shape { return t.shape }
func (t *tensor) DType() bench.DType { return t.dtype }
