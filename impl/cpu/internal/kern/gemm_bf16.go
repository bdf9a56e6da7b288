package kern

import (
	"sync"
	"unsafe"
)

// The bf16 GEMM: C = A·op(B) with both operands rounded to bfloat16
// (RoundBF16) and the products summed in float32 by VDPBF16PS, two per
// float32 lane and instruction (dpbf16 says how it rounds). Each uint32
// holds a pair of bf16 values adjacent in k, the even k in its low half:
// op(B) is packed once into panels of bf16NR columns, pair p of column j
// at p·bf16NR + j, and A is rounded block by block into rows of pairs that
// the microkernel reads in place. Without AVX512_BF16 (or on another ISA
// path) the Go twin of the microkernel (gemmBF16Go) computes the same bits.
const (
	bf16NR = 32 // columns of a packed panel and of the microkernel's tile
	bf16MR = 12 // rows of the microkernel's tile
	// bf16AMXRows is the rows of the AMX microkernel's tile (two tiles of
	// A, 16 rows each).
	bf16AMXRows = 32
	// kcBlockBF16 is the depth of a block of k: the same bytes of a B
	// panel (128 KiB) as kcBlock in float32.
	kcBlockBF16 = 2 * kcBlock
)

// bf16TileFn computes the rows×bf16NR tile (rows is 4, 8 or bf16MR)
//
//	c[r·ldc+j] = ((c[r·ldc+j] +) Σ_{p<kp} dot(a[r·lda+p], b[p·bf16NR+j]) + bias[j]) + res[r·ldr+j]
//
// with the sum chained by dpbf16 from 0, c's old value when accumulate !=
// 0, bias and res when not nil, each addition rounded once in float32.
// pf, when not nil, is the next panel of B, prefetched into L2.
type bf16TileFn func(rows, kp int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate int, bias, res []float32, ldr int, pf []uint32)

// gemmBF16Go is the Go twin of the bf16 microkernels (bf16TileFn).
func gemmBF16Go(rows, kp int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate int, bias, res []float32, ldr int, _ []uint32) {
	b = b[:kp*bf16NR]
	for r := 0; r < rows; r++ {
		var acc [bf16NR]float32
		for p, av := range a[r*lda : r*lda+kp] {
			bv := b[p*bf16NR : p*bf16NR+bf16NR]
			for j := range acc {
				acc[j] = dpbf16(acc[j], av, bv[j])
			}
		}
		row := c[r*ldc : r*ldc+bf16NR]
		for j, s := range acc {
			if accumulate != 0 {
				s += row[j]
			}
			if bias != nil {
				s += bias[j]
			}
			if res != nil {
				s += res[r*ldr+j]
			}
			row[j] = s
		}
	}
}

// amxOff turns the AMX kernel off (SetAMX), so that the AVX-512 path of an
// AMX CPU runs the VDPBF16PS kernels, which its Go twin reproduces bit for
// bit.
var amxOff bool

// SetAMX turns the AMX-BF16 microkernel on or off (on by default where
// HasAMX) and returns the previous setting. Not safe while kernels run.
func SetAMX(on bool) (was bool) {
	was = !amxOff
	amxOff = !on
	return was
}

// bf16UsesAMX reports whether the bf16 GEMM runs on AMX tiles: on the
// AVX-512 path of a CPU with AMX-BF16 (HasAMX), unless SetAMX(false).
func bf16UsesAMX() bool { return !amxOff && active == ISAAVX512 && HasAMX() }

// bf16Rows is the number of rows of the active bf16 microkernel's tile:
// bf16AMXRows on AMX, else bf16MR.
func bf16Rows() int {
	if bf16UsesAMX() {
		return bf16AMXRows
	}
	return bf16MR
}

// bf16Tile returns the microkernel of the active path: the AMX kernel
// where bf16UsesAMX, the VDPBF16PS kernels on the AVX-512 path of a CPU
// with AVX512_BF16, else the twin.
func bf16Tile() bf16TileFn {
	switch {
	case bf16UsesAMX():
		return gemmBF16AMXTile
	case active == ISAAVX512 && HasBF16():
		return gemmBF16Asm
	}
	return gemmBF16Go
}

