package kern

// TapPairsA is the im2col matrix of a convolution's windows, tap-major,
// for the bf16 GEMM: row r = b·OH·OW + oy·OW + ox, column
// (ky·KW + kx)·Cp + c holds
//
//	bf16(x[b, c, oy·SH − PH + ky·DH, ox·SW − PW + kx·DW])   (zero in the padding, and for c = C)
//
// where Cp is C rounded up to even (TapPairsChans) — the layout of a conv
// weight reordered to [O, KH, KW, Cp] (TapMajor). The images are held once
// as bf16 pairs, channel-last and zero-padded (img [B, H+2·PH, W+2·PW,
// Cp/2], pair q of a pixel = channels 2q and 2q+1, the lower in the low
// half; an odd C's last pair holds a zero channel), so a window's pairs at
// one tap are one contiguous run of Cp/2 values, and with DW = 1 those of
// a whole kernel row are: PackPairs copies runs where packing the NCHW
// windows (WindowsA) would gather, round and interleave every value.
type TapPairsA struct {
	g      UnfoldGeom
	cp     int // channels rounded up to even
	batch  int
	hp, wp int       // padded height and width
	img    []uint32  // [batch, hp, wp, cp/2]
	runs   []pairRun // a row's pairs as runs contiguous in img, in column order
	row0   int
}

// pairRun is pairs [q, q+n) of a window's row, found at offset off from
// the pair image's first pair of the window (tap ky = kx = 0).
type pairRun struct{ q, n, off int }

// TapPairsChans is the channel count C rounded up to even: the channels
// per tap of TapPairsA's columns and TapMajor's weight.
func TapPairsChans(c int) int { return c + c%2 }

// TapPairsLen is the number of pairs the padded images of batch images
// under g take (the length NewTapPairsA wants).
func TapPairsLen(g UnfoldGeom, batch int) int {
	return batch * (g.H + 2*g.PH) * (g.W + 2*g.PW) * TapPairsChans(g.C) / 2
}

// TapPairsK is the columns of TapPairsA under g: KH·KW·Cp.
func TapPairsK(g UnfoldGeom) int { return g.KH * g.KW * TapPairsChans(g.C) }

// NewTapPairsA describes the windows under g of batch images held as
// pairs in img (TapPairsLen long), which FillRows writes.
func NewTapPairsA(g UnfoldGeom, batch int, img []uint32) *TapPairsA {
	t := &TapPairsA{g: g, cp: TapPairsChans(g.C), batch: batch, hp: g.H + 2*g.PH, wp: g.W + 2*g.PW,
		img: img[:TapPairsLen(g, batch)]}
	half := t.cp / 2
	for ky := range g.KH {
		row := ky * g.DH * t.wp * half
		if g.DW == 1 {
			// The kernel row's taps are neighbouring pixels.
			t.runs = append(t.runs, pairRun{q: ky * g.KW * half, n: g.KW * half, off: row})
			continue
		}
		for kx := range g.KW {
			t.runs = append(t.runs, pairRun{q: (ky*g.KW + kx) * half, n: half, off: row + kx*g.DW*half})
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
//	img[((b·hp + py)·wp + px)·Cp/2 + q] = bf16(x[b, 2q, y, xx]) | bf16(x[b, 2q+1, y, xx])<<16
//
// with y = py − PH, xx = px − PW, rounded to nearest even (RoundBF16),
// and channel C zero when C is odd. buf is scratch of at least W·Cp
// values. Rows may be filled by different workers in any order.
func (t *TapPairsA) FillRows(x []float32, r0, r1 int, buf []float32) {
	g := t.g
	half, plane := t.cp/2, g.H*g.W
	tok := buf[:g.W*t.cp]
	if t.cp != g.C {
		for w := range g.W {
			tok[w*t.cp+g.C] = 0 // the zero channel; Transpose writes the others
		}
	}
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
		// The image row [C, W] (channel stride H·W) as tokens [W, Cp],
		// then rounded in pairs of neighbouring channels.
		Transpose(g.C, g.W, x[b*g.C*plane+y*g.W:], plane, tok, t.cp)
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
// tap (ky = kx = 0); the runs are found from there.
func (t *TapPairsA) origin(r int) int {
	g := t.g
	per := g.OH * g.OW
	b, l := r/per, r%per
	return ((b*t.hp+(l/g.OW)*g.SH)*t.wp + (l%g.OW)*g.SW) * t.cp / 2
}

// PackPairs writes pairs [pc/2, (pc+kb)/2) of rows [i0, i0+mb) (pc and kb
// even):
//
//	for r < mb, p < kb/2: dst[r·lda + p] = pair pc/2 + p of row i0 + r
//
// where pair q of a row is columns 2q and 2q+1 (one tap, neighbouring
// channels), one copy per run of the row that the range covers.
func (t *TapPairsA) PackPairs(dst []uint32, lda, i0, mb, pc, kb int) {
	q0, q1 := pc/2, (pc+kb)/2
	first := 0
	for first < len(t.runs)-1 && t.runs[first].q+t.runs[first].n <= q0 {
		first++
	}
	for r := range mb {
		o := t.origin(t.row0 + i0 + r)
		d := dst[r*lda : r*lda+q1-q0]
		for _, run := range t.runs[first:] {
			lo, hi := max(run.q, q0), min(run.q+run.n, q1)
			if lo >= hi {
				break
			}
			off := o + run.off + lo - run.q
			copy(d[lo-q0:hi-q0], t.img[off:off+hi-lo])
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
				q := (pc + p) / 2
				run := t.runs[0]
				for _, rn := range t.runs {
					if q >= rn.q && q < rn.q+rn.n {
						run = rn
					}
				}
				v := t.img[o+run.off+q-run.q]
				panel[p*mr+r] = BF16ToFloat32(uint16(v >> (16 * ((pc + p) % 2))))
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
// [O, KH, KW, Cp] with Cp = TapPairsChans(C), the column order of
// TapPairsA:
//
//	out[((o·KH + ky)·KW + kx)·Cp + c] = w[((o·C + c)·KH + ky)·KW + kx]   (zero for c = C < Cp)
func TapMajor(o, c, kh, kw int, w []float32) []float32 {
	cp := TapPairsChans(c)
	out := make([]float32, o*cp*kh*kw)
	taps := kh * kw
	for i := range o {
		for ch := range c {
			for t := range taps {
				out[(i*taps+t)*cp+ch] = w[(i*c+ch)*taps+t]
			}
		}
	}
	return out
}
