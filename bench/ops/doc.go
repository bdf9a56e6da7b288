// Package ops defines vitbench's op kinds: for each, the node type backends
// execute, the JSON hyper-parameters a fixture gives it, the shapes of its
// arrays, and its MAC and byte counts. No kernels live here.
package ops
