// Package kern holds the CPU backend's kernels. Each kernel has an API file
// whose doc comment states what it computes as the equivalent plain loop, a
// plain reference implementation (the oracle, *_ref.go), a portable Go
// implementation (*_generic.go), and, where one exists, a SIMD
// implementation chosen at run time from the CPU's features (*_amd64.go with
// generated assembly). Building with the tag purego forces the Go path.
package kern
