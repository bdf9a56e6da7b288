package cpu

import (
	"testing"

	"vitbench/bench/ops"
)

// TestDirectBandsPlan: the direct path's bands and channel parts for the
// shapes its rules were measured on, two workers and a 12-row tile: a
// large map in bands of at least 512 wide outputs, their count a multiple
// of the workers; a small map with a small weight in one band per worker;
// a small map with a heavy weight in one band, the channels split; a
// batch of small images in bands over the batch. Every band's buffer
// holds its rows and the kernel's reach, and the bands cover the rows.
func TestDirectBandsPlan(t *testing.T) {
	conv := func(batch, cin, cout, size, k, stride int) ops.Conv2d {
		return ops.Conv2d{Unfold: ops.Unfold{Batch: batch, InChans: cin, Height: size, Width: size, KernelH: k, KernelW: k,
			StrideH: stride, StrideW: stride, PadH: k / 2, PadW: k / 2, DilationH: 1, DilationW: 1}, OutChans: cout}
	}
	for _, tc := range []struct {
		name         string
		c            ops.Conv2d
		bands, parts int
	}{
		{"VQGAN 32 channels at 64×64", conv(1, 32, 32, 64, 3, 1), 8, 1},
		{"ResNet stem 32→64 at 112×112", conv(1, 32, 64, 112, 3, 1), 8, 1},
		{"VQGAN 64 channels at 16×16", conv(1, 64, 64, 16, 3, 1), 2, 1},
		{"ResNet 512 channels at 7×7", conv(1, 512, 512, 7, 3, 1), 1, 2},
		{"batch of five 6×6 maps", conv(5, 4, 40, 6, 3, 1), 2, 1},
		{"stride 2, 128 channels at 56×56", conv(1, 128, 128, 56, 3, 2), 2, 1},
	} {
		rows := ceilDiv(tc.c.OutChans, 12) * 12
		g := newDirectGeom(tc.c, 2, rows, 12)
		d := g.bands
		if d.bands != tc.bands || d.parts != tc.parts {
			t.Errorf("%s: %d bands, %d parts; want %d, %d", tc.name, d.bands, d.parts, tc.bands, tc.parts)
		}
		oh := tc.c.OutH()
		next := 0
		for i := 0; i < d.bands; i++ {
			oy0, oy1 := d.bandRows(oh, i)
			if oy0 != next || oy1 <= oy0 || oy1-oy0 > d.maxRows {
				t.Errorf("%s: band %d rows [%d, %d), after %d, tallest %d", tc.name, i, oy0, oy1, next, d.maxRows)
			}
			next = oy1
		}
		reach := (tc.c.KernelH - 1) / tc.c.StrideH
		if next != oh || d.plane != (d.maxRows+reach)*g.wq || d.taps[len(d.taps)-1] != d.ones {
			t.Errorf("%s: bands end at row %d of %d, plane %d values for %d rows of %d", tc.name, next, oh, d.plane, d.maxRows+reach, g.wq)
		}
	}
}
