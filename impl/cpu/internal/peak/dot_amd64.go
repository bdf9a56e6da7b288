//go:build !purego

package peak

import "golang.org/x/sys/cpu"

// dotKernel returns the bf16 dot-product loop (24 chains of 16-lane
// VDPBF16PS) when the CPU has AVX512_BF16.
func dotKernel() (fmaKernel, bool) {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512BF16 {
		return fmaKernel{}, false
	}
	return fmaKernel{isa: ISAAVX512, lanes: 16, chains: 24, pairs: 1, run: func(n int, _, _ float32, acc []float32) {
		dotBF16AVX512(n, dotA, dotB, (*[384]float32)(acc))
	}}, true
}
