// Package results defines vitbench's result files and reads and writes them.
//
// Two kinds of file exist (see FORMAT.md in this directory):
//   - timing results (BenchFile), written in the Go benchmark format, one line per
//     sample, so benchstat and golang.org/x/perf/benchfmt read them, or as JSON;
//   - conformance results (CheckFile), written as JSON.
//
// Readers accept both encodings and report errors as "file:line: message".
package results
