// Package report turns vitbench result files into paper-style Markdown (Markdown) with
// charts written beside it (WriteFigures: latency per network, roofline), benchstat-like
// A/B comparisons (Compare, and CompareChecks for conformance), and the diff of the
// deterministic metrics against a committed baseline (DiffBaseline).
//
// Data travels one way: result files (package results) are read by the caller and passed in;
// this package only formats, draws and judges them. Every table lists rows sorted by case
// then backend, and the report ends with the files it was built from.
package report
