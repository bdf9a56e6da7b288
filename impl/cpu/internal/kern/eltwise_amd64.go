//go:build !purego

package kern

var (
	eltwiseAVX512 = eltwiseKernels{add: addAVX512, relu: reluAVX512, scale: scaleAVX512, addScaled: addScaledAVX512, max: maxAVX512,
		biasAdd:      [2]func(int, float32, *float32, *float32){biasAddAVX512, biasAddReLUAVX512},
		biasResidual: [2]func(int, float32, *float32, *float32, *float32){biasResidualAVX512, biasResidualReLUAVX512}}
	eltwiseAVX2 = eltwiseKernels{add: addAVX2, relu: reluAVX2, scale: scaleAVX2, addScaled: addScaledAVX2, max: maxAVX2,
		biasAdd:      [2]func(int, float32, *float32, *float32){biasAddAVX2, biasAddReLUAVX2},
		biasResidual: [2]func(int, float32, *float32, *float32, *float32){biasResidualAVX2, biasResidualReLUAVX2}}
)

// eltwiseFor returns the elementwise kernels of path p, nil on the Go path.
func eltwiseFor(p ISA) *eltwiseKernels {
	switch p {
	case ISAAVX512:
		return &eltwiseAVX512
	case ISAAVX2:
		return &eltwiseAVX2
	}
	return nil
}
