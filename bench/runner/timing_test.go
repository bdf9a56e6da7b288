package runner_test

import (
	"strings"
	"testing"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/runner"
	"vitbench/impl/cpu"
)

// panickyBackend is a backend with a bug: every Enqueue panics.
type panickyBackend struct{ bench.Backend }

func (panickyBackend) Enqueue(bench.Node, []bench.Tensor, []bench.Tensor) error {
	panic("index out of range")
}

// TestBenchRowRecoversPanics checks that a backend panicking while a case
// is timed gives that case an error, not a crash of the whole run, and
// that the same backend can time the next case.
func TestBenchRowRecoversPanics(t *testing.T) {
	c, ok := cases.Lookup("layernorm/odd_b2_d147")
	if !ok {
		t.Fatal("no case layernorm/odd_b2_d147")
	}
	spec, err := c.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	opt := runner.BenchOptions{Count: 2, Warmup: 0, Seed: 1}
	be := cpu.New(1)
	defer be.Close()
	_, err = runner.BenchRow(panickyBackend{be}, c.Name, spec, c.DType, 2, 1, opt)
	if err == nil || !strings.Contains(err.Error(), "internal error: index out of range") {
		t.Fatalf("error %v, want the panic as an internal error", err)
	}
	row, err := runner.BenchRow(be, c.Name, spec, c.DType, 2, 1, opt)
	if err != nil || row.N != 2 {
		t.Fatalf("the next case: %d samples, error %v", row.N, err)
	}
}
