package results

import (
	"encoding/json"
	"io"
)

// Conformance statuses.
const (
	StatusOK   = "OK"
	StatusFail = "FAIL"
	StatusNS   = "NS" // not supported by the backend; Reason says why
)

// Tolerance is the acceptance rule a check was judged by: a named class of operation and its
// relative, absolute and normalized mean squared error limits.
type Tolerance struct {
	Class string
	RTol  float64
	ATol  float64
	NMSE  float64
}

// CheckRow is the conformance result of one (case, backend, dtype): the error figures of its
// worst output against the reference. JSON names are listed in FORMAT.md.
type CheckRow struct {
	Case, Kind, Op, Backend, DType string
	Status                         string // StatusOK, StatusFail or StatusNS
	Output                         string // name of the worst output
	MaxAbs                         float64
	MaxAbsAt                       []int // index of MaxAbs
	MaxRel                         float64
	MaxRelAt                       []int
	NMSE                           float64
	Tolerance                      Tolerance
	Reason                         string
	Error                          bool // the case could not run (input unreadable, ...); Reason has the message
	Seconds                        float64
}

// CheckFile is a conformance result file.
type CheckFile struct {
	Meta Meta
	Rows []CheckRow
}

type toleranceJSON struct {
	Class string `json:"class"`
	RTol  jfloat `json:"rtol"`
	ATol  jfloat `json:"atol"`
	NMSE  jfloat `json:"nmse"`
}

// MarshalJSON encodes the tolerance with FORMAT.md's names; NaN/±Inf become strings.
func (t Tolerance) MarshalJSON() ([]byte, error) {
	return json.Marshal(toleranceJSON{t.Class, jfloat(t.RTol), jfloat(t.ATol), jfloat(t.NMSE)})
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (t *Tolerance) UnmarshalJSON(b []byte) error {
	var j toleranceJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*t = Tolerance{j.Class, float64(j.RTol), float64(j.ATol), float64(j.NMSE)}
	return nil
}

// checkRowJSON is CheckRow's JSON form (FORMAT.md, "Conformance: JSON").
type checkRowJSON struct {
	Case      string    `json:"case"`
	Kind      string    `json:"kind"`
	Op        string    `json:"op"`
	Backend   string    `json:"backend"`
	DType     string    `json:"dtype"`
	Status    string    `json:"status"`
	Output    string    `json:"output"`
	MaxAbs    jfloat    `json:"max_abs"`
	MaxAbsAt  []int     `json:"max_abs_at"`
	MaxRel    jfloat    `json:"max_rel"`
	MaxRelAt  []int     `json:"max_rel_at"`
	NMSE      jfloat    `json:"nmse"`
	Tolerance Tolerance `json:"tolerance"`
	Reason    string    `json:"reason"`
	Error     bool      `json:"error,omitempty"`
	Seconds   jfloat    `json:"seconds,omitempty"`
}

// MarshalJSON encodes the row with FORMAT.md's names; NaN/±Inf become strings.
func (r CheckRow) MarshalJSON() ([]byte, error) {
	return json.Marshal(checkRowJSON{
		Case: r.Case, Kind: r.Kind, Op: r.Op, Backend: r.Backend, DType: r.DType,
		Status: r.Status, Output: r.Output,
		MaxAbs: jfloat(r.MaxAbs), MaxAbsAt: r.MaxAbsAt, MaxRel: jfloat(r.MaxRel), MaxRelAt: r.MaxRelAt,
		NMSE: jfloat(r.NMSE), Tolerance: r.Tolerance, Reason: r.Reason, Error: r.Error,
		Seconds: jfloat(r.Seconds),
	})
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (r *CheckRow) UnmarshalJSON(b []byte) error {
	var j checkRowJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = CheckRow{
		Case: j.Case, Kind: j.Kind, Op: j.Op, Backend: j.Backend, DType: j.DType,
		Status: j.Status, Output: j.Output,
		MaxAbs: float64(j.MaxAbs), MaxAbsAt: j.MaxAbsAt, MaxRel: float64(j.MaxRel), MaxRelAt: j.MaxRelAt,
		NMSE: float64(j.NMSE), Tolerance: j.Tolerance, Reason: j.Reason, Error: j.Error,
		Seconds: float64(j.Seconds),
	}
	return nil
}

type checkFileJSON struct {
	Meta Meta       `json:"meta"`
	Rows []CheckRow `json:"rows"`
}

// WriteCheckJSON writes f as indented JSON (FORMAT.md, "Conformance: JSON"). NaN and ±Inf
// values are written as the strings "NaN", "+Inf", "-Inf".
func WriteCheckJSON(w io.Writer, f CheckFile) error {
	rows := f.Rows
	if rows == nil {
		rows = []CheckRow{}
	}
	return writeJSON(w, checkFileJSON{Meta: f.Meta, Rows: rows})
}

// IdleRun is a backend that ran none of its conformance cases, and the one reason given for
// all of them (no driver on this machine, say).
type IdleRun struct {
	Cases  int
	Reason string
}

// minIdleRows is how many rows a backend that ran nothing needs before IdleBackends names it:
// a check of one or two cases keeps its rows.
const minIdleRows = 3

// IdleBackends returns the backends with at least three rows, every one NS with the same
// reason; tables print one line for each instead of a row per case.
func IdleBackends(rows []CheckRow) map[string]IdleRun {
	out := map[string]IdleRun{}
	mixed := map[string]bool{}
	for _, r := range rows {
		if mixed[r.Backend] {
			continue
		}
		run, seen := out[r.Backend]
		if r.Status != StatusNS || r.Error || (seen && run.Reason != r.Reason) {
			mixed[r.Backend] = true
			delete(out, r.Backend)
			continue
		}
		out[r.Backend] = IdleRun{Cases: run.Cases + 1, Reason: r.Reason}
	}
	for b, run := range out {
		if run.Cases < minIdleRows {
			delete(out, b)
		}
	}
	return out
}
