package kern

// Transpose writes the rows×cols matrix src (row stride lds) transposed
// into dst (row stride ldd):
//
//	for i < rows, j < cols: dst[j·ldd + i] = src[i·lds + j]
//
// The SIMD paths move 8×8 blocks through registers; the rest (and the Go
// path) goes element by element in 8×8 tiles. src and dst must not overlap.
func Transpose(rows, cols int, src []float32, lds int, dst []float32, ldd int) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = src[(rows-1)*lds+cols-1]
	_ = dst[(cols-1)*ldd+rows-1]
	i0 := 0
	if k := transposeFor(active); k != nil && cols >= 8 {
		blocks := cols / 8
		for ; i0+8 <= rows; i0 += 8 {
			k(blocks, &src[i0*lds], lds, &dst[i0], ldd)
		}
		// The columns past the last whole block, for the rows done above.
		if rest := cols - 8*blocks; rest > 0 && i0 > 0 {
			transposeGo(i0, rest, src[8*blocks:], lds, dst[8*blocks*ldd:], ldd)
		}
	}
	if i0 < rows {
		transposeGo(rows-i0, cols, src[i0*lds:], lds, dst[i0:], ldd)
	}
}

// transposeKernel is the SIMD signature: an 8-row strip of 8·blocks columns.
type transposeKernel func(blocks int, src *float32, lds int, dst *float32, ldd int)

// transposeGo is the Go path of Transpose, in 8×8 tiles.
func transposeGo(rows, cols int, src []float32, lds int, dst []float32, ldd int) {
	const t = 8
	for i0 := 0; i0 < rows; i0 += t {
		i1 := min(i0+t, rows)
		for j0 := 0; j0 < cols; j0 += t {
			j1 := min(j0+t, cols)
			for i := i0; i < i1; i++ {
				for j, v := range src[i*lds+j0 : i*lds+j1] {
					dst[(j0+j)*ldd+i] = v
				}
			}
		}
	}
}
