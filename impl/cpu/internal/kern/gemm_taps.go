package kern

import "fmt"

// PackedA is the left operand A [m, k] of SgemmTaps, packed once (a
// convolution's weight): for each kcBlock-deep slice of columns, the rows
// in panels of the microkernel's mr, a[p·mr + r], zero past m.
type PackedA struct {
	M, K int
	isa  ISA
	mk   tapsKernel
	data []float32
	raw  []float32 // the unpacked matrix, for the Go path
}

// tapsKernel is a microkernel whose right operand is read in place:
// c[r·ldc+j] (+)= Σ_{p<kc} a[p·mr+r]·b[taps[p]+j] for r < mr, j < nr.
// tails compute only the first rows rows of the same panels (by
// increasing rows), for the last rows of A.
type tapsKernel struct {
	mr, nr int
	fn     tapsFn
	tails  []rowsKernel[tapsFn]
}

// tapsFn is the signature of a taps microkernel.
type tapsFn = func(kc int, a, b *float32, taps *int, c *float32, ldc int, accumulate int, pf *float32)

// Bytes is the memory the packed copy holds.
func (p *PackedA) Bytes() int64 { return int64(len(p.data)+len(p.raw)) * 4 }

// Current reports whether p was packed for the ISA path now active.
func (p *PackedA) Current() bool { return p.isa == active }

// Rows is the number of rows of C SgemmTaps needs: M rounded up to the
// microkernel's panel height (the extra rows may or may not be written).
func (p *PackedA) Rows() int {
	if p.mk.fn == nil {
		return p.M
	}
	return (p.M + p.mk.mr - 1) / p.mk.mr * p.mk.mr
}

// ColTile is the number of columns the microkernel writes at once:
// SgemmTaps computes n rounded up to a multiple of it.
func (p *PackedA) ColTile() int {
	if p.mk.fn == nil {
		return 1
	}
	return p.mk.nr
}

// PackA packs A [m, k] (row stride lda) for SgemmTaps on the active path;
// the Go path keeps a reference to a.
func PackA(m, k int, a []float32, lda int) *PackedA {
	_ = a[(m-1)*lda+k-1]
	p := &PackedA{M: m, K: k, isa: active}
	mk, ok := tapsKernelFor(active)
	if !ok {
		p.raw = make([]float32, m*k)
		for i := 0; i < m; i++ {
			copy(p.raw[i*k:(i+1)*k], a[i*lda:i*lda+k])
		}
		return p
	}
	p.mk = mk
	rows := p.Rows()
	p.data = make([]float32, rows*k)
	for pc := 0; pc < k; pc += kcBlock {
		kb := min(kcBlock, k-pc)
		packA(p.data[rows*pc:], a, lda, 0, m, mk.mr, pc, kb)
	}
	return p
}

// SgemmTaps multiplies the packed A by a right operand read in place from
// src, row p of it starting at taps[p]:
//
//	for i < M, j < n: C[i·ldc+j] = Σ_{p<K} A[i, p] · src[taps[p] + j]
//
// C must have Rows() rows; those past M are scratch. On the SIMD paths n is rounded up to a
// multiple of ColTile(), so src must hold taps[p] + that many values and C
// that many columns; the call panics otherwise, before any access.
// Single-threaded; a direct convolution runs one call per block of output
// pixels, with the pixels of a padded image as src.
func SgemmTaps(pa *PackedA, src []float32, taps []int, n int, c []float32, ldc int) {
	SgemmTapsRows(pa, 0, pa.Rows(), src, taps, n, c, ldc)
}

// RowTile is the granule of the row ranges SgemmTapsRows takes: the
// microkernel's panel height (1 on the Go path).
func (p *PackedA) RowTile() int {
	if p.mk.fn == nil {
		return 1
	}
	return p.mk.mr
}

// SgemmTapsRows is SgemmTaps for rows [i0, i1) of A only, C holding row
// i0 at c[0]:
//
//	for i0 ≤ i < min(i1, M), j < n: C[(i−i0)·ldc+j] = Σ_{p<K} A[i, p] · src[taps[p] + j]
//
// i0 must be a multiple of RowTile() and i1 one too or Rows(); C must have
// i1 − i0 rows. Workers that split a convolution's output channels each
// take a range.
func SgemmTapsRows(pa *PackedA, i0, i1 int, src []float32, taps []int, n int, c []float32, ldc int) {
	if pa.isa != active {
		panic("kern: PackedA packed for ISA " + string(pa.isa) + ", active is " + string(active))
	}
	if len(taps) != pa.K {
		panic(fmt.Sprintf("kern: SgemmTaps with %d taps for K = %d", len(taps), pa.K))
	}
	if i0 < 0 || i1 > pa.Rows() || i0%pa.RowTile() != 0 || i1%pa.RowTile() != 0 && i1 != pa.Rows() {
		panic(fmt.Sprintf("kern: SgemmTapsRows rows [%d, %d) of %d (tile %d)", i0, i1, pa.Rows(), pa.RowTile()))
	}
	if n <= 0 || pa.M == 0 || i1 <= i0 {
		return
	}
	nt := (n + pa.ColTile() - 1) / pa.ColTile() * pa.ColTile()
	if ldc < nt || len(c) < (i1-i0-1)*ldc+nt {
		panic(fmt.Sprintf("kern: SgemmTaps C of %d values (ldc %d) for %d×%d", len(c), ldc, i1-i0, nt))
	}
	for p, t := range taps {
		if t < 0 || t+nt > len(src) {
			panic(fmt.Sprintf("kern: SgemmTaps tap %d at %d (+%d values) outside a source of %d", p, t, nt, len(src)))
		}
	}
	if pa.mk.fn == nil {
		sgemmTapsGo(min(i1, pa.M)-i0, pa.K, pa.raw[i0*pa.K:], src, taps, n, c, ldc)
		return
	}
	mr, nr, rows, k := pa.mk.mr, pa.mk.nr, pa.Rows(), pa.K
	for pc := 0; pc < k; pc += kcBlock {
		kb := min(kcBlock, k-pc)
		acc := 0
		if pc > 0 {
			acc = 1
		}
		block := pa.data[rows*pc:]
		tail := fewestRows(pa.mk.tails, pa.mk.fn, pa.M-(rows-mr))
		for jr := 0; jr < nt; jr += nr {
			for ir := i0; ir < i1; ir += mr {
				fn := pa.mk.fn
				if ir+mr == rows {
					fn = tail
				}
				// The first column panel reads each row tile of A from
				// memory (a weight, once per call): it prefetches the
				// next tile, or the next block's first, into L2.
				var pf *float32
				switch {
				case jr > 0:
				case ir+mr < i1:
					pf = &block[(ir+mr)*kb]
				case pc+kcBlock < k:
					pf = &pa.data[rows*(pc+kcBlock)+i0*min(kcBlock, k-pc-kcBlock)]
				}
				fn(kb, &block[ir*kb], &src[jr], &taps[pc], &c[(ir-i0)*ldc+jr], ldc, acc, pf)
			}
		}
	}
}

// sgemmTapsGo is SgemmTaps' pure-Go twin (n exactly, no rounding).
func sgemmTapsGo(m, k int, a, src []float32, taps []int, n int, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		clear(row)
		for p, t := range taps {
			w := a[i*k+p]
			for j, v := range src[t : t+n] {
				row[j] += w * v
			}
		}
	}
}
