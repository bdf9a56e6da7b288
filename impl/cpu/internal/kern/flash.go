package kern

import "math"

// AttentionMask says which keys each query of Attention sees.
type AttentionMask struct {
	// Causal hides from query i every key j > i + Diag (for the
	// self-attention of rows r0 … of a sequence, Diag = r0).
	Causal bool
	Diag   int
	// Keys, when not nil (one value per key), hides key j from every
	// query where Keys[j] ≠ 0 (nn.MultiheadAttention's key_padding_mask).
	Keys []float32
}

// Attention computes one head's softmax(scale·Q Kᵀ)·V for m queries
// against nk keys, all of d values: Q [m, d], K and V [nk, d], O [m, d]
// (row strides ldq, ldk, ldv, ldo), with the keys mask hides at −∞:
//
//	for i < m:
//	  s[j] = Σ_{p<d} q[i·ldq+p]·k[j·ldk+p]    (float32), for j < nk
//	  x[j] = float32(scale·s[j]), or −∞ where mask hides key j
//	  M = max_j x[j];  L = Σ_j exp(x[j] − M)
//	  o[i·ldo+c] = (Σ_j exp(x[j] − M)·v[j·ldv+c]) · (1/L)   for c < d
//
// It is fused (flash attention for the CPU): queries go in blocks of
// flashQRows and keys in blocks of flashKeys, and per block of queries the
// score tile of one key block at a time is computed (packed GEMM), turned
// into exponentials against the running row maximum, and multiplied into
// the output accumulator, so the [m, nk] score matrix never exists. When
// a key block raises a row's maximum from M′ to M, the row's sum and
// accumulator are first scaled by exp(M′ − M) (the online softmax of
// Milakov and Gimelshein, 2018; Dao et al.'s FlashAttention, 2022); the
// output is divided by L at the end. K and V are packed once per call,
// for all query blocks. With a causal mask the key blocks wholly after a
// query block's last visible key are skipped, and in the others each row
// stops at its last visible key. The result equals softmax-then-GEMM up
// to the order of the sums (a few ulp). A row that sees no key gives NaN,
// as PyTorch's softmax does; so does a NaN or +Inf score.
func Attention(m, nk, d int, q []float32, ldq int, k []float32, ldk int, v []float32, ldv int,
	o []float32, ldo int, scale float32, mask AttentionMask) {
	if m == 0 || d == 0 {
		return
	}
	_ = q[(m-1)*ldq+d-1]
	_ = o[(m-1)*ldo+d-1]
	if nk == 0 {
		for i := 0; i < m; i++ {
			row := o[i*ldo : i*ldo+d]
			for c := range row {
				row[c] = float32(math.NaN())
			}
		}
		return
	}
	_ = k[(nk-1)*ldk+d-1]
	_ = v[(nk-1)*ldv+d-1]
	if mask.Keys != nil {
		_ = mask.Keys[nk-1]
	}
	nb := (nk + flashKeys - 1) / flashKeys
	kLen, vLen := flashPackedLens(d)
	qb := queryBlock(m)
	ldt := flashKeys + 16 // the tile's row stride: not a multiple of 1 KiB, for the L1 sets
	wsp := workspace.Get().(*[]float32)
	defer workspace.Put(wsp)
	buf := grow(wsp, nb*(kLen+vLen)+qb*ldt+3*qb*d+3*qb)
	packedK, buf := buf[:nb*kLen], buf[nb*kLen:]
	packedV, buf := buf[:nb*vLen], buf[nb*vLen:]
	tile, buf := buf[:qb*ldt], buf[qb*ldt:]
	acc, buf := buf[:qb*d], buf[qb*d:]
	qblk, buf := buf[:qb*d], buf[qb*d:]
	pv, buf := buf[:qb*d], buf[qb*d:]
	rowMax, rowSum, rescale := buf[:qb], buf[qb:2*qb], buf[2*qb:3*qb]

	// K and V once, one packed operand per key block.
	pk := make([]PackedB, 2*nb)
	pk, pvb := pk[:nb], pk[nb:]
	for b := 0; b < nb; b++ {
		j0 := b * flashKeys
		kb := min(flashKeys, nk-j0)
		packInto(&pk[b], kb, d, k[j0*ldk:], ldk, true, packedK[b*kLen:(b+1)*kLen])
		packInto(&pvb[b], d, kb, v[j0*ldv:], ldv, false, packedV[b*vLen:(b+1)*vLen])
	}

	inf := float32(math.Inf(-1))
	for i0 := 0; i0 < m; i0 += qb {
		mb := min(qb, m-i0)
		// The query block is read once per key block: a dense copy keeps
		// its rows out of each other's L1 sets.
		for r := 0; r < mb; r++ {
			rowMax[r], rowSum[r] = inf, 0
			copy(qblk[r*d:(r+1)*d], q[(i0+r)*ldq:(i0+r)*ldq+d])
		}
		last := nb // key blocks [0, last) hold a key some row of the block sees
		if mask.Causal {
			last = min(nb, max(0, i0+mb+mask.Diag+flashKeys-1)/flashKeys)
		}
		if last == 0 { // no row of the block sees a key
			for r := 0; r < mb; r++ {
				row := o[(i0+r)*ldo : (i0+r)*ldo+d]
				for c := range row {
					row[c] = float32(math.NaN())
				}
			}
			continue
		}
		for b := 0; b < last; b++ {
			j0 := b * flashKeys
			kb := min(flashKeys, nk-j0)
			SgemmPacked(mb, qblk, d, &pk[b], tile, ldt, nil, 0, kb)
			if mask.Keys != nil {
				for j := j0; j < j0+kb; j++ {
					if mask.Keys[j] != 0 {
						for r := 0; r < mb; r++ {
							tile[r*ldt+j-j0] = inf
						}
					}
				}
			}
			for r := 0; r < mb; r++ {
				row := tile[r*ldt : r*ldt+kb]
				see := kb // keys [j0, j0+see) are not causally hidden from row r
				if mask.Causal {
					see = min(kb, max(0, i0+r+mask.Diag+1-j0))
					clear(row[see:])
				}
				if see == 0 {
					rescale[r] = 1
					continue
				}
				mNew := max(rowMax[r], flashMaxRow(see, row, scale))
				mSub := mNew
				if mSub == inf {
					mSub = 0 // every key so far hidden: exp(−∞ − 0) = 0
				}
				rescale[r] = expGo(rowMax[r] - mSub)
				rowSum[r] = rowSum[r]*rescale[r] + flashExpRow(see, row, scale, mSub)
				rowMax[r] = mNew
			}
			if b == 0 {
				SgemmPacked(mb, tile, ldt, &pvb[b], acc, d, nil, 0, d)
				continue
			}
			SgemmPacked(mb, tile, ldt, &pvb[b], pv, d, nil, 0, d)
			for r := 0; r < mb; r++ {
				AddScaled(d, rescale[r], pv[r*d:(r+1)*d], acc[r*d:(r+1)*d], acc[r*d:(r+1)*d])
			}
		}
		for r := 0; r < mb; r++ {
			Scale(d, 1/rowSum[r], acc[r*d:(r+1)*d], o[(i0+r)*ldo:(i0+r)*ldo+d])
		}
	}
}

