package runner

import (
	"fmt"
	"time"

	"vitbench/bench"
	"vitbench/bench/accuracy"
	"vitbench/bench/fixture"
	"vitbench/bench/npy"
	"vitbench/bench/results"
)

// CheckOptions configure conformance runs.
type CheckOptions struct {
	Limits npy.Limits
	// Root and Manifest, when Manifest is non-nil, make every case's files
	// be verified against the fixture tree's MANIFEST.sha256.
	Root     string
	Manifest fixture.Manifest
	// MaxBytes is the memory budget of one case (0: DefaultMaxBytes): a case whose
	// declared need is larger is a FAIL row before anything is allocated.
	MaxBytes int64
	// Cancel, when closed (a signal), stops the case in progress between two nodes or
	// two arrays; its row is then incomplete and not to be reported.
	Cancel <-chan struct{}
}

// Statuses of a conformance row.
const (
	OK   = "OK"
	FAIL = "FAIL"
	NS   = "NS"
)

// CheckFixture checks the fixture in dir on backend b and returns its row.
// It never panics on bad input: unreadable fixtures become FAIL rows with
// Error set and the message in Reason.
func CheckFixture(b bench.Backend, dir string, opt CheckOptions) (row results.CheckRow) {
	start := time.Now()
	row = results.CheckRow{Case: dir, Backend: b.Name(), Status: FAIL}
	defer func() {
		if r := recover(); r != nil {
			row.Status, row.Error = FAIL, true
			row.Reason = fmt.Sprintf("internal error: %v", r)
		}
		row.Seconds = time.Since(start).Seconds()
	}()
	bad := func(err error) results.CheckRow {
		row.Status, row.Error, row.Reason = FAIL, true, err.Error()
		return row
	}
	fx, err := fixture.Load(dir, opt.Limits)
	if err != nil {
		return bad(err)
	}
	d := fx.Desc
	row.Case, row.Kind, row.Op, row.DType = d.Name, d.Kind, d.Op, d.DType
	tol, err := accuracy.Lookup(d.Tolerance, d.Op, b.Name())
	if err != nil {
		return bad(fmt.Errorf("%s/case.json: %v", dir, err))
	}
	row.Tolerance = results.Tolerance{Class: tol.Class, RTol: tol.RTol, ATol: tol.ATol, NMSE: tol.NMSE}
	if opt.Manifest != nil {
		if err := opt.Manifest.VerifyCase(opt.Root, dir); err != nil {
			return bad(fmt.Errorf("%s: %v", dir, err))
		}
	}
	if info := b.Info(); !info.Available {
		row.Status, row.Reason = NS, info.Reason
		return row
	}
	if err := Unsupported(b, fx.Spec, bench.DType(d.DType)); err != nil {
		row.Status, row.Reason = NS, err.Error()
		return row
	}
	// Before anything is read or allocated: the case's memory need against the budget
	// (a FAIL row), then each declared array against the array limit (an input error).
	if err := CheckBudget(d.Name, fx.Spec, workersOf(b), opt.MaxBytes); err != nil {
		row.Reason = err.Error()
		return row
	}
	if err := fx.CheckDeclared(); err != nil {
		return bad(err)
	}
	readFailed := false
	read := func(group, name string) ([]float32, error) {
		v, err := fx.Array(group, name)
		readFailed = readFailed || err != nil
		return v, err
	}
	prog, err := PrepareCancel(b, fx.Spec, bench.DType(d.DType), read, opt.Cancel)
	if err != nil {
		if readFailed {
			return bad(err)
		}
		row.Reason = err.Error()
		return row
	}
	defer prog.Close()
	if err := prog.Run(); err != nil {
		row.Reason = err.Error()
		return row
	}
	got, err := prog.Outputs()
	if err != nil {
		row.Reason = err.Error()
		return row
	}
	ref := func(name string) ([]float32, error) { return fx.Array(fixture.Outputs, name) }
	got, _, err = alignCodes(fx, got, ref)
	if err != nil {
		return bad(err)
	}
	noise := map[string]accuracy.Noise{}
	for name, e := range d.ReferenceError {
		noise[name] = accuracy.Noise{NMSE: e.NMSE, MaxAbs: e.MaxAbs}
	}
	if err := judgeOutputs(&row, fx.Spec.Outputs(), got, func(name string) ([]float32, error) {
		return fx.Array(fixture.Outputs, name)
	}, d.SampledOutputs, tol, noise); err != nil {
		return bad(err)
	}
	return row
}