// BF16Kernel names the bf16 microkernel the active path uses.
func BF16Kernel() string {
	switch {
	case bf16UsesAMX():
		return "amx_bf16"
	case active == ISAAVX512 && HasBF16():
		return "avx512_bf16"
	}
	return "go"
}

// pairsPool holds bf16 buffers between calls (A's rounded rows, B packed
// per call by SgemmBF16).
var pairsPool = sync.Pool{New: func() any { return new([]uint32) }}

func growPairs(buf *[]uint32, n int) []uint32 {
	if cap(*buf) < n {
		*buf = make([]uint32, n)
	}
	return (*buf)[:n]
}

// PackBTBF16 packs Bᵀ for B [n, k] (row stride ldb), rounded to bf16, for
// the bf16 GEMM on every path: the layout of a Linear or conv weight
// [out, in], converted once when it is uploaded.
func PackBTBF16(n, k int, b []float32, ldb int) *PackedB {
	p := &PackedB{N: n, K: k, transB: true, bf16: true}
	p.data16 = make([]uint32, packedLenBF16(n, k))
	packBF16(p.data16, n, k, b, ldb, true)
	return p
}

// PackBNBF16 packs B [k, n] (row stride ldb), rounded to bf16, as the
// right-hand operand as it is (x @ B).
func PackBNBF16(n, k int, b []float32, ldb int) *PackedB {
	p := &PackedB{N: n, K: k, bf16: true}
	p.data16 = make([]uint32, packedLenBF16(n, k))
	packBF16(p.data16, n, k, b, ldb, false)
	return p
}

// packedLenBF16 is the number of pairs of an n×k operand packed for the
// bf16 GEMM: for each block of k, ⌈N/bf16NR⌉ panels of panelPairsBF16
// pairs.
func packedLenBF16(n, k int) int {
	panels := (n + bf16NR - 1) / bf16NR
	full := k / kcBlockBF16
	last := k - full*kcBlockBF16
	return panels * bf16NR * (full*kcBlockBF16/2 + panelPairsBF16(last))
}

// panelPairsBF16 is the depth in pairs of a packed panel for a block of kb
// values of k: ⌈kb/2⌉ rounded up to a multiple of 16, the depth of an AMX
// tile of B, the pairs past ⌈kb/2⌉ zero. (A full block, kcBlockBF16/2
// pairs, is such a multiple already.)
func panelPairsBF16(kb int) int { return ((kb+1)/2 + 15) / 16 * 16 }

// packBF16 fills dst with op(B) (Bᵀ when transB) rounded and packed:
// in the block of k starting at pc (dst[panels·bf16NR·pc/2:]), pair p of
// column j at (j/bf16NR)·bf16NR·kd + p·bf16NR + j mod bf16NR, where kd is
// the block's panel depth (panelPairsBF16); zero past n and past k.
func packBF16(dst []uint32, n, k int, b []float32, ldb int, transB bool) {
	panels := (n + bf16NR - 1) / bf16NR
	var rows []uint32 // transB: a full panel's rows of pairs, row j at j·kp
	if transB && n >= bf16NR {
		buf := pairsPool.Get().(*[]uint32)
		defer pairsPool.Put(buf)
		rows = growPairs(buf, bf16NR*min(k+1, kcBlockBF16)/2+bf16NR)
	}
	for pc := 0; pc < k; pc += kcBlockBF16 {
		kb := min(kcBlockBF16, k-pc)
		kp, kd := (kb+1)/2, panelPairsBF16(kb)
		block := dst[panels*bf16NR*(pc/2):]
		for jr := 0; jr < n; jr += bf16NR {
			panel := block[jr*kd : jr*kd+bf16NR*kd]
			nw := min(bf16NR, n-jr)
			if nw < bf16NR {
				clear(panel)
			} else {
				clear(panel[kp*bf16NR:])
			}
			if transB {
				packColumnsBF16(panel, nw, kb, b[jr*ldb+pc:], ldb, rows)
				continue
			}
			packStepsBF16(panel, nw, kb, b[pc*ldb+jr:], ldb)
		}
	}
}

