// Package report turns vitbench result files into paper-style Markdown (Markdown) and
// benchstat-like A/B comparisons (Compare).
//
// Data travels one way: result files (package results) are read by the caller and passed in;
// this package only formats and judges them. Every table lists rows sorted by case then
// backend, and the report ends with the files it was built from.
package report
