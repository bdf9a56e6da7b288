package report

import (
	"cmp"
	"fmt"
	"io"

	"vitbench/bench/results"
)

// writeSources lists the files the report was built from, with each file's tool, commit,
// date and machine, so every number can be traced to the run that produced it.
func writeSources(w io.Writer, in Input, _ []entry) error {
	section(w, "Sources", "")
	for i, f := range in.Bench {
		fmt.Fprintf(w, "- timing: %s: %s, %d rows\n", pathAt(in.BenchPaths, i, "bench", i), describe(f.Meta), len(f.Rows))
	}
	for i, f := range in.Check {
		fmt.Fprintf(w, "- conformance: %s: %s, %d rows\n", pathAt(in.CheckPaths, i, "check", i), describe(f.Meta), len(f.Rows))
	}
	if len(in.Bench)+len(in.Check) == 0 {
		fmt.Fprintln(w, "- no result files")
	}
	return nil
}

func pathAt(paths []string, i int, kind string, n int) string {
	if i < len(paths) && paths[i] != "" {
		return Code(paths[i])
	}
	return fmt.Sprintf("%s input #%d (path not given)", kind, n+1)
}

// describe summarises a file's provenance: "tool vitbench, commit 1a2b3c4, date ..., machine ...".
func describe(m results.Meta) string {
	return Inline(fmt.Sprintf("tool %s, commit %s, date %s, machine %s",
		cmp.Or(m.Tool, "?"), cmp.Or(m.Commit, "?"), cmp.Or(m.Date, "?"), machineName(m)))
}