// packColumnsBF16 packs one panel of Bᵀ for packBF16: column j of the
// panel is row j of b (nw rows, ldb apart, kb values each), its adjacent
// values rounded into pairs:
//
//	for j < nw, p < ⌈kb/2⌉: panel[p·bf16NR + j] = RoundBF16(b[j·ldb + 2p]) | RoundBF16(b[j·ldb + 2p+1])<<16
//
// (the high half zero past kb). A full panel rounds each row into rows
// (packPairs) and transposes the 32 rows of pairs into the panel eight
// steps at a time (packRows, whose moves keep every bit); a partial one
// stores each row's pairs one by one. The attention products of DeiT-Ti on
// cpu-bf16 (QKᵀ of 197 keys of 64 values per head) packed their keys one
// pair at a time before.
func packColumnsBF16(panel []uint32, nw, kb int, b []float32, ldb int, rows []uint32) {
	kp := (kb + 1) / 2
	if nw == bf16NR && rows != nil && kp >= 8 {
		var offs [bf16NR]int
		for j := range offs {
			offs[j] = j * kp
			packPairs(rows[j*kp:(j+1)*kp], b[j*ldb:j*ldb+kb])
		}
		packRows(floatBits(rows[:bf16NR*kp]), offs[:], kp, floatBits(panel[:kp*bf16NR]))
		return
	}
	var pairs [kcBlockBF16 / 2]uint32
	for j := range nw {
		packPairs(pairs[:kp], b[j*ldb:j*ldb+kb])
		for p, v := range pairs[:kp] {
			panel[p*bf16NR+j] = v
		}
	}
}

// packStepsBF16 packs one panel of a row-major B for packBF16: step p
// pairs rows 2p and 2p+1 of b (ldb apart) column by column, nw columns:
//
//	for p < ⌈kb/2⌉, j < nw: panel[p·bf16NR + j] = RoundBF16(b[2p·ldb + j]) | RoundBF16(b[(2p+1)·ldb + j])<<16
//
// (the high half zero for a last row without a partner). A full panel's
// whole steps take pairRows (VCVTNE2PS2BF16 and VPERMW) where it runs;
// the rest rounds each row into adjacent pairs and untangles them. DeiT-Ti's
// P·V on cpu-bf16 (B: 197 rows of a head's 64 values) took every step the
// slow way before.
func packStepsBF16(panel []uint32, nw, kb int, b []float32, ldb int) {
	kp, p0 := (kb+1)/2, 0
	if nw == bf16NR && kb >= 2 && pairRows(kb/2, b, ldb, panel) {
		p0 = kb / 2
	}
	var lo, hi [bf16NR / 2]uint32
	for p := p0; p < kp; p++ {
		q := 2 * p
		packPairs(lo[:(nw+1)/2], b[q*ldb:q*ldb+nw])
		if q+1 < kb {
			packPairs(hi[:(nw+1)/2], b[(q+1)*ldb:(q+1)*ldb+nw])
		} else {
			hi = [bf16NR / 2]uint32{}
		}
		dst := panel[p*bf16NR : p*bf16NR+nw]
		for j := range dst {
			sh := 16 * (j % 2)
			dst[j] = lo[j/2]>>sh&0xffff | (hi[j/2]>>sh&0xffff)<<16
		}
	}
}

// floatBits views pairs as float32 values with the same bits, for the
// float32 transposes (packRows), which only move them.
func floatBits(u []uint32) []float32 {
	if len(u) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&u[0])), len(u))
}

// SgemmBF16 is Sgemm in bf16 (A and op(B) rounded, float32 sums): for
// operands that change every call, such as attention's QKᵀ and P·V. B is
// rounded and packed into a pooled buffer; single-threaded.
//
//	for i < m, j < n: C[i·ldc+j] = Σ_p bf16(A[i·lda+p]) · bf16(op(B)[p, j])  (summed as sgemmPanelsBF16 says)
func SgemmBF16(m, n, k int, a []float32, lda int, b []float32, ldb int, transB bool, c []float32, ldc int) {
	if sgemmTrivial(m, n, k, a, lda, b, ldb, transB, c, ldc) {
		return
	}
	buf := pairsPool.Get().(*[]uint32)
	defer pairsPool.Put(buf)
	p := PackedB{N: n, K: k, transB: transB, bf16: true}
	p.data16 = growPairs(buf, packedLenBF16(n, k))
	packBF16(p.data16, n, k, b, ldb, transB)
	sgemmPanelsBF16(m, matrixA{a, lda}, &p, c, ldc, Epilogue{}, 0, n)
}

