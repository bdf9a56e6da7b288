// Package cuda is vitbench's CUDA backend. It is compiled into every build
// without cgo: the driver (libcuda), NVRTC and cuBLAS are opened at run
// time with purego, searched in VITBENCH_CUDA_LIBS, the loader's path, the
// CUDA install directories and NVIDIA's Python wheels (libs.go).
//
// Kernels are CUDA C++ sources embedded from kernels/*.cu, each with the
// plain loop it computes in a comment; NVRTC compiles a file at its first
// use to a CUBIN for the device's exact architecture (PTX when the NVRTC is
// older than the device), cached on disk by source hash, NVRTC version and
// target (cache.go). GEMMs and the attention and convolution products go
// through cuBLAS: strict fp32 on backend "cuda"; on "cuda-tf32",
// "cuda-bf16" and "cuda-fp16" the products' inputs are rounded to that
// format for the tensor cores and summed in fp32, and on the last two the
// deformable-attention sampling gathers a 16-bit copy of its value tensor
// (math.go). All device calls run on one locked OS thread per backend
// (worker.go); Time uses CUDA events after an L2 flush (timing.go).
//
// Without a driver, a device or NVRTC the backend still opens: Info says
// why in one line and Supports answers NS for every op with that reason.
// The tests compile every kernel and check every launch of every built-in
// graph against the kernels' PTX signatures without a GPU (dispatch_test.go).
package cuda
