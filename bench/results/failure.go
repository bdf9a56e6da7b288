package results

import (
	"fmt"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// BenchFailure is a case that was to be timed on a backend but has no
// result: it failed to run (out of device memory, a failing launch, ...).
// Failures are kept in the result file so that a report shows them as
// rows instead of leaving them out.
type BenchFailure struct {
	Case    string `json:"case"`
	Backend string `json:"backend"`
	Batch   int    `json:"batch"`
	Threads int    `json:"threads"`
	DType   string `json:"dtype"`
	Error   string `json:"error"`
	// NS marks a case the backend does not support (a baseline that cannot run it, such
	// as ONNX Runtime without onnxruntime-node): Error is then the reason, and the line
	// starts with "# NS " instead of "# FAILED ".
	NS bool `json:"ns,omitempty"`
}

// failedPrefix starts a failure's line in the text format: a line that
// benchfmt, benchstat and go test tooling ignore.
const failedPrefix = "# FAILED "

// nsPrefix starts the line of a case the backend does not support (BenchFailure.NS).
const nsPrefix = "# NS "

// failureLine is f in the text format:
//
//	# FAILED Benchmark<Case>/backend=B/batch=N/threads=T/dtype=D: <error on one line>
//	# NS Benchmark<Case>/backend=B/batch=N/threads=T/dtype=D: <reason on one line>
func failureLine(f BenchFailure) string {
	name := benchName(BenchRow{Case: f.Case, Backend: f.Backend, Batch: f.Batch, Threads: f.Threads, DType: f.DType})
	prefix := failedPrefix
	if f.NS {
		prefix = nsPrefix
	}
	return prefix + name + ": " + oneLine(f.Error)
}

// parseFailureLine reads a line written by failureLine; ok is false for
// any other line. The name is read as result lines' names are (parseName).
func parseFailureLine(line, where string) (f BenchFailure, ok bool, err error) {
	prefix := failedPrefix
	rest, found := strings.CutPrefix(line, failedPrefix)
	if !found {
		prefix = nsPrefix
		if rest, found = strings.CutPrefix(line, nsPrefix); !found {
			return f, false, nil
		}
	}
	name, msg, found := strings.Cut(rest, ": ")
	if !found || !strings.HasPrefix(name, "Benchmark") {
		return f, true, fmt.Errorf("%s: malformed failure line %q (want %sBenchmark<Case>/backend=…: <error>)", where, line, prefix)
	}
	nf, err := parseName(benchfmt.Name(strings.TrimPrefix(name, "Benchmark")), where)
	if err != nil {
		return f, true, err
	}
	f = BenchFailure{Case: nf.caseName, Backend: nf.backend, Batch: nf.batch, Threads: nf.threads, DType: nf.dtype, Error: msg,
		NS: prefix == nsPrefix}
	if f.Case == "" || f.Backend == "" {
		return f, true, fmt.Errorf("%s: malformed failure line %q: no case or backend", where, line)
	}
	return f, true, nil
}

// readFailures collects the failure lines of a text result file; the
// error names the file and line of a malformed one.
func readFailures(data []byte, file string) ([]BenchFailure, error) {
	var out []BenchFailure
	for i, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, failedPrefix) && !strings.HasPrefix(line, nsPrefix) {
			continue
		}
		f, _, err := parseFailureLine(strings.TrimRight(line, "\r"), fmt.Sprintf("%s:%d", file, i+1))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
