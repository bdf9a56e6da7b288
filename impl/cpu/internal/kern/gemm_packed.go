package kern

import "sync"

// microKernel is a register-blocked GEMM kernel over packed panels:
// fn(kc, a, b, c, ldc, accumulate, bias, res, ldr, pf, pfStep) computes
// the mr×nr tile
//
//	c[r·ldc+j] = ((c[r·ldc+j] +) Σ_{p<kc} a[p·mr+r]·b[p·nr+j] + bias[j]) + res[r·ldr+j]
//
// where c's old value counts when accumulate != 0 and bias and res when
// they are not nil; when pf is not nil, each of its kc steps also
// prefetches nr values at pf into L2 and moves pf on by pfStep bytes (the
// caller passes a slice of the next panel of B: prefetchSlice).
//
// direct is the same kernel reading A in place instead of packed, row r
// at a[r·lda + p], for a row-major left operand that then needs no copy.
//
// tails are kernels of the same packed panels (mr rows per step) that
// compute only their first rows rows, by increasing rows: the last tile
// of A, zero-padded to mr rows, needs no more.
//
// short are kernels of fewer rows than mr, packed (in mr-row panels) and
// in place, that write exactly their rows: the tiles of a row block that
// mr does not divide (balancedTiles).
type microKernel struct {
	mr, nr int
	fn     packedFn
	direct directFn
	// directAll makes direct read A in place at every width and depth,
	// not only the narrow and shallow products (see directA).
	directAll bool
	tails     []rowsKernel[packedFn]
	short     []shortKernel
}

// packedFn is the signature of a microkernel over packed panels.
type packedFn = func(kc int, a, b, c *float32, ldc int, accumulate int, bias, res *float32, ldr int, pf *float32, pfStep int)

// directFn is the signature of a microkernel that reads A in place.
type directFn = func(kc int, a *float32, lda int, b, c *float32, ldc int, accumulate int, bias, res *float32, ldr int, pf *float32, pfStep int)

// shortKernel is a microkernel pair of rows rows: fn over mr-row packed
// panels, direct reading A in place.
type shortKernel struct {
	rows   int
	fn     packedFn
	direct directFn
}

// exactFor returns mk's kernel pair that computes exactly mh rows (the
// full kernels for mr, one of mk.short for fewer), ok false if it has
// none: a tail kernel (fewestRows) then computes more rows than mh.
func (mk microKernel) exactFor(mh int) (shortKernel, bool) {
	if mh == mk.mr {
		return shortKernel{mk.mr, mk.fn, mk.direct}, true
	}
	for _, s := range mk.short {
		if s.rows == mh {
			return s, true
		}
	}
	return shortKernel{}, false
}

// balancedTiles reports whether a row block of mb rows goes in
// ceil(mb/mr) tiles of nearly equal height (rowTile) rather than full
// tiles and a last short one: when mr does not divide mb and mk has a
// short kernel for every height that gives. Each tile then streams the
// panel of B for as many rows as the others: 77 rows are seven tiles of
// 11 instead of six of 12 and one of 5, which, on the 8-row tail kernel,
// through the scratch tile, cost as much as a full tile.
func (mk microKernel) balancedTiles(mb int) bool {
	if !allowBalanced || mb%mk.mr == 0 || len(mk.short) == 0 {
		return false
	}
	tiles := (mb + mk.mr - 1) / mk.mr
	_, ok := mk.exactFor(mb / tiles)
	return ok
}

