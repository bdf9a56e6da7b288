package cpu

import (
	"testing"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/runner"
)

// run prepares case name with seed, runs it once and returns its output.
func run(t *testing.T, b *Backend, name string, seed uint64) (out []float32, p *runner.Program) {
	t.Helper()
	c, _ := cases.Lookup(name)
	s, err := c.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	outs, p := runSpec(t, b, s, seed)
	return outs["out"], p
}

// runSpec prepares spec on b with synthetic data from seed, runs it once
// and returns its outputs by name.
func runSpec(t *testing.T, b bench.Backend, s bench.Spec, seed uint64) (outs map[string][]float32, p *runner.Program) {
	t.Helper()
	p, err := runner.Prepare(b, s, bench.Float32, runner.SynthData(s, seed))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	if outs, err = p.Outputs(); err != nil {
		t.Fatal(err)
	}
	return outs, p
}

// outputsOf prepares spec s on b with data, runs it once and returns its
// outputs, the program closed.
func outputsOf(t *testing.T, b *Backend, s bench.Spec, data func(group, name string) ([]float32, error)) map[string][]float32 {
	t.Helper()
	p, err := runner.Prepare(b, s, bench.Float32, data)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	return runOutputs(t, p)
}

// runOutputs runs program p once and returns its outputs.
func runOutputs(t *testing.T, p *runner.Program) map[string][]float32 {
	t.Helper()
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	out, err := p.Outputs()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDerivedWeightsFollowUploads: the packed GEMM weight and the conv
// weight with BatchNorm folded in are caches; uploading new weights (or any
// BN statistic) must change the result exactly as a fresh backend computes
// it, and freeing everything returns the allocator to zero.
func TestDerivedWeightsFollowUploads(t *testing.T) {
	for _, name := range []string{"gemm/odd_m13_n37_k29", "conv2d/volo_stem2_28", "block/odd_b2"} {
		b := New(2)
		_, p := run(t, b, name, 1)
		// Re-upload every weight from seed 2 into the same tensors.
		c, _ := cases.Lookup(name)
		s, _ := c.Spec(0)
		src := runner.SynthData(s, 2)
		again, _ := runner.Prepare(New(2), s, bench.Float32, src) // reference on a fresh backend
		again.Run()
		want, _ := again.Outputs()
		again.Close()
		for _, w := range s.Weights() {
			data, _ := src("weights", w.Name)
			if err := p.Upload(w.Name, data); err != nil {
				t.Fatal(err)
			}
		}
		for _, in := range s.Inputs() {
			data, _ := src("inputs", in.Name)
			p.Upload(in.Name, data)
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		got, _ := p.Outputs()
		for i, v := range want["out"] {
			if got["out"][i] != v {
				t.Fatalf("%s: after re-upload out[%d] = %g, a fresh backend gives %g", name, i, got["out"][i], v)
			}
		}
		p.Close()
		if m := b.Memory(); m.Current != 0 || m.Peak <= 0 {
			t.Errorf("%s: allocator current %d peak %d after Close", name, m.Current, m.Peak)
		}
	}
}

// TestISASwitchRepacks: weights packed for one ISA path are repacked when
// the path changes, and every path gives the same result within the GEMM
// tolerance.
func TestISASwitchRepacks(t *testing.T) {
	b := New(1)
	base, p := run(t, b, "gemm/vit_s16_qkv", 1)
	defer p.Close()
	defer SetISA(SupportedISAs()[0])
	for _, isa := range SupportedISAs() {
		if err := SetISA(isa); err != nil {
			t.Fatal(err)
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		outs, _ := p.Outputs()
		for i, v := range outs["out"] {
			if d := v - base[i]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("isa %s: out[%d] = %g, first path %g", isa, i, v, base[i])
			}
		}
	}
}