// judgeOutputs compares every output in got with its reference (ref; for an output in
// sampling, got is cut down to the stored sample first) under tol — tightened per output to
// the measured noise of its reference where noise has it (accuracy.OutputTolerances) — plus
// the top-1 class of "logits" (a two-stage case's query rows are first put in the reference's
// order within near-tied proposal scores: alignQueries; a detector's top-k is aligned within
// near-tied scores, DETR's labels within near-tied class probabilities: alignDetections), and fills row with the failing output's figures and
// tolerance, else the worst NMSE's; Status becomes OK when all pass. An error means a
// reference could not be read.
func judgeOutputs(row *results.CheckRow, outputs []bench.ArraySpec, got map[string][]float32,
	ref func(name string) ([]float32, error), sampling map[string]fixture.Sampling, tol accuracy.Tolerance,
	noise map[string]accuracy.Noise) error {
	tolFor := accuracy.OutputTolerances(tol, row.Backend, noise)
	got, err := alignQueries(row.Op, outputs, got, ref, sampling, tolFor)
	if err != nil {
		return err
	}
	got, err = alignDetections(row.Op, outputs, got, ref, sampling, tolFor)
	if err != nil {
		return err
	}
	pass := true
	worst := -1.0
	for _, a := range outputs {
		want, err := ref(a.Name)
		if err != nil {
			return err
		}
		out, shape := got[a.Name], a.Shape
		smp, sampled := sampling[a.Name]
		if sampled {
			out, shape = smp.Take(out, a.Shape), smp.Shape(a.Shape)
		}
		otol := tolFor(a.Name, want)
		if a.Name == "indices" {
			// Codebook indices are integers: exact (near-ties were aligned by alignCodes).
			otol = accuracy.Tolerance{Class: "exact"}
		}
		m := accuracy.Compare(out, want, otol)
		ok := m.Pass(otol)
		reason := ""
		if a.Name == "indices" && accuracy.Precision(row.Backend) != "" {
			ok, reason = reducedCodes(out, want)
		} else if !ok {
			reason = failReason(a.Name, func(flat int64) []int {
				if sampled {
					return smp.FullIndex(shape.Unravel(flat))
				}
				return shape.Unravel(flat)
			}, m, otol)
		}
		// A network's logits must also pick the same class for every image.
		if a.Name == "logits" && len(a.Shape) == 2 && ok {
			if bad := accuracy.Top1Mismatches(got[a.Name], want, a.Shape[1]); bad > 0 {
				ok = false
				reason = fmt.Sprintf("logits: top-1 class differs for %d of %d images", bad, a.Shape[0])
			}
		}
		// Report the failing output, else the one with the largest NMSE.
		if score := m.NMSE + boolScore(!ok); score > worst {
			worst = score
			row.Output, row.NMSE = a.Name, m.NMSE
			row.Tolerance = results.Tolerance{Class: otol.Class, RTol: otol.RTol, ATol: otol.ATol, NMSE: otol.NMSE}
			row.MaxAbs, row.MaxAbsAt = m.MaxAbs, shape.Unravel(m.MaxAbsAt)
			row.MaxRel, row.MaxRelAt = m.MaxRel, shape.Unravel(m.MaxRelAt)
			if sampled {
				row.MaxAbsAt, row.MaxRelAt = smp.FullIndex(row.MaxAbsAt), smp.FullIndex(row.MaxRelAt)
			}
			row.Reason = reason
		}
		pass = pass && ok
	}
	if pass {
		row.Status, row.Reason = OK, ""
	}
	return nil
}

func boolScore(b bool) float64 {
	if b {
		return 1e300
	}
	return 0
}

// failReason says why output name failed; at maps a flat index of the
// compared array to the output's multi-index.
func failReason(name string, at func(int64) []int, m accuracy.Metrics, tol accuracy.Tolerance) string {
	switch {
	case m.NaNs > 0:
		return fmt.Sprintf("%s: %d NaN values (first at %v)", name, m.NaNs, at(m.FirstViolation))
	case m.InfMismatches > 0:
		return fmt.Sprintf("%s: %d infinities or NaNs do not match the reference", name, m.InfMismatches)
	case m.Violations > 0:
		return fmt.Sprintf("%s: %d elements outside atol %.g + rtol %.g·|ref| (first at %v)", name, m.Violations,
			tol.ATol, tol.RTol, at(m.FirstViolation))
	}
	return fmt.Sprintf("%s: NMSE %.3g above %.3g", name, m.NMSE, tol.NMSE)
}
