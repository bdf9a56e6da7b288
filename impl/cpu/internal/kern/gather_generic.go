package kern

// weightedRowsGo is the Go path of WeightedRows: rows accumulated one at a
// time into out (eight channels at once, so the compiler keeps them in
// registers), in the order of the taps.
func weightedRowsGo(n int, src []float32, offs []int32, w []float32, out []float32) {
	out = out[:n]
	clear(out)
	for j, o := range offs {
		wj := w[j]
		row := src[int(o) : int(o)+n]
		d := 0
		for ; d+8 <= n; d += 8 {
			r, q := row[d:d+8:d+8], out[d:d+8:d+8]
			q[0] += wj * r[0]
			q[1] += wj * r[1]
			q[2] += wj * r[2]
			q[3] += wj * r[3]
			q[4] += wj * r[4]
			q[5] += wj * r[5]
			q[6] += wj * r[6]
			q[7] += wj * r[7]
		}
		for ; d < n; d++ {
			out[d] += wj * row[d]
		}
	}
}
