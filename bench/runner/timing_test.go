package runner_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

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

// fixedClock is a backend whose clock says every run took one millisecond.
type fixedClock struct{ bench.Backend }

// Time runs fn and reports 1 ms on both clocks.
func (f fixedClock) Time(fn func() error) (bench.Timing, error) {
	if err := fn(); err != nil {
		return bench.Timing{}, err
	}
	return bench.Timing{Kernel: time.Millisecond, EndToEnd: time.Millisecond}, nil
}

// TestBenchRowCountsRuns: each sample records how many runs it averaged: the runs until
// MinSampleTime has passed (4 of 1 ms for 3.5 ms), one each without it.
func TestBenchRowCountsRuns(t *testing.T) {
	c, ok := cases.Lookup("layernorm/odd_b2_d147")
	if !ok {
		t.Fatal("no case layernorm/odd_b2_d147")
	}
	spec, err := c.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(1)
	defer be.Close()
	row, err := runner.BenchRow(fixedClock{be}, c.Name, spec, c.DType, 2, 1, runner.BenchOptions{Count: 3, Seed: 1, MinSampleTime: 3500 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if row.Params != spec.Params() || row.Params == 0 || row.ImgH != 0 {
		t.Errorf("params %d, image %d×%d; want %d and no image (layernorm's input is tokens)", row.Params, row.ImgH, row.ImgW, spec.Params())
	}
	if !slices.Equal(row.Runs, []int{4, 4, 4}) || row.MedianNs != 1e6 {
		t.Errorf("runs %v, median %v ns; want [4 4 4] and 1e6", row.Runs, row.MedianNs)
	}
	row, err = runner.BenchRow(fixedClock{be}, c.Name, spec, c.DType, 2, 1, runner.BenchOptions{Count: 2, Seed: 1})
	if err != nil || !slices.Equal(row.Runs, []int{1, 1}) {
		t.Errorf("without MinSampleTime: runs %v (%v), want [1 1]", row.Runs, err)
	}
}

// TestBenchRowRecordsLoad: every timed row carries the foreign load of its window, a number
// in [0, 1] where /proc/stat exists (NaN elsewhere, written as null).
func TestBenchRowRecordsLoad(t *testing.T) {
	c, _ := cases.Lookup("layernorm/odd_b2_d147")
	spec, err := c.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(1)
	defer be.Close()
	row, err := runner.BenchRow(be, c.Name, spec, c.DType, 2, 1, runner.BenchOptions{Count: 3, Seed: 1, MinSampleTime: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if row.Load == nil {
		t.Fatal("no load recorded")
	}
	if _, err := os.Stat("/proc/stat"); err == nil && !(row.Load.Foreign >= 0 && row.Load.Foreign <= 1) {
		t.Errorf("foreign load %v with /proc/stat present, want a number in [0, 1]", row.Load.Foreign)
	}
}
