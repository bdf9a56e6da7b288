//go:build !purego

package kern

import (
	"sync"

	"golang.org/x/sys/cpu"
)

// amxConfig is the tile configuration of the AMX kernels (LDTILECFG's
// 64-byte operand): palette 1, and each of the eight tiles 16 rows of 64
// bytes (16 floats, or 16 bf16 pairs).
var amxConfig = func() (cfg [64]byte) {
	cfg[0] = 1 // palette
	for t := range 8 {
		cfg[16+2*t] = 64 // bytes per row, little-endian uint16
		cfg[48+t] = 16   // rows
	}
	return cfg
}()

var amxOnce struct {
	sync.Once
	ok bool
}

// HasAMX reports whether the AMX-BF16 kernels can run: the CPU has AMX
// tiles and AMX-BF16, the OS saves tile state (XCR0 bits 17 and 18, which
// x/sys/cpu checks), and it has granted this process the use of tile data
// (requestAMX, asked once).
func HasAMX() bool {
	amxOnce.Do(func() {
		amxOnce.ok = cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && requestAMX() == nil
	})
	return amxOnce.ok
}

// gemmBF16AMXTile is the bf16TileFn of the AMX path (the driver's tiles
// of the last, narrower panel, through its scratch tile): any rows, kp a
// multiple of 16 pairs (the panel and A zero past the real depth), by
// amxRows; the bias starts the sums unless c's old value does, then it and
// the residual are added row by row.
func gemmBF16AMXTile(rows, kp int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate int, bias, res []float32, ldr int, _ []uint32) {
	if kp%16 != 0 || kp == 0 {
		panic("kern: AMX tile of this shape")
	}
	amxRows(kp/16, rows, a, lda, b, c, ldc, accumulate != 0, bias)
	for r := range rows {
		row := c[r*ldc : r*ldc+bf16NR]
		if accumulate != 0 && bias != nil {
			Add(bf16NR, row, bias[:bf16NR], row)
		}
		if res != nil {
			Add(bf16NR, row, res[r*ldr:r*ldr+bf16NR], row)
		}
	}
}

// amxRowsConfigs[R] is the tile configuration of gemmBF16AMXRows for row
// tiles of R rows (1 to 32): every tile 64 bytes a row; B0 and B1 16 rows
// (pairs); above 16 rows, A0, C00 and C01 16 rows and A1, C10 and C11 the
// other R − 16; at most 16, A0, C00 and C01 R rows (A1, C10 and C11 16,
// zeroed but not used).
var amxRowsConfigs = func() (cfg [bf16AMXRows + 1][64]byte) {
	for r := 1; r <= bf16AMXRows; r++ {
		c := &cfg[r]
		c[0] = 1
		for t := range 8 {
			c[16+2*t] = 64
			c[48+t] = 16
		}
		first, second := byte(min(r, 16)), byte(16)
		if r > 16 {
			second = byte(r - 16)
		}
		for _, t := range []int{tmmA0, tmmC00, tmmC01} {
			c[48+t] = first
		}
		for _, t := range []int{tmmA1, tmmC10, tmmC11} {
			c[48+t] = second
		}
	}
	return cfg
}()

// The AMX kernels' tile registers (as in asm/gen_amx.go).
const (
	tmmC00, tmmC01, tmmC10, tmmC11 = 0, 1, 2, 3
	tmmA0, tmmA1                   = 4, 5
)

// amxRows is the AMX kernel of the bf16 GEMM's full panels: for r < rows
// (any number) and j < bf16NR,
//
//	c[r·ldc+j] = (c[r·ldc+j] if accumulate, else bias[j] if bias != nil, else 0) + Σ_{p<16·kt} dot(a[r·lda+p], b[p·bf16NR+j])
//
// summed by TDPBF16PS into c in place, one B panel (16·kt pairs deep)
// against the rows of A in tiles of 32 and a last one of the rest. Only
// the rows and pairs named are read.
func amxRows(kt, rows int, a []uint32, lda int, b []uint32, c []float32, ldc int, accumulate bool, bias []float32) {
	if kt < 1 || rows < 1 {
		panic("kern: AMX rows of this shape")
	}
	_ = a[(rows-1)*lda+16*kt-1]
	_ = b[16*kt*bf16NR-1]
	_ = c[(rows-1)*ldc+bf16NR-1]
	acc := 0
	if accumulate {
		acc = 1
	}
	var pb *float32
	if bias != nil && !accumulate {
		_ = bias[bf16NR-1]
		pb = &bias[0]
	}
	if full := rows / bf16AMXRows; full > 0 {
		gemmBF16AMXRows(kt, &a[0], lda, &b[0], &c[0], ldc, acc, full, 0, pb, &amxRowsConfigs[bf16AMXRows][0])
	}
	if r := rows % bf16AMXRows; r > 0 {
		at := rows - r
		half := 0
		if r <= 16 {
			half = 1
		}
		gemmBF16AMXRows(kt, &a[at*lda], lda, &b[0], &c[at*ldc], ldc, acc, 1, half, pb, &amxRowsConfigs[r][0])
	}
}

// AMXPeakLanes and AMXPeakChains are the shape of AMXPeakBF16: six
// independent accumulator tiles of 256 float32 lanes, each TDPBF16PS
// adding 16 pairs of products (32 multiply-adds) to every lane.
const (
	AMXPeakLanes  = 256
	AMXPeakChains = 6
	AMXPeakPairs  = 16
)

// AMXPeakBF16 runs the AMX-BF16 peak loop: n iterations of six
// independent TDPBF16PS, every element of A the bf16 pair a and of B the
// pair b, so that each float32 of acc (six tiles of 256) ends as
// n · 16 · (a.hi·b.hi + a.lo·b.lo), summed as the instruction sums. It
// reports false (and does nothing) where HasAMX is false or n < 1.
func AMXPeakBF16(n int, a, b uint32, acc *[AMXPeakChains * AMXPeakLanes]float32) bool {
	if !HasAMX() || n < 1 {
		return false
	}
	var ta, tb [256]uint32
	for i := range ta {
		ta[i], tb[i] = a, b
	}
	amxPeakBF16(n, &ta[0], &tb[0], &acc[0], &amxConfig[0])
	return true
}