// rowTile returns the first row and height of tile t of a row block of
// mb rows: full tiles of mr and a last short one, or, balanced, tiles
// whose heights differ by at most one, the taller first.
func rowTile(mb, mr, t int, balanced bool) (start, rows int) {
	if !balanced {
		return t * mr, min(mr, mb-t*mr)
	}
	tiles := (mb + mr - 1) / mr
	h, extra := mb/tiles, mb%tiles
	return t*h + min(t, extra), h + btoi(t < extra)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rowsKernel is a microkernel fn that computes only the first rows rows
// of an mr-row panel.
type rowsKernel[F any] struct {
	rows int
	fn   F
}

// fewestRows returns the kernel among tails (by increasing rows) that
// computes the fewest rows, at least mh, or full when none does.
func fewestRows[F any](tails []rowsKernel[F], full F, mh int) F {
	for _, t := range tails {
		if mh <= t.rows {
			return t.fn
		}
	}
	return full
}

// Cache blocking of the packed GEMM: a kcBlock-deep slice of B (packed in
// nr-wide panels) is shared by all row blocks; a block of about mcBlock
// rows of A by kcBlock (384 KiB; see rowBlock) stays in L2 while the
// kernel walks the panels of B, each reused across the tiles of that
// block of A. kcBlock is deep so that the
// models' K (384 to 3072) takes one to three passes over C: on the AMD
// EPYC (Zen 4, 1 MiB L2) this ran 4-10% faster than 256 or 384 deep on
// gemm/1024, gemm/2048, ViT blocks and whole networks (interleaved runs),
// although a 32-wide panel then outgrows L1.
const (
	kcBlock = 1024
	mcBlock = 96 // a multiple of every mr
)

// workspace holds packing buffers between calls, so the hot loop does not
// allocate.
var workspace = sync.Pool{New: func() any { return new([]float32) }}

func grow(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}

// PackedB is the right-hand operand of a GEMM, op(B) of shape [k, n],
// packed once for the microkernel of one ISA path so that it can be reused
// by every call (weights are packed when they are uploaded, not per run).
type PackedB struct {
	N, K   int
	transB bool // packed from B [n, k] (true) or [k, n]
	isa    ISA
	mk     microKernel
	data   []float32 // kc blocks in order; in each, ceil(N/nr) panels of kb×nr
	// raw and ldb keep the unpacked operand for the Go path.
	raw []float32
	ldb int
	// bf16 marks an operand rounded to bf16 for the bf16 GEMM
	// (gemm_bf16.go), packed in data16 the same on every path.
	bf16   bool
	data16 []uint32
}

// Panels is the number of nr-wide column panels; PanelWidth is nr.
func (p *PackedB) Panels() int { return (p.N + p.PanelWidth() - 1) / p.PanelWidth() }

// PanelWidth is the number of columns of one panel (1 on the Go path).
func (p *PackedB) PanelWidth() int {
	if p.bf16 {
		return bf16NR
	}
	if p.mk.fn == nil {
		return 1
	}
	return p.mk.nr
}

// Bytes is the memory the packed copy holds.
func (p *PackedB) Bytes() int64 { return int64(len(p.data)+len(p.data16)) * 4 }

// PackBT packs Bᵀ for B [n, k] (row stride ldb): the layout of a Linear or
// conv weight [out, in]. On the Go path it keeps a reference to b.
func PackBT(n, k int, b []float32, ldb int) *PackedB { return packNew(n, k, b, ldb, true) }

// PackBN packs B [k, n] (row stride ldb) as the right-hand operand as it
// is (x @ B). On the Go path it keeps a transposed copy.
func PackBN(n, k int, b []float32, ldb int) *PackedB { return packNew(n, k, b, ldb, false) }

func packNew(n, k int, b []float32, ldb int, transB bool) *PackedB {
	p := &PackedB{}
	packInto(p, n, k, b, ldb, transB, nil)
	return p
}

// packedLen is the length of the packed data of an n×k operand for mk.
func packedLen(mk microKernel, n, k int) int { return (n + mk.nr - 1) / mk.nr * mk.nr * k }

// packInto fills p with op(B) packed for the active path, using buf for
// the packed data when it is large enough (else allocating).
func packInto(p *PackedB, n, k int, b []float32, ldb int, transB bool, buf []float32) {
	*p = PackedB{N: n, K: k, isa: active, transB: transB}
	mk, ok := microKernelFor(active)
	if !ok {
		if transB {
			p.raw, p.ldb = b, ldb
			return
		}
		t := buf
		if len(t) < n*k {
			t = make([]float32, n*k)
		}
		t = t[:n*k]
		for q := 0; q < k; q++ {
			for j, v := range b[q*ldb : q*ldb+n] {
				t[j*k+q] = v
			}
		}
		p.data, p.raw, p.ldb = t, t, k
		return
	}
	p.mk = mk
	size := packedLen(mk, n, k)
	if len(buf) >= size {
		p.data = buf[:size]
	} else {
		p.data = make([]float32, size)
	}
	panels := (n + mk.nr - 1) / mk.nr
	for pc := 0; pc < k; pc += kcBlock {
		kb := min(kcBlock, k-pc)
		packB(p.data[panels*mk.nr*pc:], b, ldb, transB, n, mk.nr, pc, kb)
	}
}

// sgemmTrivial checks that a, b and c hold Sgemm's operands (it panics
// like an out-of-range index otherwise) and does the calls with nothing to
// sum: m or n zero (no output), or k zero (C cleared). It reports whether
// the call is done.
func sgemmTrivial(m, n, k int, a []float32, lda int, b []float32, ldb int, transB bool, c []float32, ldc int) bool {
	if m == 0 || n == 0 {
		return true
	}
	_ = a[(m-1)*lda+k-1]
	_ = c[(m-1)*ldc+n-1]
	if transB {
		_ = b[(n-1)*ldb+k-1]
	} else {
		_ = b[(k-1)*ldb+n-1]
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
		return true
	}
	return false
}

// Sgemm computes C = A·op(B) for operands that change every call (the
// attention products QKᵀ and PV of one head): A [m, k] (row stride lda),
// op(B) = Bᵀ for B [n, k] when transB, else B [k, n] (row stride ldb), C
// [m, n] (row stride ldc). B is packed into a pooled buffer, so the call
// does not allocate in steady state. Single-threaded; callers split heads.
//
//	for i < m, j < n: C[i·ldc+j] = Σ_p A[i·lda+p] · op(B)[p, j]
func Sgemm(m, n, k int, a []float32, lda int, b []float32, ldb int, transB bool, c []float32, ldc int) {
	if sgemmTrivial(m, n, k, a, lda, b, ldb, transB, c, ldc) {
		return
	}
	mk, ok := microKernelFor(active)
	if !ok && transB {
		sgemmNTGo(m, n, k, a, lda, b, ldb, c, ldc, nil)
		return
	}
	wsp := workspace.Get().(*[]float32)
	defer workspace.Put(wsp)
	size := n * k
	if ok {
		size = packedLen(mk, n, k)
	}
	var p PackedB
	packInto(&p, n, k, b, ldb, transB, grow(wsp, size))
	SgemmPacked(m, a, lda, &p, c, ldc, nil, 0, n)
}

// SgemmPacked computes columns [j0, j1) of C = A·op(B) + bias, with A
// [m, k] (row stride lda) and op(B) packed in pb; j0 and j1 must be
// multiples of pb.PanelWidth() (or j1 = N). Workers split the columns by
// panels so each reads a disjoint part of B:
//
//	for i < m, j0 ≤ j < j1: C[i·ldc+j] = bias[j] + Σ_p A[i·lda+p]·op(B)[p, j]
func SgemmPacked(m int, a []float32, lda int, pb *PackedB, c []float32, ldc int, bias []float32, j0, j1 int) {
	SgemmPackedEpi(m, a, lda, pb, c, ldc, Epilogue{Bias: bias}, j0, j1)
}

// SgemmPackedEpi is SgemmPacked with a fused epilogue, applied to each
// tile of C while it is in cache:
//
//	C[i·ldc+j] = act(bias[j] + Σ_p A[i·lda+p]·op(B)[p, j]) + residual[i·ldr+j]
func SgemmPackedEpi(m int, a []float32, lda int, pb *PackedB, c []float32, ldc int, epi Epilogue, j0, j1 int) {
	if m == 0 || j1 <= j0 {
		return
	}
	if pb.bf16 {
		_ = a[(m-1)*lda+pb.K-1]
		sgemmPanelsBF16(m, matrixA{a, lda}, pb, c, ldc, epi, j0, j1)
		return
	}
	if pb.isa != active {
		panic("kern: PackedB packed for ISA " + string(pb.isa) + ", active is " + string(active))
	}
	_ = a[(m-1)*lda+pb.K-1]
	_ = c[(m-1)*ldc+j1-1]
	if epi.Bias != nil {
		_ = epi.Bias[j1-1]
	}
	if epi.Residual != nil {
		_ = epi.Residual[(m-1)*epi.LdR+j1-1]
	}
	if pb.mk.fn == nil {
		var bb []float32
		if epi.Bias != nil {
			bb = epi.Bias[j0:j1]
		}
		sgemmNTGo(m, j1-j0, pb.K, a, lda, pb.raw[j0*pb.ldb:], pb.ldb, c[j0:], ldc, bb)
		rest := Epilogue{Act: epi.Act, Residual: epi.Residual, LdR: epi.LdR}
		for i := 0; i < m; i++ {
			rest.apply(c[i*ldc+j0:i*ldc+j1], i, j0)
		}
		return
	}
	sgemmPanels(pb.mk, m, matrixA{a, lda}, pb, c, ldc, epi, j0, j1, nil)
}

// ASource supplies the left operand A [m, k] of a packed GEMM without it
// having to exist as a matrix: PackA writes rows [i0, i0+mb) and columns
// [pc, pc+kb) into panels of mr rows, pa[(ir/mr)·kb·mr + p·mr + r] =
// A[i0+ir+r, pc+p], zero for rows past mb. A convolution's windows pack
// straight from the image this way (implicit GEMM).
type ASource interface {
	PackA(pa []float32, i0, mb, mr, pc, kb int)
}

// matrixA is a row-major matrix as an ASource.
type matrixA struct {
	a   []float32
	lda int
}

func (m matrixA) PackA(pa []float32, i0, mb, mr, pc, kb int) {
	packA(pa, m.a, m.lda, i0, mb, mr, pc, kb)
}

// SgemmSource computes C = A·op(B) with the epilogue, A [m, pb.K] taken
// from src (see ASource), for all columns; single-threaded.
//
//	for i < m, j < N: C[i·ldc+j] = act(bias[j] + Σ_p A[i, p]·op(B)[p, j]) + residual[i·ldr+j]
func SgemmSource(m int, src ASource, pb *PackedB, c []float32, ldc int, epi Epilogue) {
	SgemmSourceCols(m, src, pb, c, ldc, epi, 0, pb.N)
}

// SgemmSourceCols is SgemmSource for columns [j0, j1) only (j0 a multiple
// of pb.PanelWidth()): A is packed whole for them, so workers that split
// the columns each pack it.
func SgemmSourceCols(m int, src ASource, pb *PackedB, c []float32, ldc int, epi Epilogue, j0, j1 int) {
	if m == 0 || j1 <= j0 {
		return
	}
	if pb.bf16 {
		_ = c[(m-1)*ldc+j1-1]
		sgemmPanelsBF16(m, src, pb, c, ldc, epi, j0, j1)
		return
	}
	if pb.isa != active {
		panic("kern: PackedB packed for ISA " + string(pb.isa) + ", active is " + string(active))
	}
	_ = c[(m-1)*ldc+j1-1]
	if pb.mk.fn != nil {
		sgemmPanels(pb.mk, m, src, pb, c, ldc, epi, j0, j1, nil)
		return
	}
	// The Go path multiplies a matrix: materialize A in 4-row panels.
	wsp := workspace.Get().(*[]float32)
	defer workspace.Put(wsp)
	k := pb.K
	buf := grow(wsp, 4*k+4*k)
	panel, rows := buf[:4*k], buf[4*k:]
	for i := 0; i < m; i += 4 {
		mb := min(4, m-i)
		src.PackA(panel, i, mb, 4, 0, k)
		for r := 0; r < mb; r++ {
			for p := 0; p < k; p++ {
				rows[r*k+p] = panel[p*4+r]
			}
		}
		SgemmPackedEpi(mb, rows, k, pb, c[i*ldc:], ldc, epi.Rows(i), j0, j1)
	}
}

// sgemmPanels is the blocked loop nest over packed panels. With pfA nil,
// the row tiles of each column panel prefetch the next panel of B
// (prefetchSlice); otherwise B is taken to be in cache already and the
// calls prefetch pfA instead, each its slice in call order, spread over
// all of them (prefetchSpread): the rows of A a caller will multiply next.
func sgemmPanels(mk microKernel, m int, src ASource, pb *PackedB, c []float32, ldc int, epi Epilogue, j0, j1 int, pfA []float32) {
	mr, nr, k := mk.mr, mk.nr, pb.K
	panels := pb.Panels()
	kc := min(k, kcBlock)
	wsp := workspace.Get().(*[]float32)
	defer workspace.Put(wsp)
	mc := rowBlock(m, mr)
	ws := grow(wsp, mc*kc+mr*nr)
	pa, tile := ws[:mc*kc], ws[mc*kc:]
	// The kernel adds the bias, and the residual when there is no
	// activation (beforeAct, for edge tiles that bypass it); afterAct
	// finishes with the activation and then the residual.
	beforeAct, afterAct := Epilogue{Bias: epi.Bias}, Epilogue{Act: epi.Act, Residual: epi.Residual, LdR: epi.LdR}
	if epi.Act == ActNone {
		beforeAct.Residual, beforeAct.LdR = epi.Residual, epi.LdR
	}
	// A row-major A is read in place by full tiles; only a last panel of
	// fewer than mr rows is packed (zero-padded). In balanced row blocks
	// (balancedTiles) every tile is read in place or packed by itself.
	ma, isMatrix := src.(matrixA)
	direct := isMatrix && mk.direct != nil && directA(mk, j1-j0, k)
	// kernel runs the microkernel on the tile of mh rows at row row of A:
	// one that computes exactly mh rows (exactFor) with A packed at ap or,
	// when direct, in place; else a tail kernel on the packed panel, which
	// writes mr rows (for the scratch tile). Each tile of a panel
	// prefetches its slice of the next panel (pf, pfStep) into L2.
	var pf *float32
	var pfStep int
	kernel := func(kb int, ap *float32, row, pc, mh int, bp, cp *float32, ldc, acc int, bias, res *float32, ldr int) {
		if ek, ok := mk.exactFor(mh); ok {
			if direct {
				ek.direct(kb, &ma.a[row*ma.lda+pc], ma.lda, bp, cp, ldc, acc, bias, res, ldr, pf, pfStep)
			} else {
				ek.fn(kb, ap, bp, cp, ldc, acc, bias, res, ldr, pf, pfStep)
			}
			return
		}
		fewestRows(mk.tails, mk.fn, mh)(kb, ap, bp, cp, ldc, acc, bias, res, ldr, pf, pfStep)
	}

	var spread prefetchSpread
	if pfA != nil {
		tiles := 0
		for ic := 0; ic < m; ic += mc {
			tiles += (min(mc, m-ic) + mr - 1) / mr
		}
		spread = newPrefetchSpread(pfA, tiles*((j1-j0+nr-1)/nr)*k)
	}
	for pc := 0; pc < k; pc += kcBlock {
		kb := min(kcBlock, k-pc)
		block := pb.data[panels*nr*pc:]
		acc := 0
		if pc > 0 {
			acc = 1
		}
		last := pc+kcBlock >= k
		for ic := 0; ic < m; ic += mc {
			mb := min(mc, m-ic)
			tiles := (mb + mr - 1) / mr
			// Balanced tiles pack each tile by itself, which only a
			// row-major A does without a slower path for short panels.
			balanced := isMatrix && mk.balancedTiles(mb)
			switch {
			case balanced && !direct:
				for t := 0; t < tiles; t++ {
					r0, mh := rowTile(mb, mr, t, true)
					if mh < mr {
						packTail(pa[t*mr*kb:], ma.a, ma.lda, ic+r0, mh, mr, pc, kb)
					} else {
						packA(pa[t*mr*kb:], ma.a, ma.lda, ic+r0, mr, mr, pc, kb)
					}
				}
			case balanced:
				// Every tile reads A in place.
			case !direct:
				src.PackA(pa, ic, mb, mr, pc, kb)
			default:
				if full := mb / mr * mr; full < mb {
					packTail(pa[full*kb:], ma.a, ma.lda, ic+full, mb-full, mr, pc, kb)
				}
			}
			actFrom := j0 // columns [actFrom, jr) of this row block await the activation
			for jr := j0; jr < j1; jr += nr {
				bp := &block[jr*kb]
				nw := min(nr, j1-jr)
				for t := 0; t < tiles; t++ {
					r0, mh := rowTile(mb, mr, t, balanced)
					pf, pfStep = nil, 0
					if pfA != nil {
						pf, pfStep = spread.next(kb)
					} else if jr+nr < j1 {
						pf, pfStep = prefetchSlice(block[(jr+nr)*kb:(jr+2*nr)*kb], nr, kb, t, tiles)
					}
					ap := &pa[t*mr*kb]
					cp := (ic+r0)*ldc + jr
					// A tile's kernel writes its rows of C in place, unless
					// it is a tail kernel (which writes mr rows) or the
					// panel is narrower than nr.
					if _, exact := mk.exactFor(mh); exact && nw == nr {
						if !last || !epi.active() {
							kernel(kb, ap, ic+r0, pc, mh, bp, &c[cp], ldc, acc, nil, nil, 0)
							continue
						}
						// The kernel adds the bias, and the residual
						// when no activation comes between them.
						var bias, res *float32
						if epi.Bias != nil {
							bias = &epi.Bias[jr]
						}
						if epi.Residual != nil && epi.Act == ActNone {
							res = &epi.Residual[(ic+r0)*epi.LdR+jr]
						}
						kernel(kb, ap, ic+r0, pc, mh, bp, &c[cp], ldc, acc, bias, res, epi.LdR)
						continue
					}
					// Edge tile: run the kernel on the scratch tile and
					// copy the valid part in and out, finished as far as
					// a full tile is.
					if acc != 0 {
						for r := 0; r < mh; r++ {
							copy(tile[r*nr:r*nr+nw], c[cp+r*ldc:cp+r*ldc+nw])
						}
					}
					kernel(kb, ap, ic+r0, pc, mh, bp, &tile[0], nr, acc, nil, nil, 0)
					for r := 0; r < mh; r++ {
						row := c[cp+r*ldc : cp+r*ldc+nw]
						copy(row, tile[r*nr:r*nr+nw])
						if last {
							beforeAct.apply(row, ic+r0+r, jr)
						}
					}
				}
				// The activation (and the residual after it) runs on
				// actCols columns of the row block at a time, while they
				// are still in L2: one call per row and not per tile row.
				if end := jr + nw; last && epi.Act != ActNone && (end-actFrom >= actCols || end == j1) {
					afterAct.applyRows(c[ic*ldc:], ldc, ic, mb, actFrom, end)
					actFrom = end
				}
			}
		}
	}
}

// actCols is how many columns of a row block the activation waits for:
// a block of about 100 rows of 256 columns (about 100 KiB) stays in L2,
// and each call covers 16 vectors, which amortizes its setup.
const actCols = 256

// rowBlock is the height of the row blocks of A for m rows: as many blocks
// as the nearest whole number of mcBlock-row blocks, of equal height
// rounded up to mr. Each block of A streams the whole of B once, so 197
// tokens go in two blocks of 108 and 89 rows rather than 96, 96 and a
// last block of 5 that would stream B again for 5 rows.
func rowBlock(m, mr int) int { return rowBlockOf(m, mr, mcBlock) }

// rowBlockOf is rowBlock for blocks of about block rows.
func rowBlockOf(m, mr, block int) int {
	blocks := max(1, (m+block/2)/block)
	rows := (m + blocks - 1) / blocks
	return (rows + mr - 1) / mr * mr
}

// directA reports whether microkernel mk should read a row-major A in
// place rather than pack it, for n columns of depth k. With AVX-512,
// packing costs about one pass over A and pays for itself over many
// panels of B; with few panels (attention's P·V, narrow projections) it
// does not, so A is read in place up to directMaxN columns. A deep K is
// left packed there: twelve rows read in place then compete for a few L1
// sets when the row stride is a multiple of a few KiB. The AVX2 kernel's
// six rows read in place (mk.directAll) ran, on an AVX2-only AMD EPYC
// (Zen 3), interleaved: 1.07-1.5× faster than packed on products deeper
// than kcBlock (alone; 1.05-1.14× as the network's nodes: ViT's and DETR's
// second MLP layers), and on the wider ones 1.0-1.22× alone, 0.95-1.10×
// (mean 1.02×, within the nodes' ±4% noise) as nodes.
func directA(mk microKernel, n, k int) bool {
	return allowDirect && (mk.directAll || n <= directMaxN && k <= kcBlock)
}

const directMaxN = 256

// allowDirect lets the tests run the packed path on shapes that would be
// read in place.
var allowDirect = true

// allowBalanced lets the benchmarks run the unbalanced row tiles (full
// tiles and a tail) for comparison.
var allowBalanced = true

// packA copies rows [ic, ic+mb) and columns [pc, pc+kb) of A into panels
// of mr rows: pa[(ir/mr)·kb·mr + p·mr + r] = A[ic+ir+r, pc+p], zero past mb.
func packA(pa, a []float32, lda, ic, mb, mr, pc, kb int) {
	for ir := 0; ir < mb; ir += mr {
		panel := pa[ir*kb : ir*kb+mr*kb]
		if ir+mr <= mb && mr <= 16 {
			// A full panel: its mr rows of A transposed in.
			var offs [16]int
			for r := range mr {
				offs[r] = (ic+ir+r)*lda + pc
			}
			packRows(a, offs[:mr], kb, panel)
			continue
		}
		for r := 0; r < mr; r++ {
			if ir+r >= mb {
				for p := 0; p < kb; p++ {
					panel[p*mr+r] = 0
				}
				continue
			}
			src := a[(ic+ir+r)*lda+pc : (ic+ir+r)*lda+pc+kb]
			for p, v := range src {
				panel[p*mr+r] = v
			}
		}
	}
}

// packTail packs rows [ic, ic+mb) of A, fewer than mr, into one panel as
// packA does, but the panel's rows past mb repeat row ic+mb-1 rather than
// being zero: the panel feeds an edge tile, whose rows past mb are
// discarded, and whole rows go through the SIMD transpose.
//
//	pa[p·mr + r] = A[ic+min(r, mb-1), pc+p]
func packTail(pa, a []float32, lda, ic, mb, mr, pc, kb int) {
	if mr > 16 {
		packA(pa, a, lda, ic, mb, mr, pc, kb)
		return
	}
	var offs [16]int
	for r := range mr {
		offs[r] = (ic+min(r, mb-1))*lda + pc
	}
	packRows(a, offs[:mr], kb, pa[:mr*kb])
}

// packB copies columns of op(B) into panels of nr: pb[(j/nr)·kb·nr + p·nr +
// (j mod nr)] = op(B)[pc+p, j], zero past n. op(B) = Bᵀ when bTrans.
func packB(pb, b []float32, ldb int, bTrans bool, n, nr, pc, kb int) {
	if !bTrans {
		// Row by row (four rows together on the SIMD paths), so that each
		// row of B (an image's channel, with a stride of the whole plane
		// in a pointwise convolution) is read as one sequential run rather
		// than one line per panel: 1.04-1.24× on ResNet's and VQGAN's 1×1
		// convolutions from a cold cache, one thread, AVX2 (the packed
		// layout is the same).
		packRowsToPanels(pb, b[pc*ldb:], ldb, n, nr, kb)
		return
	}
	for jr := 0; jr < n; jr += nr {
		panel := pb[jr*kb : jr*kb+nr*kb]
		nw := min(nr, n-jr)
		if nw == nr && nr <= 32 {
			// A full panel: its nr rows of B transposed in.
			var offs [32]int
			for j := range nr {
				offs[j] = (jr+j)*ldb + pc
			}
			packRows(b, offs[:nr], kb, panel)
			continue
		}
		if nr <= 32 {
			// A last, partial panel: its nw rows copied out one after
			// another, with one row of zeros for the missing ones, and
			// transposed in as a full panel. Element by element, with
			// stride nr, a panel of 16 rows over 2048 steps took longer
			// than the product it fed (50 rows by 16 columns, the
			// attention pool's scores: 183 µs with it, 68 µs this way).
			wsp := workspace.Get().(*[]float32)
			rows := grow(wsp, (nw+1)*kb)
			clear(rows[nw*kb:])
			var offs [32]int
			for j := range nr {
				offs[j] = min(j, nw) * kb
				if j < nw {
					copy(rows[j*kb:(j+1)*kb], b[(jr+j)*ldb+pc:(jr+j)*ldb+pc+kb])
				}
			}
			packRows(rows, offs[:nr], kb, panel)
			workspace.Put(wsp)
			continue
		}
		for j := 0; j < nr; j++ {
			if j >= nw {
				for p := 0; p < kb; p++ {
					panel[p*nr+j] = 0
				}
				continue
			}
			src := b[(jr+j)*ldb+pc : (jr+j)*ldb+pc+kb]
			for p, v := range src {
				panel[p*nr+j] = v
			}
		}
	}
}

// packRowsToPanels deals kb rows of B (ldb apart) out to its column panels
// of nr, the last one zero-padded past column n:
//
//	for p < kb, j < n: pb[(j/nr)·nr·kb + p·nr + j mod nr] = b[p·ldb + j]
//
// On the SIMD paths rowPanels takes the full panels of four rows at a time,
// so each panel gets four rows' values in one run of stores; the rest (the
// last partial panel, the last rows of a kb that is not a multiple of
// four, and everything on the Go path) goes row by row. From memory, one
// thread, 256 rows of 784 columns of a 56×56 image (a 2-vCPU Xeon): 179
// µs row by row with copy, 102-109 µs through rowPanels: near the 9.3 GB/s
// at which one core of it copies a contiguous 0.8 MB from memory (86 µs).
// Prefetching the next four rows in the kernel ran alike, so it does not.
func packRowsToPanels(pb, b []float32, ldb, n, nr, kb int) {
	full, p := n/nr, 0
	for ; full > 0 && p+4 <= kb; p += 4 {
		_ = b[(p+3)*ldb+full*nr-1]
		_ = pb[(full-1)*nr*kb+(p+4)*nr-1]
		if !rowPanels(nr, full, &b[p*ldb], ldb, &pb[p*nr], nr*kb) {
			break
		}
	}
	for q := 0; q < kb; q++ {
		j0 := 0
		if q < p {
			j0 = full * nr // rowPanels packed this row's full panels
		}
		row := b[q*ldb : q*ldb+n]
		for jr := j0; jr < n; jr += nr {
			dst := pb[jr*kb+q*nr : jr*kb+q*nr+nr]
			clear(dst[copy(dst, row[jr:]):])
		}
	}
}

// Current reports whether p was packed for the ISA path now active (a
// bf16 operand is packed the same for every path).
func (p *PackedB) Current() bool { return p.bf16 || p.isa == active }

// BF16 reports whether p was rounded to bf16 (PackBTBF16, PackBNBF16).
func (p *PackedB) BF16() bool { return p.bf16 }

// TransB reports whether p was packed from B [n, k] (PackBT).
func (p *PackedB) TransB() bool { return p.transB }

// RowTile is the number of rows of A the microkernel computes at once (a
// good unit for splitting rows between workers).
func (p *PackedB) RowTile() int {
	if p.bf16 {
		return bf16Rows()
	}
	if p.mk.fn == nil {
		return 4
	}
	return p.mk.mr
}

// EvenTiles reports whether m rows of A run through p's microkernel in
// tiles of nearly equal height only: every row block of m rows (rowBlock)
// is whole tiles or balanced (balancedTiles), so no tile is a tail kernel
// that costs about as much as a full one. A worker's share of the rows is
// best split this way.
func (p *PackedB) EvenTiles(m int) bool {
	if p.bf16 || p.mk.fn == nil || m < 1 {
		return false
	}
	mr := p.mk.mr
	mc := rowBlock(m, mr)
	for ic := 0; ic < m; ic += mc {
		if mb := min(mc, m-ic); mb%mr != 0 && !p.mk.balancedTiles(mb) {
			return false
		}
	}
	return true
}

// SgemmRowGroups computes C = A·B for A [m, k] (row stride lda) and B
// [k, n] (row stride ldb, not transposed), packing B once into scratch and
// then sweeping groups of group rows (a multiple of the row tile) across
// all n columns, calling done(i0, i1) after the rows [i0, i1) of C are
// complete:
//
//	for i < m, j < n: C[i·ldc+j] = Σ_p A[i·lda+p]·B[p·ldb+j]
//
// Each group writes its rows' runs of C in order, so a C whose rows are
// far apart (the channels of an NCHW image) is written as a few sequential
// streams, which the hardware prefetchers follow, rather than one short
// run per row per tile; done can finish those rows while they are in cache.
func SgemmRowGroups(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc, group int, done func(i0, i1 int)) {
	if sgemmTrivial(m, n, k, a, lda, b, ldb, false, c, ldc) {
		if done != nil {
			done(0, m)
		}
		return
	}
	mk, ok := microKernelFor(active)
	size := n * k
	if ok {
		size = packedLen(mk, n, k)
	}
	wsp := workspace.Get().(*[]float32)
	defer workspace.Put(wsp)
	var p PackedB
	packInto(&p, n, k, b, ldb, false, grow(wsp, size))
	for i := 0; i < m; i += group {
		i1 := min(i+group, m)
		if p.mk.fn == nil {
			SgemmPackedEpi(i1-i, a[i*lda:], lda, &p, c[i*ldc:], ldc, Epilogue{}, 0, n)
		} else {
			// B, packed just now, is in cache; the next group's rows of
			// A (a weight, from memory) are prefetched while this group
			// runs, when they lie in one run.
			var next []float32
			if lda == k && i1 < m {
				next = a[i1*lda : min(i1+group, m)*lda]
			}
			_ = c[(i1-i-1)*ldc+n-1]
			sgemmPanels(p.mk, i1-i, matrixA{a[i*lda:], lda}, &p, c[i*ldc:], ldc, Epilogue{}, 0, n, next)
		}
		if done != nil {
			done(i, i1)
		}
	}
}

// prefetchSlice returns where tile t of tiles that share a column panel
// starts prefetching the next panel (next, kb steps of nr values) and by
// how many bytes it moves on per step: each tile's kb steps cover its
// share of the panel, in slices that together cover all of it, so the
// panel is fetched at the pace of the whole column of tiles rather than
// during its first tile. The step is a multiple of 8 bytes; with one tile
// it is the panel's own, nr values.
func prefetchSlice(next []float32, nr, kb, t, tiles int) (*float32, int) {
	step := (4*nr + tiles - 1) / tiles
	step = (step + 7) / 8 * 8
	at := t * kb * step / 4
	if at >= len(next) {
		return nil, 0
	}
	return &next[at], step
}

// prefetchSpread deals out the prefetch of one region over a run of
// microkernel calls of known total steps: each call gets the region's next
// slice, at a step (bytes per kernel step, a multiple of 8, at least 8)
// that reaches the region's last line by the last step. A step of at most
// 64 bytes leaves no line out (the row groups' regions, 24 rows of A over
// at least two tiles and a panel, take at most 48).
type prefetchSpread struct {
	region []float32
	step   int // bytes per kernel step
	at     int // bytes of the region dealt out so far
}

func newPrefetchSpread(region []float32, steps int) prefetchSpread {
	// steps-1 gaps from the first step to the last reach the start of the
	// region's last line.
	last := (4*len(region) - 1) / 64 * 64
	gaps := max(steps-1, 1)
	step := (last + gaps - 1) / gaps
	return prefetchSpread{region: region, step: max(8, (step+7)/8*8)}
}

// next returns the start and step of the next call's slice, for a call of
// kb steps, or nil once the region is covered.
func (s *prefetchSpread) next(kb int) (*float32, int) {
	if s.at/4 >= len(s.region) {
		return nil, 0
	}
	pf := &s.region[s.at/4]
	s.at += kb * s.step
	return pf, s.step
}
