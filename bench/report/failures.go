package report

import (
	"fmt"
	"io"
)

// writeFailures lists the cases that were to be timed but failed to run
// (results.BenchFile.Failed), one row each with the error, so that no case
// silently drops out of the timing tables.
func writeFailures(w io.Writer, in Input, _ []entry) error {
	var cells [][]string
	for _, f := range in.Bench {
		for _, x := range f.Failed {
			if x.NS && x.Backend == OrtBackend { // listed in the ONNX Runtime section
				continue
			}
			cells = append(cells, []string{x.Case, x.Backend, x.DType, fmt.Sprint(x.Batch), fmt.Sprint(x.Threads),
				"FAIL", x.Error})
		}
	}
	if len(cells) == 0 {
		return nil
	}
	section(w, "Timing failures", "Cases that failed to run while being timed: they have no row in the tables above.")
	return writeTable(w, "llrrrll", []string{"case", "backend", "dtype", "batch", "threads", "status", "error"}, cells)
}
