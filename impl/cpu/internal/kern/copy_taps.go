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

// packRows12 packs cols columns of twelve rows that start at offs[r] in
// src into one 12-row GEMM panel:
//
//	for p < cols, r < 12: dst[p·12 + r] = src[offs[r] + p]
//
// The SIMD paths transpose eight columns at a time through registers; the
// columns past the last eight (and the Go path) go one by one. It panics
// unless every read lies inside src and every write inside dst.
func packRows12(src []float32, offs *[12]int, cols int, dst []float32) {
	if cols <= 0 {
		return
	}
	_ = dst[cols*12-1]
	for _, o := range offs {
		if o < 0 || o+cols > len(src) {
			panic("kern: packRows12 row outside the source")
		}
	}
	done := 0
	if cols >= 8 && transposeRows12(cols/8, &src[0], &offs[0], &dst[0]) {
		done = cols / 8 * 8
	}
	if done < cols {
		var rest [12]int
		for r, o := range offs {
			rest[r] = o + done
		}
		packRows12Go(src, &rest, cols-done, dst[done*12:])
	}
}

// packRows12Go is packRows12's pure-Go twin.
func packRows12Go(src []float32, offs *[12]int, cols int, dst []float32) {
	r0, r1, r2, r3 := src[offs[0]:offs[0]+cols], src[offs[1]:offs[1]+cols], src[offs[2]:offs[2]+cols], src[offs[3]:offs[3]+cols]
	r4, r5, r6, r7 := src[offs[4]:offs[4]+cols], src[offs[5]:offs[5]+cols], src[offs[6]:offs[6]+cols], src[offs[7]:offs[7]+cols]
	r8, r9, r10, r11 := src[offs[8]:offs[8]+cols], src[offs[9]:offs[9]+cols], src[offs[10]:offs[10]+cols], src[offs[11]:offs[11]+cols]
	for p := range cols {
		d := dst[p*12 : p*12+12 : p*12+12]
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
		d[6], d[7], d[8], d[9], d[10], d[11] = r6[p], r7[p], r8[p], r9[p], r10[p], r11[p]
	}
}
