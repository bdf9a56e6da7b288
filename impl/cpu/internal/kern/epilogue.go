package kern

// Act is an activation a GEMM applies to its outputs.
type Act int

// The activations networks fuse into their Linear and conv layers.
const (
	ActNone      Act = iota
	ActReLU          // max(x, 0)
	ActGELU          // exact GELU, 0.5·x·(1 + erf(x/√2)), as PyTorch's nn.GELU
	ActQuickGELU     // x·sigmoid(1.702·x), CLIP's QuickGELU
)

// Epilogue is what a GEMM does to each output after the product, fused
// into the tile loop while the tile is in cache:
//
//	C[i, j] = act(acc[i, j] + Bias[j]) + Residual[i·LdR + j]
//
// Nil slices and ActNone skip their step.
type Epilogue struct {
	Bias     []float32
	Act      Act
	Residual []float32
	LdR      int
}

func (e *Epilogue) active() bool { return e.Bias != nil || e.Act != ActNone || e.Residual != nil }

// apply finishes row, the outputs C[i, j0 : j0+len(row)].
func (e *Epilogue) apply(row []float32, i, j0 int) {
	n := len(row)
	if e.Bias != nil {
		Add(n, row, e.Bias[j0:j0+n], row)
	}
	switch e.Act {
	case ActReLU:
		ReLU(n, row, row)
	case ActGELU:
		GELU(n, row, row)
	case ActQuickGELU:
		QuickGELU(n, row, row)
	}
	if e.Residual != nil {
		Add(n, row, e.Residual[i*e.LdR+j0:i*e.LdR+j0+n], row)
	}
}

// Rows returns the epilogue of the rows from i0 on: the same bias and
// activation, the residual starting at its row i0.
func (e Epilogue) Rows(i0 int) Epilogue {
	if e.Residual != nil {
		e.Residual = e.Residual[i0*e.LdR:]
	}
	return e
}