// queryBlock is the height of Attention's query blocks for m queries: the
// nearest whole number of flashQRows-row blocks, of equal height rounded
// up to 12 rows (a multiple of every mr), so that 577 tokens go in 7
// blocks of 84 and not 6 of 96 and one of a single row.
func queryBlock(m int) int {
	blocks := max(1, (m+flashQRows/2)/flashQRows)
	rows := (m + blocks - 1) / blocks
	return min(m, (rows+11)/12*12)
}

// Attention's blocks: about flashQRows query rows (a multiple of every mr) by
// flashKeys keys (a multiple of every nr), so that the score tile (about 100 KiB),
// the query block, one packed key and value block (64 KiB each at d = 64)
// and the accumulator stay in the 1 MiB L2 of the Zen 4 this was tuned on.
const (
	flashQRows = 96
	flashKeys  = 256
)

// flashPackedLens are the lengths of one key block packed as Kᵀ [d,
// flashKeys] and of one value block packed as V [flashKeys, d], on the
// active path.
func flashPackedLens(d int) (kLen, vLen int) {
	mk, ok := microKernelFor(active)
	if !ok {
		return 0, d * flashKeys // the Go path keeps K in place and V transposed
	}
	return packedLen(mk, flashKeys, d), packedLen(mk, d, flashKeys)
}
