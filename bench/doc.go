// Package bench is the core of vitbench: the device-aware backend interface,
// tensors and shapes, op graphs, and the registries of backends and op kinds.
//
// Data travels one way: a fixture (or a built-in case) is parsed by its op
// kind into a Spec; the Spec's Graph is run on a Backend; the outputs are
// compared and timed by package runner; results are written by package
// results and rendered by package report. Kernels live in impl/, never here.
package bench
