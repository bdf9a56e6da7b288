package cpu

import (
	"fmt"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// gemm runs the gemm op: out[b] = x[b]·op(W) + bias for every batch item,
// as one GEMM over B·M rows, since the weight is shared.
func (b *Backend) gemm(g ops.Gemm, in, out []*tensor) error {
	w := bench.Shape{g.K, g.N}
	if g.TransB {
		w = bench.Shape{g.N, g.K}
	}
	want := []bench.Shape{{g.Batch, g.M, g.K}, w}
	if g.Bias {
		want = append(want, bench.Shape{g.N})
	}
	ld := g.ResidualLd
	if ld == 0 {
		ld = g.N
	}
	if g.Residual {
		if g.ResidualOff < 0 || g.ResidualOff+g.N > ld {
			return fmt.Errorf("cpu: gemm residual columns [%d, %d) outside its width %d", g.ResidualOff, g.ResidualOff+g.N, ld)
		}
		want = append(want, bench.Shape{g.Batch, g.M, ld})
	}
	rowwise := []int{0}
	if g.TransB {
		rowwise = append(rowwise, -2) // the weight may be a conv weight [N, C, KH, KW]
	}
	if g.Residual {
		rowwise = append(rowwise, len(want)-1)
	}
	if err := checkRowShapes("gemm", in, want, rowwise...); err != nil {
		return err
	}
	if err := checkRowShapes("gemm", out, []bench.Shape{{g.Batch, g.M, g.N}}, 0); err != nil {
		return err
	}
	epi := kern.Epilogue{}
	next := 2
	if g.Bias {
		epi.Bias = in[next].data
		next++
	}
	if g.Residual {
		epi.Residual, epi.LdR = in[next].data[g.ResidualOff:], ld
	}
	switch g.Act {
	case "":
	case "relu":
		epi.Act = kern.ActReLU
	case "gelu":
		epi.Act = kern.ActGELU
	case "quick_gelu":
		epi.Act = kern.ActQuickGELU
	default:
		return fmt.Errorf("cpu: gemm activation %q unknown", g.Act)
	}
	pb := b.packedWeight(in[1], g.N, g.K, g.TransB)
	gemmParallel(b.threads, g.Batch*g.M, in[0].data, g.K, pb, out[0].data, g.N, epi)
	return nil
}
