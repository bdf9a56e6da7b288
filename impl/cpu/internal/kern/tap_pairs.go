package kern

// TapPairsA is the im2col matrix of a convolution's windows, tap-major,
// for the bf16 GEMM: row r = b·OH·OW + oy·OW + ox, column
// (ky·KW + kx)·C + c holds
//
//	bf16(x[b, c, oy·SH − PH + ky·DH, ox·SW − PW + kx·DW])   (zero in the padding)
//
// — the layout of a conv weight reordered to [O, KH, KW, C] (TapMajor).
// The images are held once as bf16 pairs, channel-last and zero-padded
// (img [B, H+2·PH, W+2·PW, C/2], pair q of a pixel = channels 2q and
// 2q+1, the lower in the low half), so a window's pairs at one tap are one
// contiguous run of C/2 values: PackPairs copies runs where packing the
// NCHW windows (WindowsA) would gather, round and interleave every value.
// C must be even.
type TapPairsA struct {
	g      UnfoldGeom
	batch  int
	hp, wp int      // padded height and width
	img    []uint32 // [batch, hp, wp, C/2]
	taps   []int    // per tap ky·KW + kx: (ky·DH·wp + kx·DW)·C/2, its pairs' offset from the window's first
	row0   int
}

// TapPairsLen is the number of pairs the padded images of batch images
// under g take (the length NewTapPairsA wants).
func TapPairsLen(g UnfoldGeom, batch int) int {
	return batch * (g.H + 2*g.PH) * (g.W + 2*g.PW) * g.C / 2
}

// NewTapPairsA describes the windows under g of batch images held as
// pairs in img (TapPairsLen long), which FillRows writes. g.C must be
// even.
func NewTapPairsA(g UnfoldGeom, batch int, img []uint32) *TapPairsA {
	if g.C%2 != 0 {
		panic("kern: TapPairsA needs an even channel count")
	}
	t := &TapPairsA{g: g, batch: batch, hp: g.H + 2*g.PH, wp: g.W + 2*g.PW, img: img[:TapPairsLen(g, batch)]}
	t.taps = make([]int, g.KH*g.KW)
	for ky := range g.KH {
		for kx := range g.KW {
			t.taps[ky*g.KW+kx] = (ky*g.DH*t.wp + kx*g.DW) * g.C / 2
		}
	}
	return t
}

// PaddedRows is the number of padded image rows, batch·(H+2·PH): the rows
// FillRows takes.
func (t *TapPairsA) PaddedRows() int { return t.batch * t.hp }

// FillRows writes padded rows [r0, r1) (row r = b·hp + py) of the pair
// images from x [B, C, H, W]: zero for a padding row or column, else
//
//	img[((b·hp + py)·wp + px)·C/2 + q] = bf16(x[b, 2q, y, xx]) | bf16(x[b, 2q+1, y, xx])<<16
//
// with y = py − PH, xx = px − PW, rounded to nearest even (RoundBF16).
// buf is scratch of at least W·C values. Rows may be filled by different
// workers in any order.
func (t *TapPairsA) FillRows(x []float32, r0, r1 int, buf []float32) {
	g := t.g
	half, plane := g.C/2, g.H*g.W
	tok := buf[:g.W*g.C]
	for r := r0; r < r1; r++ {
		b, py := r/t.hp, r%t.hp
		row := t.img[r*t.wp*half : (r+1)*t.wp*half]
		y := py - g.PH
		if y < 0 || y >= g.H {
			clear(row)
			continue
		}
		clear(row[:g.PW*half])
		clear(row[(g.PW+g.W)*half:])
		// The image row [C, W] (channel stride H·W) as tokens [W, C],
		// then rounded in pairs of neighbouring channels.
		Transpose(g.C, g.W, x[b*g.C*plane+y*g.W:], plane, tok, g.C)
		packPairs(row[g.PW*half:(g.PW+g.W)*half], tok)
	}
}

// From returns the same windows starting at row row0 (for a worker's
// share of the rows).
func (t *TapPairsA) From(row0 int) *TapPairsA {
	v := *t
	v.row0 = row0
	return &v
}

// origin returns the offset in img of the first pair of window r's first
// tap (ky = kx = 0); tap i's pairs start taps[i] further.
func (t *TapPairsA) origin(r int) int {
	g := t.g
	per := g.OH * g.OW
	b, l := r/per, r%per
	return ((b*t.hp+(l/g.OW)*g.SH)*t.wp + (l%g.OW)*g.SW) * g.C / 2
}

// PackPairs writes pairs [pc/2, (pc+kb)/2) of rows [i0, i0+mb) (pc and kb
// even):
//
//	for r < mb, p < kb/2: dst[r·lda + p] = pair pc/2 + p of row i0 + r
//
// where pair q of a row is columns 2q and 2q+1 (one tap, neighbouring
// channels).
func (t *TapPairsA) PackPairs(dst []uint32, lda, i0, mb, pc, kb int) {
	half := t.g.C / 2
	q0, q1 := pc/2, (pc+kb)/2
	tap0, c0 := q0/half, q0%half
	for r := range mb {
		o := t.origin(t.row0 + i0 + r)
		d := dst[r*lda : r*lda+q1-q0]
		for q, tap, c := q0, tap0, c0; q < q1; q, tap, c = q+half-c, tap+1, 0 {
			n := min(half-c, q1-q)
			off := o + t.taps[tap] + c
			copy(d[q-q0:q-q0+n], t.img[off:off+n])
		}
	}
}

// PackA implements ASource: the same values widened back to float32
// (exactly), in panels of mr rows as packA lays them out
// (pa[ir·kb + p·mr + r]), rows past mb zero. The bf16 GEMM takes pairs
// (PackPairs); this serves any other product of the matrix.
func (t *TapPairsA) PackA(pa []float32, i0, mb, mr, pc, kb int) {
	for ir := 0; ir < mb; ir += mr {
		panel := pa[ir*kb : ir*kb+mr*kb]
		for r := range mr {
			if ir+r >= mb {
				for p := range kb {
					panel[p*mr+r] = 0
				}
				continue
			}
			o := t.origin(t.row0 + i0 + ir + r)
			for p := range kb {
				col := pc + p
				tap, ch := col/t.g.C, col%t.g.C
				v := t.img[o+t.taps[tap]+ch/2]
				panel[p*mr+r] = BF16ToFloat32(uint16(v >> (16 * (ch % 2))))
			}
		}
	}
}

// PairSource is an ASource that also writes its rows as bf16 pairs
// directly (TapPairsA.PackPairs), which the bf16 GEMM then takes in place
// of packing and rounding float32 panels.
type PairSource interface {
	ASource
	PackPairs(dst []uint32, lda, i0, mb, pc, kb int)
}

// TapMajor returns the conv weight w [O, C, KH, KW] reordered to
// [O, KH, KW, C], the column order of TapPairsA:
//
//	out[((o·KH + ky)·KW + kx)·C + c] = w[((o·C + c)·KH + ky)·KW + kx]
func TapMajor(o, c, kh, kw int, w []float32) []float32 {
	out := make([]float32, o*c*kh*kw)
	taps := kh * kw
	for i := range o {
		for ch := range c {
			for t := range taps {
				out[(i*taps+t)*c+ch] = w[(i*c+ch)*taps+t]
			}
		}
	}
	return out
}
