//go:build !purego

package peak

import (
	"golang.org/x/sys/cpu"

	"vitbench/impl/cpu/internal/kern"
)

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

// amxKernel returns the AMX-BF16 loop (kern.AMXPeakBF16: six independent
// TDPBF16PS on 16×16 tiles, each 32 multiply-adds per float32 lane) when
// the CPU has AMX-BF16 and Linux grants the tiles.
func amxKernel() (fmaKernel, bool) {
	if !kern.HasAMX() {
		return fmaKernel{}, false
	}
	return fmaKernel{isa: ISAAVX512, lanes: kern.AMXPeakLanes, chains: kern.AMXPeakChains, pairs: 2*kern.AMXPeakPairs - 1,
		run: func(n int, _, _ float32, acc []float32) {
			kern.AMXPeakBF16(n, dotA, dotB, (*[kern.AMXPeakChains * kern.AMXPeakLanes]float32)(acc))
		}}, true
}
