package kern

// AttentionBF16 is the attention of m queries over n keys of d values with
// bf16 products, one block of query rows at a time so that the scores stay
// in cache: it computes what
//
//	SgemmBF16(m, n, d, q, ldq, k, ldk, true, s, lds)      // s = Q·Kᵀ
//	mask(s, m, lds, 0)                                    // unless nil
//	Softmax(m, n, s, lds, s, lds, scale)
//	SgemmBF16(m, d, n, s, lds, v, ldv, false, ctx, ldc)   // ctx = P·V
//
// computes, bit for bit (same roundings to bf16, same float32 sums in the
// same order), without the m×n score matrix: K and V are rounded and
// packed once, then each block of attentionBF16Rows query rows goes
// through its scores, their softmax, their rounding to pairs and its rows
// of P·V while the block (attentionBF16Rows × n floats) is in cache.
// mask(s, rows, lds, i0) sets the masked scores of query rows i0 …
// i0+rows−1 (row i0+r at s[r·lds:]) to −Inf. n and d must be at most
// kcBlockBF16 (AttentionBF16Fits); ctx's rows are written (zero when n is
// 0), q, k and v only read.
func AttentionBF16(m, n, d int, q []float32, ldq int, k []float32, ldk int, v []float32, ldv int,
	ctx []float32, ldc int, scale float32, mask func(s []float32, rows, lds, i0 int)) {
	AttentionBF16Reusing(m, n, d, q, ldq, k, ldk, v, ldv, ctx, ldc, scale, mask, nil, 0)
}

// PackedKV holds the keys and values of one attention head as
// AttentionBF16 rounds and packs them, so that a worker's next task on the
// same head (another block of its query rows) does not pack them again.
// The zero value holds nothing.
type PackedKV struct {
	id, n, d int
	full     bool
	kp, vp   []uint32
}

// Bytes is the size of kv's buffers.
func (kv *PackedKV) Bytes() int64 { return 4 * int64(cap(kv.kp)+cap(kv.vp)) }

// Forget empties kv: what it holds is stale (a new attention call).
func (kv *PackedKV) Forget() { kv.full = false }

