// Package cuda is vitbench's CUDA backend. It is compiled into every build
// (no cgo: the driver library is opened at run time with purego) and is
// available only where libcuda loads and a device answers; otherwise its
// Info says why in one line and every row it would produce reads NS.
//
// This package currently finds the driver and the device and reports them;
// it has no kernels yet, so Supports answers NS for every op with that
// reason. Kernels (NVRTC-compiled, cuBLAS GEMM) are the CUDA backend issue.
package cuda
