package kern

// AvgPool2x2BlockedRow computes one output row of a 2×2 average pool of
// stride 2 over rows in the NCHW16c layout (a pixel is 16 channels side
// by side), from the two input rows r0 and r1 under it:
//
//	for j < n, l < 16:
//	    out[j·16+l] = (((r0[2j·16+l] + r0[(2j+1)·16+l]) + r1[2j·16+l]) + r1[(2j+1)·16+l]) · 0.25
//
// the sums in avgPool2x2Row's order (multiplying by 0.25 is dividing by 4
// exactly), so every path gives the same bits. r0 and r1 hold at least
// 2n pixels, out at least n.
func AvgPool2x2BlockedRow(n int, r0, r1, out []float32) {
	if n == 0 {
		return
	}
	_ = r0[2*n*BlockLanes-1]
	_ = r1[2*n*BlockLanes-1]
	_ = out[n*BlockLanes-1]
	if avgPool2x2BlockedRow(n, &r0[0], &r1[0], &out[0]) {
		return
	}
	avgPool2x2BlockedRowGo(n, r0, r1, out)
}

// avgPool2x2BlockedRowGo is AvgPool2x2BlockedRow's plain loop, its Go twin.
func avgPool2x2BlockedRowGo(n int, r0, r1, out []float32) {
	for j := 0; j < n; j++ {
		a, b := r0[2*j*BlockLanes:][:2*BlockLanes], r1[2*j*BlockLanes:][:2*BlockLanes]
		o := out[j*BlockLanes:][:BlockLanes]
		for l := range o {
			o[l] = (((a[l] + a[BlockLanes+l]) + b[l]) + b[BlockLanes+l]) * 0.25
		}
	}
}

// MaxPool3s2BlockedRow is the horizontal pass of a max pool of 3-wide
// windows at stride 2 over a row in the NCHW16c layout: output pixel j
// takes the maximum of pixels 2j, 2j+1 and 2j+2 of src, 16 channels at
// a time, compared in that order as Max compares (y when y > x or y is
// NaN, else x):
//
//	for j < n, l < 16:
//	    out[j·16+l] = max(max(src[2j·16+l], src[(2j+1)·16+l]), src[(2j+2)·16+l])
//
// src holds at least 2n+1 pixels (a row padded with −∞ where a window
// passes the image's edge), out at least n.
func MaxPool3s2BlockedRow(n int, src, out []float32) {
	if n == 0 {
		return
	}
	_ = src[(2*n+1)*BlockLanes-1]
	_ = out[n*BlockLanes-1]
	if maxPool3s2BlockedRow(n, &src[0], &out[0]) {
		return
	}
	maxPool3s2BlockedRowGo(n, src, out)
}

// maxPool3s2BlockedRowGo is MaxPool3s2BlockedRow's plain loop, its Go twin.
func maxPool3s2BlockedRowGo(n int, src, out []float32) {
	for j := 0; j < n; j++ {
		w := src[2*j*BlockLanes:][:3*BlockLanes]
		o := out[j*BlockLanes:][:BlockLanes]
		for l := range o {
			v := w[l]
			for _, y := range [2]float32{w[BlockLanes+l], w[2*BlockLanes+l]} {
				if y > v || y != y {
					v = y
				}
			}
			o[l] = v
		}
	}
}
