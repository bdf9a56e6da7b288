package results

import (
	"fmt"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// baselinePrefix starts the line naming the code a row ran, as reference/bench_torch.py
// writes it after each PyTorch or NumPy row; benchfmt and benchstat ignore it:
//
//	# baseline Benchmark<Case>/backend=B/batch=N/threads=T/dtype=D: <label>
const baselinePrefix = "# baseline "

// baselineLine is the text-format line carrying r.Baseline.
func baselineLine(r BenchRow) string {
	return baselinePrefix + benchName(r) + ": " + oneLine(r.Baseline)
}

// readBaselines sets the Baseline of each row of f named by a baseline line of data (the
// same case, backend, batch, threads and dtype). A malformed line, or one naming no row
// of the file, is an error naming the file and line.
func readBaselines(f *BenchFile, data []byte, file string) error {
	for i, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), baselinePrefix)
		if !ok {
			continue
		}
		where := fmt.Sprintf("%s:%d", file, i+1)
		name, label, found := strings.Cut(rest, ": ")
		label = strings.TrimSpace(label)
		if !found || label == "" || !strings.HasPrefix(name, "Benchmark") {
			return fmt.Errorf("%s: malformed baseline line %q (want %sBenchmark<Case>/backend=…: <label>)", where, line, baselinePrefix)
		}
		nf, err := parseName(benchfmt.Name(strings.TrimPrefix(name, "Benchmark")), where)
		if err != nil {
			return err
		}
		matched := false
		for j := range f.Rows {
			r := &f.Rows[j]
			if r.Case == nf.caseName && r.Backend == nf.backend && r.Batch == nf.batch && r.Threads == nf.threads && r.DType == nf.dtype {
				r.Baseline, matched = label, true
			}
		}
		if !matched {
			return fmt.Errorf("%s: baseline line for %s, which has no result line in the file", where, name)
		}
	}
	return nil
}
