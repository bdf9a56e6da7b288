package runner_test

import (
	"errors"
	"strings"
	"testing"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/runner"
	"vitbench/impl/cpu"
)

// countingBackend counts Enqueue calls and closes stop at the n-th.
type countingBackend struct {
	bench.Backend
	calls *int
	n     int
	stop  chan struct{}
}

func (c countingBackend) Enqueue(node bench.Node, in, out []bench.Tensor) error {
	*c.calls++
	if *c.calls == c.n {
		close(c.stop)
	}
	return c.Backend.Enqueue(node, in, out)
}

// TestCancelStopsBetweenNodes: once the cancel channel is closed, a program's Run stops
// before its next node with ErrInterrupted, and Bench stops before its next run.
func TestCancelStopsBetweenNodes(t *testing.T) {
	c, _ := cases.Lookup("vit_tiny_odd")
	spec, err := c.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(1)
	defer be.Close()
	calls, stop := 0, make(chan struct{})
	b := countingBackend{Backend: be, calls: &calls, n: 3, stop: stop}
	prog, err := runner.PrepareCancel(b, spec, c.DType, runner.SynthData(spec, 1), stop)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := prog.Run(); !errors.Is(err, runner.ErrInterrupted) || calls != 3 {
		t.Fatalf("Run: %v after %d nodes, want ErrInterrupted after 3 (of %d)", err, calls, len(spec.Graph().Steps))
	}
	_, _, _, err = runner.Bench(be, spec, c.DType, runner.BenchOptions{Count: 1000, Seed: 1, Cancel: stop})
	if !errors.Is(err, runner.ErrInterrupted) {
		t.Errorf("Bench with a closed cancel channel: %v, want ErrInterrupted", err)
	}
}

// TestBudgetRefusesBeforeAllocating: a case over the budget is a *BudgetError naming the
// case, its need and the budget, and nothing is allocated on the backend.
func TestBudgetRefusesBeforeAllocating(t *testing.T) {
	c, _ := cases.Lookup("vit_tiny_odd")
	spec, _ := c.Spec(0)
	be := cpu.New(1)
	defer be.Close()
	_, _, _, err := runner.Bench(be, spec, c.DType, runner.BenchOptions{Count: 1, Seed: 1, MaxBytes: 1 << 10, CaseName: c.Name})
	var be2 *runner.BudgetError
	if !errors.As(err, &be2) || !strings.Contains(err.Error(), "case vit_tiny_odd needs") || !strings.Contains(err.Error(), "budget of 1.0 KiB") {
		t.Fatalf("Bench over a 1 KiB budget: %v", err)
	}
	if p := be.Memory().Peak; p != 0 {
		t.Errorf("%d bytes were allocated before the refusal", p)
	}
	if err := runner.CheckBudget(c.Name, spec, 1, 1<<40); err != nil {
		t.Errorf("a 1 TiB budget: %v", err)
	}
	if d := runner.DefaultMaxBytes(); d <= 0 || (runner.MemoryLimit() > 0 && d > runner.MemoryLimit()) {
		t.Errorf("DefaultMaxBytes %d, MemoryLimit %d", d, runner.MemoryLimit())
	}
}