// AttentionBF16Reusing is AttentionBF16 with its packed K and V kept in
// kv (unless nil) under id: when kv already holds id's (same n and d), it
// uses them instead of reading k and v. The caller guarantees that one id
// stands for one K and V with the same values for as long as kv is used
// (one call of an attention node: id = image·heads + head).
func AttentionBF16Reusing(m, n, d int, q []float32, ldq int, k []float32, ldk int, v []float32, ldv int,
	ctx []float32, ldc int, scale float32, mask func(s []float32, rows, lds, i0 int), kv *PackedKV, id int) {
	if m <= 0 || d <= 0 {
		return
	}
	if !AttentionBF16Fits(n, d) {
		panic("kern: AttentionBF16 past one block of k")
	}
	if n <= 0 {
		for i := range m {
			clear(ctx[i*ldc : i*ldc+d])
		}
		return
	}
	const nr = bf16NR
	kpQ, kpP := (d+1)/2, (n+1)/2 // pairs of a score, of a row of P·V
	panelsK, panelsV := (n+nr-1)/nr, (d+nr-1)/nr
	kdK, kdV := panelPairsBF16(d), panelPairsBF16(n)
	lds := panelsK * nr // the scores of whole panels: past n, zero keys
	ldq2, ldp2 := bf16Stride(kpQ), bf16Stride(kpP)
	br := attentionBF16Rows

	pairs := pairsPool.Get().(*[]uint32)
	defer pairsPool.Put(pairs)
	lenK, lenV := packedLenBF16(n, d), packedLenBF16(d, n)
	// K and V packed in kv, kept for the next task, or in the scratch.
	var kp, vp, buf []uint32
	if kv != nil {
		if !kv.full || kv.id != id || kv.n != n || kv.d != d {
			kv.kp, kv.vp = growPairs(&kv.kp, lenK), growPairs(&kv.vp, lenV)
			packBF16(kv.kp, n, d, k, ldk, true)
			packBF16(kv.vp, d, n, v, ldv, false)
			kv.id, kv.n, kv.d, kv.full = id, n, d, true
		}
		kp, vp = kv.kp, kv.vp
		buf = growPairs(pairs, br*ldq2+br*ldp2)
	} else {
		buf = growPairs(pairs, lenK+lenV+br*ldq2+br*ldp2)
		kp, vp, buf = buf[:lenK], buf[lenK:lenK+lenV], buf[lenK+lenV:]
		packBF16(kp, n, d, k, ldk, true)
		packBF16(vp, d, n, v, ldv, false)
	}
	qa, pa := buf[:br*ldq2], buf[br*ldq2:]
	wsp := workspace.Get().(*[]float32)
	defer workspace.Put(wsp)
	ws := grow(wsp, br*lds+bf16MR*nr+br)
	s, tile, inv := ws[:br*lds], ws[br*lds:br*lds+bf16MR*nr], ws[br*lds+bf16MR*nr:]

	tileFn := bf16Tile()
	for i0 := 0; i0 < m; i0 += br {
		rows := min(br, m-i0)
		// The rows the kernels read: the last tile's up to its kernel's
		// height, zero.
		padded := rows/bf16MR*bf16MR + bf16KernelRows(rows%bf16MR)
		if rows%bf16MR == 0 {
			padded = rows
		}
		for r := range rows {
			packPairs(qa[r*ldq2:r*ldq2+kpQ], q[(i0+r)*ldq:(i0+r)*ldq+d])
		}
		for r := rows; r < padded; r++ {
			clear(qa[r*ldq2 : r*ldq2+kpQ])
		}
		for p := range panelsK {
			bf16PanelRows(tileFn, rows, kpQ, qa, ldq2, kp[p*nr*kdK:], s[p*nr:], lds, padded)
		}
		if mask != nil {
			mask(s, rows, lds, i0)
		}
		// Softmax's rows scaled by 1/Σ as they are rounded to pairs: its
		// bits, one pass fewer over the block.
		softmaxExp(rows, n, s, lds, s, lds, scale, inv[:rows])
		for r := range rows {
			packPairsScaled(pa[r*ldp2:r*ldp2+kpP], s[r*lds:r*lds+n], inv[r])
		}
		for r := rows; r < padded; r++ {
			clear(pa[r*ldp2 : r*ldp2+kpP])
		}
		for p := range panelsV {
			c0, nw := p*nr, min(nr, d-p*nr)
			full := rows / bf16MR * bf16MR
			if nw < nr {
				full = 0
			}
			if full > 0 {
				bf16PanelRows(tileFn, full, kpP, pa, ldp2, vp[p*nr*kdV:], ctx[i0*ldc+c0:], ldc, full)
			}
			// The rows past the full tiles, or a panel past d's last
			// column: through the scratch tile, the valid part copied out.
			for r0 := full; r0 < rows; r0 += bf16MR {
				mh := min(bf16MR, rows-r0)
				tileFn(bf16KernelRows(mh), kpP, pa[r0*ldp2:], ldp2, vp[p*nr*kdV:], tile, nr, 0, nil, nil, 0, nil)
				for r := range mh {
					copy(ctx[(i0+r0+r)*ldc+c0:(i0+r0+r)*ldc+c0+nw], tile[r*nr:r*nr+nw])
				}
			}
		}
	}
}

// bf16PanelRows computes the padded×bf16NR block c = a·b of one packed panel b
// (kp pairs deep), padded rows of a (a multiple of 4 past the last full
// 12-row tile, the rows past rows zero): the full tiles in one call where
// the AVX-512 kernels run (bf16FullTiles), the rest tile by tile.
func bf16PanelRows(tileFn bf16TileFn, rows, kp int, a []uint32, lda int, b []uint32, c []float32, ldc, padded int) {
	r0 := 0
	if full := rows / bf16MR; full > 0 && bf16FullTiles(full, kp, a, lda, b, c, ldc, 0, nil, nil, 0, nil) {
		r0 = full * bf16MR
	}
	for ; r0 < padded; r0 += bf16MR {
		tileFn(bf16KernelRows(min(bf16MR, padded-r0)), kp, a[r0*lda:], lda, b, c[r0*ldc:], ldc, 0, nil, nil, 0, nil)
	}
}

// attentionBF16Rows is the query rows AttentionBF16 takes per block: a
// multiple of bf16MR.
var attentionBF16Rows = 4 * bf16MR

// AttentionBF16Fits reports whether AttentionBF16 runs n keys of d values:
// both products one block of k deep (n, d ≤ kcBlockBF16, so that its sums
// are SgemmBF16's), and not on AMX, whose tiles it does not drive.
func AttentionBF16Fits(n, d int) bool {
	return n <= kcBlockBF16 && d <= kcBlockBF16 && !bf16UsesAMX()
}
