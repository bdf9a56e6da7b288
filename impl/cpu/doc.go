// Package cpu is vitbench's CPU backend: host tensors, an accounting
// allocator, a fixed pool of worker goroutines, and the kernels of package
// internal/kern (SIMD where the CPU has it, Go otherwise). Importing it
// registers the backend as "cpu".
package cpu