// panelPairs sets dst[r·lda + p] = pairBF16(panel[2p·mr + r],
// panel[(2p+1)·mr + r]) for r < rows, p < kp: a packed panel of mr rows
// (PackA's layout, 2·kp steps deep) as rows of pairs. The panel is rounded
// into buf (kp·mr pairs or more), two values to a uint32, with packPairs
// (VCVTNE2PS2BF16 where it runs), then regrouped: value p·mr + r is half
// r%2 of pair p·mr/2 + r/2. mr must be even.
func panelPairs(dst []uint32, lda int, panel []float32, kp, mr, rows int, buf []uint32) {
	bf := buf[:kp*mr]
	packPairs(bf, panel[:2*kp*mr])
	for r := range rows {
		row := dst[r*lda : r*lda+kp]
		sh, q := 16*(r%2), r/2
		for p := range row {
			lo := bf[2*p*mr/2+q] >> sh & 0xffff
			hi := bf[(2*p+1)*mr/2+q] >> sh & 0xffff
			row[p] = lo | hi<<16
		}
	}
}

// Cache blocking of the AMX path (docs/cpu-bf16.md, "AMX": depths of 64
// to 512 pairs and blocks of 96 to 1024 rows were measured): a pass of the
// kernel over a panel is amxDepth pairs of k deep (a multiple of 16), so
// its amxDepth·128 bytes are reused from L1 by every 32 rows of the block
// of A, a block of about amxMC rows.
const (
	amxDepth = 256
	amxMC    = 256
)

// actWholeBytes is the largest row block of the bf16 GEMM whose
// activation waits for all its columns when its rows lie end to end in C
// (columns [0, ldc)): one call then covers the whole block (applyRows)
// instead of one per row and 256 columns. A DeiT-Ti fc1 block, 99×768
// floats, is 297 calls of 16 vectors; GELU over it ran 21.5 µs in those
// calls and 15 µs in one (one thread). Whole networks on cpu-bf16, both
// rules alternating run by run: deit_ti 1.02–1.03×, t2t_vit_14 1.01×,
// vit_s16 1.00×. The float32 GEMM keeps the 256-column rule: there the
// same change read 0.99–1.00× (its panels of B, twice the bytes, leave
// less of L2 to the waiting block).
var actWholeBytes = 512 << 10

// actDue reports whether the activation of a bf16 row block of mb rows
// runs now on the cols columns waiting: every actCols columns, or, for a
// block of whole rows of C (j0 = 0, j1 = ldc) of at most actWholeBytes,
// once at its last column (last).
func actDue(cols int, last bool, mb, j0, j1, ldc int) bool {
	if j0 == 0 && j1 == ldc && mb*ldc*4 <= actWholeBytes {
		return last
	}
	return cols >= actCols || last
}

// bf16KernelRows is the number of rows of the microkernel that computes
// the first mh rows of a tile: 4, 8 or bf16MR, or mh itself on AMX (whose
// kernel writes any number of rows). Other row counts go through a
// scratch tile (A's rows past mh are zero).
func bf16KernelRows(mh int) int {
	switch {
	case bf16UsesAMX():
		return mh
	case mh <= 4:
		return 4
	case mh <= 8:
		return 8
	}
	return bf16MR
}

// bf16Stride is the row stride, in pairs, of A's rounded rows for kp
// pairs: a multiple of a cache line plus one, so that the twelve rows the
// microkernel reads do not share a few L1 sets.
func bf16Stride(kp int) int { return (kp+15)/16*16 + 16 }

// tileEpilogue returns what a bf16 microkernel adds to the tile whose top
// left element of C is (row, col), on the last block of k only (last): the
// bias from column col, and the residual from (row, col) when no
// activation comes between them (the activation runs after the kernel).
func tileEpilogue(epi Epilogue, last bool, row, col int) (bias, res []float32) {
	if !last {
		return nil, nil
	}
	if epi.Bias != nil {
		bias = epi.Bias[col:]
	}
	if epi.Residual != nil && epi.Act == ActNone {
		res = epi.Residual[row*epi.LdR+col:]
	}
	return bias, res
}

