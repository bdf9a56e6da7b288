package runner_test

import (
	"fmt"
	"slices"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/bench/runner"
	"vitbench/impl/cpu"
)

// convChain is a case of five convolutions with BatchNorm on a
// [1, 32, 6, 5] map:
//
//	a = conv3×3(image); b = conv1×1(a); c = conv1×1(b) + a
//	a = conv1×1(b); out = conv1×1(c) + a
//
// or, with lateA, d = conv1×1(a) in fourth place and out = conv1×1(c) + d,
// so that a lives on after the third step.
type convChain struct{ lateA bool }

func (s convChain) conv(k int, res bool) ops.Conv2d {
	return ops.Conv2d{Unfold: ops.Unfold{Batch: 1, InChans: 32, Height: 6, Width: 5, KernelH: k, KernelW: k, StrideH: 1, StrideW: 1,
		PadH: k / 2, PadW: k / 2, DilationH: 1, DilationW: 1}, OutChans: 32, BN: true, BNEps: 1e-5, ReLU: true, Residual: res}
}

// bnArrays are a BatchNorm's arrays, named as synth.DefaultParams knows them.
var bnArrays = []string{"weight", "bias", "running_mean", "running_var"}

func (s convChain) Op() string { return "conv_chain" }
func (s convChain) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "image", Shape: bench.Shape{1, 32, 6, 5}}}
}
func (s convChain) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{1, 32, 6, 5}}}
}
func (s convChain) Weights() []bench.ArraySpec {
	var ws []bench.ArraySpec
	for i, k := range []int{3, 1, 1, 1, 1} {
		ws = append(ws, bench.ArraySpec{Name: fmt.Sprint("w", i), Shape: bench.Shape{32, 32, k, k}})
		for _, p := range bnArrays {
			ws = append(ws, bench.ArraySpec{Name: fmt.Sprint("bn", i, ".", p), Shape: bench.Shape{32}})
		}
	}
	return ws
}
func (s convChain) MACs() int64   { return 0 }
func (s convChain) Bytes() int64  { return 0 }
func (s convChain) Params() int64 { return 0 }
func (s convChain) Graph() *bench.Graph {
	g := &bench.Graph{}
	step := func(i, k int, in, out string, res ...string) {
		g.Temp(out, bench.Shape{1, 32, 6, 5})
		ins := []string{in, fmt.Sprint("w", i)}
		for _, p := range bnArrays {
			ins = append(ins, fmt.Sprint("bn", i, ".", p))
		}
		g.Steps = append(g.Steps, bench.Step{Node: s.conv(k, len(res) > 0), In: append(ins, res...), Out: []string{out}})
	}
	step(0, 3, "image", "a")
	step(1, 1, "a", "b")
	step(2, 1, "b", "c", "a")
	if s.lateA {
		step(3, 1, "a", "d")
		step(4, 1, "c", "out", "d")
	} else {
		step(3, 1, "b", "a")
		step(4, 1, "c", "out", "a")
	}
	g.Temps = slices.DeleteFunc(g.Temps, func(a bench.ArraySpec) bool { return a.Name == "out" })
	return g
}

// inPlaceRecorder runs on the CPU backend, offers every residual
// convolution's residual to InPlace (whatever the backend would), and
// records, per Enqueue, whether the output is the residual's tensor.
type inPlaceRecorder struct {
	bench.Backend
	shared *[]bool
}

func (r inPlaceRecorder) InPlace(node bench.Node, out int) int {
	if c, ok := node.(ops.Conv2d); ok && c.Residual {
		return c.ResidualInput()
	}
	return -1
}

func (r inPlaceRecorder) Enqueue(node bench.Node, in, out []bench.Tensor) error {
	*r.shared = append(*r.shared, len(in) == 7 && in[6] == out[0])
	return r.Backend.Enqueue(node, in, out)
}

// plainBackend hides the CPU backend's InPlace: every value its own tensor.
type plainBackend struct{ bench.Backend }

// TestProgramSharesDeadResidual: a program on a backend that offers it
// writes a convolution's output over its residual exactly where the
// residual's value dies (c over a, then out over the second a; with a read
// after c, only out over d), the values trading tensors (the second a must
// not land on c), the case's output downloaded from the tensor it ends up
// in, the same bits as with every value in its own tensor, run after run (on the AVX-512 path the residual is summed in place by the blocked
// tiles, elsewhere the NCHW paths work on a copy of it).
func TestProgramSharesDeadResidual(t *testing.T) {
	for _, s := range []convChain{{}, {lateA: true}} {
		want := []bool{false, false, true, false, true}
		if s.lateA {
			want = []bool{false, false, false, false, true}
		}
		data := runner.SynthData(s, 3)
		be := cpu.New(2)
		var shared []bool
		prog, err := runner.Prepare(inPlaceRecorder{be, &shared}, s, bench.Float32, data)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := runner.Prepare(plainBackend{be}, s, bench.Float32, data)
		if err != nil {
			t.Fatal(err)
		}
		if err := plain.Run(); err != nil {
			t.Fatal(err)
		}
		ref, err := plain.Outputs()
		if err != nil {
			t.Fatal(err)
		}
		for run := 0; run < 2; run++ {
			shared = shared[:0]
			if err := prog.Run(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(shared, want) {
				t.Errorf("lateA %v, run %d: output over the residual at steps %v, want %v", s.lateA, run, shared, want)
			}
			got, err := prog.Outputs()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got["out"], ref["out"]) || slices.ContainsFunc(ref["out"], func(v float32) bool { return v != v }) {
				t.Errorf("lateA %v, run %d: outputs differ from the program with a tensor per value: %v vs %v", s.lateA, run, got["out"][:4], ref["out"][:4])
			}
		}
		prog.Close()
		plain.Close()
		be.Close()
	}
}
