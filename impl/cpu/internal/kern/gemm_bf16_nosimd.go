//go:build purego || !amd64

package kern

// HasBF16 reports whether the VDPBF16PS kernels can run: never in this
// build, where the Go twin computes the bf16 GEMM.
func HasBF16() bool { return false }

// cvtBlocks: this build rounds every value in Go (packPairs).
func cvtBlocks(dst []uint32, src []float32) int { return 0 }

// cvtScaledBlocks: this build rounds every value in Go (packPairsScaled).
func cvtScaledBlocks(dst []uint32, src []float32, scale float32) int { return 0 }

// pairRows: this build pairs every step in Go (packBF16).
func pairRows(steps int, src []float32, ld int, dst []uint32) bool { return false }

func gemmBF16Asm(rows, kp int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate int, bias, res []float32, ldr int, pf []uint32) {
	gemmBF16Go(rows, kp, a, lda, b, c, ldc, accumulate, bias, res, ldr, pf)
}

// HasAMX reports whether the AMX-BF16 kernels can run: never in this build.
func HasAMX() bool { return false }

func gemmBF16AMXTile(rows, kp int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate int, bias, res []float32, ldr int, pf []uint32) {
	panic("kern: no AMX kernel in this build")
}

func amxRows(kt, rows int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate bool, bias []float32) {
	panic("kern: no AMX kernel in this build")
}

// AMXPeakLanes, AMXPeakChains and AMXPeakPairs: the AMX peak loop's shape
// (no such loop in this build).
const (
	AMXPeakLanes  = 256
	AMXPeakChains = 6
	AMXPeakPairs  = 16
)

// AMXPeakBF16: no AMX in this build.
func AMXPeakBF16(n int, a, b uint32, acc *[AMXPeakChains * AMXPeakLanes]float32) bool { return false }

// bf16FullTiles runs nothing without the SIMD kernels: the driver takes
// its tiles one by one through the twin.
func bf16FullTiles(tiles, kp int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate int, bias, res []float32, ldr int, pf []uint32) bool {
	return false
}
