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
	e.activate(row)
	if e.Residual != nil {
		Add(n, row, e.Residual[i*e.LdR+j0:i*e.LdR+j0+n], row)
	}
}

// activate applies e's activation to x in place.
func (e *Epilogue) activate(x []float32) {
	switch e.Act {
	case ActReLU:
		ReLU(len(x), x, x)
	case ActGELU:
		GELU(len(x), x, x)
	case ActQuickGELU:
		QuickGELU(len(x), x, x)
	}
}

// applyRows applies e to columns [j0, j1) of rows i0 … i0+rows−1 of C,
// row i0 at c[0:] and the rows ldc apart: as apply on each row, in one
// call over all of them when they lie end to end (j1 − j0 = ldc, and the
// residual's rows too), the same values either way.
func (e *Epilogue) applyRows(c []float32, ldc, i0, rows, j0, j1 int) {
	if j1-j0 == ldc && e.Bias == nil && (e.Residual == nil || e.LdR == ldc) {
		n := rows * ldc
		block := c[j0 : j0+n]
		e.activate(block)
		if e.Residual != nil {
			Add(n, block, e.Residual[i0*e.LdR+j0:i0*e.LdR+j0+n], block)
		}
		return
	}
	for r := range rows {
		e.apply(c[r*ldc+j0:r*ldc+j1], i0+r, j0)
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
