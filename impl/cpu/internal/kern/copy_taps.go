package kern

// copyTaps12 packs one 12-row window panel whose windows are contiguous in
// the image (see WindowsA.PackA):
//
//	for p < len(taps), r < 12: dst[p·12 + r] = src[taps[p] + r]
//
// It panics unless every read lies inside src and every write inside dst.
func copyTaps12(src []float32, taps []int, dst []float32) {
	if len(taps) == 0 {
		return
	}
	_ = dst[len(taps)*12-1]
	for _, t := range taps {
		if t < 0 || t+12 > len(src) {
			panic("kern: copyTaps12 tap outside the image")
		}
	}
	if k := copyTaps12For(active); k != nil {
		k(len(taps), &src[0], &taps[0], &dst[0])
		return
	}
	copyTaps12Go(src, taps, dst)
}

// copyTaps12Go is copyTaps12's pure-Go twin.
func copyTaps12Go(src []float32, taps []int, dst []float32) {
	for p, t := range taps {
		s := src[t : t+12 : t+12]
		d := dst[p*12 : p*12+12 : p*12+12]
		d[0], d[1], d[2], d[3], d[4], d[5] = s[0], s[1], s[2], s[3], s[4], s[5]
		d[6], d[7], d[8], d[9], d[10], d[11] = s[6], s[7], s[8], s[9], s[10], s[11]
	}
}

// packRows packs cols columns of R = len(offs) rows that start at offs[r]
// in src into one R-wide GEMM panel (an A panel of 12 rows, a Bᵀ panel of
// 16 or 32):
//
//	for p < cols, r < R: dst[p·R + r] = src[offs[r] + p]
//
// The SIMD paths transpose eight columns at a time through registers for
// R of 12, 16 or 32; the columns past the last eight (and the Go path, and
// other R) go one by one. It panics unless every read lies inside src and
// every write inside dst.
func packRows(src []float32, offs []int, cols int, dst []float32) {
	rows := len(offs)
	if cols <= 0 || rows == 0 {
		return
	}
	_ = dst[cols*rows-1]
	for _, o := range offs {
		if o < 0 || o+cols > len(src) {
			panic("kern: packRows row outside the source")
		}
	}
	done := 0
	if cols >= 8 && transposeRows(rows, cols/8, &src[0], &offs[0], &dst[0]) {
		done = cols / 8 * 8
	}
	if done < cols {
		packRowsGo(src, offs, done, cols, dst)
	}
}

// packRowsGo is packRows' pure-Go twin, for columns [p0, p1).
func packRowsGo(src []float32, offs []int, p0, p1 int, dst []float32) {
	rows := len(offs)
	for r, o := range offs {
		for p, v := range src[o+p0 : o+p1] {
			dst[(p0+p)*rows+r] = v
		}
	}
}