// sgemmPanelsBF16 computes columns [j0, j1) of C = A·op(B) with the
// epilogue, A [m, pb.K] from src and op(B) packed in bf16 (pb.bf16): for
// each block of k, the blocks of rows of A are rounded to pairs and
// multiplied by every panel in [j0, j1), the first block of k writing C,
// the others adding to it, the epilogue after the last:
//
//	C[i·ldc+j] = act(Σ_blocks Σ_{p in block} dot(A_i pair p, op(B)_j pair p) + bias[j]) + residual[i·ldr+j]
//
// j0 must be a multiple of bf16NR.
func sgemmPanelsBF16(m int, src ASource, pb *PackedB, c []float32, ldc int, epi Epilogue, j0, j1 int) {
	const nr = bf16NR
	mr := bf16Rows()
	// packMR is the rows of the panels PackA writes for a source that is
	// not a matrix: 16 on AMX, two to the kernel's 32 rows (PackA's fast
	// paths stop at 16).
	packMR := min(mr, 16)
	amx := bf16UsesAMX()
	k := pb.K
	panels := pb.Panels()
	kc := min(k, kcBlockBF16)
	lda := bf16Stride((kc + 1) / 2)
	mc := rowBlock(m, mr)
	if amx {
		mc = rowBlockOf(m, mr, amxMC)
	}
	tileFn := bf16Tile()
	ma, inPlace := src.(matrixA)

	pairs := pairsPool.Get().(*[]uint32)
	defer pairsPool.Put(pairs)
	pa := growPairs(pairs, mc*lda+(kc+1)/2*packMR)
	pa, panelBuf := pa[:mc*lda], pa[mc*lda:] // panelBuf: panelPairs' rounded panel
	wsp := workspace.Get().(*[]float32)
	defer workspace.Put(wsp)
	need := mr * nr
	if !inPlace {
		need += mc * (kc + 1)
	}
	ws := grow(wsp, need)
	tile, rowsF := ws[:mr*nr], ws[mr*nr:]

	beforeAct, afterAct := Epilogue{Bias: epi.Bias}, Epilogue{Act: epi.Act, Residual: epi.Residual, LdR: epi.LdR}
	if epi.Act == ActNone {
		beforeAct.Residual, beforeAct.LdR = epi.Residual, epi.LdR
	}
	for pc := 0; pc < k; pc += kcBlockBF16 {
		kb := min(kcBlockBF16, k-pc)
		kp, kd := (kb+1)/2, panelPairsBF16(kb)
		// kt is the depth the kernel runs: the panel's whole depth on
		// AMX (A's pairs past kp are then zero, as the panel's are).
		kt := kp
		if amx {
			kt = kd
		}
		block := pb.data16[panels*nr*(pc/2):]
		acc := 0
		if pc > 0 {
			acc = 1
		}
		last := pc+kcBlockBF16 >= k
		for ic := 0; ic < m; ic += mc {
			mb := min(mc, m-ic)
			// Rows [ic, ic+mb) and columns [pc, pc+kb) of A as pairs, the
			// rows up to the next multiple of mr zero.
			if inPlace {
				for r := range mb {
					row := ma.a[(ic+r)*ma.lda+pc : (ic+r)*ma.lda+pc+kb]
					packPairs(pa[r*lda:r*lda+kp], row)
				}
			} else if ps, ok := src.(PairSource); ok && kb%2 == 0 {
				ps.PackPairs(pa, lda, ic, mb, pc, kb)
			} else {
				// Panels of mr rows, the source's fast layout (a[p·mr + r]),
				// rounded as they are and then regrouped into rows of pairs.
				kb2 := 2 * kp // even: an odd kb's last value pairs with a zero
				pm := packMR
				panels := rowsF[:(mb+pm-1)/pm*pm*kb2]
				src.PackA(panels, ic, mb, pm, pc, kb)
				if kb2 != kb {
					// PackA wrote panels kb deep; spread them kb2 deep,
					// last panel first, with a zero step at the end.
					for q := (mb+pm-1)/pm - 1; q >= 0; q-- {
						copy(panels[q*pm*kb2:q*pm*kb2+pm*kb], panels[q*pm*kb:q*pm*kb+pm*kb])
						clear(panels[q*pm*kb2+pm*kb : (q+1)*pm*kb2])
					}
				}
				for ir := 0; ir < mb; ir += pm {
					panelPairs(pa[ir*lda:], lda, panels[ir*kb2:(ir+pm)*kb2], kp, pm, min(pm, mb-ir), panelBuf)
				}
			}
			for r := mb; r < (mb+mr-1)/mr*mr; r++ {
				clear(pa[r*lda : r*lda+kt])
			}
			if kt > kp {
				for r := range mb {
					clear(pa[r*lda+kp : r*lda+kt])
				}
			}
			actFrom := j0
			for jr := j0; jr < j1; jr += nr {
				bp := block[jr*kd : jr*kd+nr*kd]
				var pf []uint32
				if jr+nr < j1 {
					pf = block[(jr+nr)*kd:]
				}
				nw := min(nr, j1-jr)
				if amx && nw == nr {
					// The whole row block against the panel, amxDepth pairs of
					// k at a time, summed into C in place, the first pass
					// starting from the bias; then the residual.
					var bias []float32
					if epi.Bias != nil {
						bias = epi.Bias[jr : jr+nr]
					}
					for kk := 0; kk < kt; kk += amxDepth {
						amxRows(min(amxDepth, kt-kk)/16, mb, pa[kk:], lda, bp[kk*nr:], c[ic*ldc+jr:], ldc, acc != 0 || kk > 0, bias)
					}
					if last && beforeAct.Residual != nil {
						res := Epilogue{Residual: beforeAct.Residual, LdR: beforeAct.LdR}
						for r := range mb {
							res.apply(c[(ic+r)*ldc+jr:(ic+r)*ldc+jr+nr], ic+r, jr)
						}
					}
				} else {
					ir := 0
					if full := mb / mr; nw == nr && full > 0 {
						// The full tiles in one call (bf16FullTiles), where
						// the AVX-512 kernels run.
						bias, res := tileEpilogue(epi, last, ic, jr)
						if bf16FullTiles(full, kt, pa, lda, bp, c[ic*ldc+jr:], ldc, acc, bias, res, epi.LdR, pf) {
							ir, pf = full*mr, nil
						}
					}
					for ; ir < mb; ir += mr {
						ap := pa[ir*lda:]
						mh := min(mr, mb-ir)
						cp := (ic+ir)*ldc + jr
						rows := bf16KernelRows(mh)
						if nw == nr && rows == mh {
							bias, res := tileEpilogue(epi, last, ic+ir, jr)
							tileFn(mh, kt, ap, lda, bp, c[cp:], ldc, acc, bias, res, epi.LdR, pf)
							pf = nil
							continue
						}
						// A tile past the last row or column: on the scratch
						// tile, the valid columns copied in and out. The
						// kernel adds the bias of a whole panel (the tail
						// rows of every product whose rows do not fill its
						// tiles: 197 tokens); the residual, whose rows past
						// mh may not exist, is added here.
						if acc != 0 {
							for r := 0; r < mh; r++ {
								copy(tile[r*nr:r*nr+nw], c[cp+r*ldc:cp+r*ldc+nw])
							}
						}
						rest := beforeAct
						var bias []float32
						if last && nw == nr && epi.Bias != nil {
							bias, rest.Bias = epi.Bias[jr:jr+nr], nil
						}
						tileFn(rows, kt, ap, lda, bp, tile, nr, acc, bias, nil, 0, nil)
						for r := 0; r < mh; r++ {
							row := c[cp+r*ldc : cp+r*ldc+nw]
							copy(row, tile[r*nr:r*nr+nw])
							if last && (rest.Bias != nil || rest.Residual != nil) {
								rest.apply(row, ic+ir+r, jr)
							}
						}
					}
				}
				if end := jr + nw; last && epi.Act != ActNone && actDue(end-actFrom, end == j1, mb, j0, j1, ldc) {
					afterAct.applyRows(c[ic*ldc:], ldc, ic, mb, actFrom, end)
					actFrom = end
				}
			}
		}
	}
}
