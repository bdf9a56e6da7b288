package runner

import (
	"fmt"
	"time"

	"vitbench/bench"
	"vitbench/bench/accuracy"
	"vitbench/bench/cases"
	"vitbench/bench/results"
)

// AgreeCase runs built-in case c at batch (0: the case's own) on backend ref and on each
// backend of bs with the same synthesized inputs and weights (seed), and judges each one's
// outputs against ref's exactly as CheckFixture judges a backend against a fixture: the
// case's tolerance class for that backend (loosened when its products are reduced-precision),
// and the same top-1 class for logits. It needs no fixture, so it covers every built-in case
// at any batch, full-size networks included. The reference runs once per case. One row per
// backend of bs: NS when it or the reference cannot run the case, FAIL with the error when a
// run fails.
func AgreeCase(ref bench.Backend, bs []bench.Backend, c cases.Case, batch int, seed uint64) []results.CheckRow {
	return AgreeCaseWith(ref, bs, c, AgreeOptions{Batch: batch, Seed: seed})
}

// AgreeOptions configure AgreeCaseWith.
type AgreeOptions struct {
	Batch int    // 0: the case's own
	Seed  uint64 // of the synthesized inputs and weights
	// MaxBytes is the memory budget of the case (0: DefaultMaxBytes): a case that
	// needs more is a FAIL row for every backend, before anything is allocated.
	MaxBytes int64
	// Cancel, when closed (a signal), stops the case between two nodes; its rows are
	// then incomplete and not to be reported.
	Cancel <-chan struct{}
}

// AgreeCaseWith is AgreeCase with a memory budget and a cancel channel.
func AgreeCaseWith(ref bench.Backend, bs []bench.Backend, c cases.Case, opt AgreeOptions) []results.CheckRow {
	batch, seed := opt.Batch, opt.Seed
	rows := make([]results.CheckRow, len(bs))
	for i, b := range bs {
		rows[i] = results.CheckRow{Case: c.Name, Kind: c.Kind, Op: c.Op, Backend: b.Name(), DType: string(c.DType), Status: FAIL}
	}
	// fail gives every backend still to be judged the reference's status and reason.
	fail := func(isErr bool, status, reason string) []results.CheckRow {
		for i := range rows {
			if rows[i].Reason == "" {
				rows[i].Status, rows[i].Error, rows[i].Reason = status, isErr, reason
			}
		}
		return rows
	}
	spec, err := c.Spec(batch)
	if err != nil {
		return fail(true, FAIL, err.Error())
	}
	// Judge what can be judged without running anything first: the reference runs only
	// when some backend can run the case.
	var todo []int
	tols := make([]accuracy.Tolerance, len(bs))
	for i, b := range bs {
		tol, err := accuracy.Lookup(c.Tolerance, c.Op, b.Name())
		info := b.Info()
		switch {
		case err != nil:
			rows[i].Error, rows[i].Reason = true, fmt.Sprintf("case %s: %v", c.Name, err)
			continue
		case !info.Available:
			rows[i].Status, rows[i].Reason = NS, info.Reason
		default:
			if err := Unsupported(b, spec, c.DType); err != nil {
				rows[i].Status, rows[i].Reason = NS, err.Error()
			} else {
				todo = append(todo, i)
			}
		}
		tols[i] = tol
		rows[i].Tolerance = results.Tolerance{Class: tol.Class, RTol: tol.RTol, ATol: tol.ATol, NMSE: tol.NMSE}
	}
	if len(todo) == 0 {
		return rows
	}
	if info := ref.Info(); !info.Available {
		return fail(false, NS, "reference "+ref.Name()+": "+info.Reason)
	}
	if err := Unsupported(ref, spec, c.DType); err != nil {
		return fail(false, NS, "reference "+ref.Name()+": "+err.Error())
	}
	if err := CheckBudget(c.Name, spec, workersOf(ref), opt.MaxBytes); err != nil {
		return fail(false, FAIL, err.Error())
	}
	want, err := safeRun(ref, spec, c.DType, seed, opt.Cancel)
	if err != nil {
		return fail(false, FAIL, fmt.Sprintf("reference %s: %v", ref.Name(), err))
	}
	for _, i := range todo {
		start := time.Now()
		got, err := safeRun(bs[i], spec, c.DType, seed, opt.Cancel)
		if err != nil {
			rows[i].Reason = err.Error()
		} else if err := judgeOutputs(&rows[i], spec.Outputs(), got, func(name string) ([]float32, error) {
			return want[name], nil
		}, nil, tols[i], nil); err != nil {
			rows[i].Error, rows[i].Reason = true, err.Error()
		}
		rows[i].Seconds = time.Since(start).Seconds()
	}
	return rows
}

// safeRun is runOnce with a backend panic turned into an error.
func safeRun(b bench.Backend, spec bench.Spec, dt bench.DType, seed uint64, cancel <-chan struct{}) (out map[string][]float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("internal error: %v", r)
		}
	}()
	return runOnce(b, spec, dt, seed, cancel)
}

// runOnce prepares spec on b with synthesized data, runs it once and returns its outputs.
func runOnce(b bench.Backend, spec bench.Spec, dt bench.DType, seed uint64, cancel <-chan struct{}) (map[string][]float32, error) {
	prog, err := PrepareCancel(b, spec, dt, SynthData(spec, seed), cancel)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := prog.Run(); err != nil {
		return nil, err
	}
	return prog.Outputs()
}
