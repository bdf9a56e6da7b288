package kern

// Act is an activation a GEMM applies to its outputs.
type Act int

// The activations networks fuse into their Linear and conv layers.
const (
	ActNone Act = iota
	ActReLU     // max(x, 0)
	ActGELU     // exact GELU, 0.5·x·(1 + erf(x/√2)), as PyTorch's nn.GELU
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
	if e.Bias != nil {
		for j, v := range e.Bias[j0 : j0+len(row)] {
			row[j] += v
		}
	}
	switch e.Act {
	case ActReLU:
		for j, v := range row {
			row[j] = max(v, 0)
		}
	case ActGELU:
		GELU(len(row), row, row)
	}
	if e.Residual != nil {
		for j, v := range e.Residual[i*e.LdR+j0 : i*e.LdR+j0+len(row)] {
			row[j] += v
		}
	}
}
