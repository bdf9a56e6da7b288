//go:build !purego

package kern

import "golang.org/x/sys/cpu"

// HasBF16 reports whether the CPU (and the OS) can run the VDPBF16PS
// kernels: AVX-512 with the AVX512_BF16 extension.
func HasBF16() bool { return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16 }

// cvtBlocks rounds the first 32·⌊len(src)/32⌋ values of src to bf16
// pairs in dst with VCVTNE2PS2BF16 (as packPairs) on the AVX-512 path of a
// CPU with AVX512_BF16, and returns how many values it rounded (0
// elsewhere).
func cvtBlocks(dst []uint32, src []float32) int {
	blocks := len(src) / 32
	if blocks == 0 || active != ISAAVX512 || !HasBF16() {
		return 0
	}
	_ = dst[16*blocks-1]
	cvtBF16AVX512(blocks, &src[0], &dst[0])
	return 32 * blocks
}

// cvtScaledBlocks is cvtBlocks of scale·src (packPairsScaled's fast
// part): cvtScaledBF16AVX512 on the first 32·⌊len(src)/32⌋ values, on the
// AVX-512 path of a CPU with AVX512_BF16; it returns how many it rounded.
func cvtScaledBlocks(dst []uint32, src []float32, scale float32) int {
	blocks := len(src) / 32
	if blocks == 0 || active != ISAAVX512 || !HasBF16() {
		return 0
	}
	_ = dst[16*blocks-1]
	cvtScaledBF16AVX512(blocks, &src[0], &dst[0], scale)
	return 32 * blocks
}

// pairRows packs steps steps of one full 32-column panel from a row-major
// B (src at row 2p of the first step, rows ld floats apart) with
// pairRowsBF16AVX512 on the AVX-512 path of a CPU with AVX512_BF16, and
// reports whether it did (false elsewhere: packBF16 pairs them in Go).
func pairRows(steps int, src []float32, ld int, dst []uint32) bool {
	if active != ISAAVX512 || !HasBF16() {
		return false
	}
	_ = src[(2*steps-1)*ld+bf16NR-1]
	_ = dst[steps*bf16NR-1]
	pairRowsBF16AVX512(steps, &src[0], ld, &dst[0])
	return true
}

// gemmBF16Asm runs the VDPBF16PS microkernel of rows rows (4, 8 or 12):
// the bf16TileFn of the AVX-512 path.
func gemmBF16Asm(rows, kp int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate int, bias, res []float32, ldr int, pf []uint32) {
	_ = a[(rows-1)*lda+kp-1]
	_ = b[kp*bf16NR-1]
	_ = c[(rows-1)*ldc+bf16NR-1]
	pbias, pres := epiPointers(rows, bias, res, ldr)
	var ppf *uint32
	if len(pf) >= kp*bf16NR {
		ppf = &pf[0]
	}
	switch rows {
	case 4:
		gemmBF16x4AVX512(kp, &a[0], lda, &b[0], &c[0], ldc, accumulate, pbias, pres, ldr, ppf)
	case 8:
		gemmBF16x8AVX512(kp, &a[0], lda, &b[0], &c[0], ldc, accumulate, pbias, pres, ldr, ppf)
	case bf16MR:
		gemmBF16x12AVX512(kp, &a[0], lda, &b[0], &c[0], ldc, accumulate, pbias, pres, ldr, ppf)
	default:
		panic("kern: no bf16 microkernel of this many rows")
	}
}

// epiPointers returns the first elements of a bf16 tile's bias (bf16NR
// values) and residual (rows rows ldr apart), nil for a nil slice, after
// checking each holds what the tile reads.
func epiPointers(rows int, bias, res []float32, ldr int) (pbias, pres *float32) {
	if bias != nil {
		_ = bias[bf16NR-1]
		pbias = &bias[0]
	}
	if res != nil {
		_ = res[(rows-1)*ldr+bf16NR-1]
		pres = &res[0]
	}
	return pbias, pres
}

// bf16FullTiles runs the VDPBF16PS microkernel on tiles full 12-row tiles
// of one 32-column panel, one after the other, and reports whether it did
// (false, running nothing, unless the AVX-512 path runs VDPBF16PS tiles):
// for t < tiles, the tile of rows 12t … 12t+11 is bf16TileFn's with a at
// a[12t·lda:], c at c[12t·ldc:] and res at res[12t·ldr:], pf prefetched by
// the first tile only. The bounds are checked once for all the tiles, so
// the driver does not pay gemmBF16Asm's checks and an indirect call per
// tile (a tile of DeiT-Ti's products, 96 pairs deep, runs about 0.3 µs).
func bf16FullTiles(tiles, kp int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate int, bias, res []float32, ldr int, pf []uint32) bool {
	if active != ISAAVX512 || !HasBF16() || bf16UsesAMX() || tiles < 1 {
		return false
	}
	rows := tiles * bf16MR
	_ = a[(rows-1)*lda+kp-1]
	_ = b[kp*bf16NR-1]
	_ = c[(rows-1)*ldc+bf16NR-1]
	pbias, _ := epiPointers(rows, bias, res, ldr) // checks res for all the rows
	var ppf *uint32
	if len(pf) >= kp*bf16NR {
		ppf = &pf[0]
	}
	for t := range tiles {
		var pres *float32
		if res != nil {
			pres = &res[t*bf16MR*ldr]
		}
		gemmBF16x12AVX512(kp, &a[t*bf16MR*lda], lda, &b[0], &c[t*bf16MR*ldc], ldc, accumulate, pbias, pres, ldr, ppf)
		ppf = nil
	}
	return true
}
