package report

import (
	"fmt"

	"vitbench/bench/results"
)

// DriftFactor is how many times larger a conformance row's NMSE may grow
// from base to head before compare flags it, even while it still passes:
// a correct change moves float32 rounding by a factor of about 1–4
// (fixtures/FORMAT.md, "Measured tolerances"); a tenfold growth is a
// near-miss in the making.
const DriftFactor = 10

// driftFloor is the NMSE below which a growth is not drift: float32
// rounding of an output, where ratios of near-zero errors mean nothing.
const driftFloor = 1e-15

// nmseDrift reports, for a row OK on both sides, whether its NMSE grew by
// DriftFactor or more (to at least driftFloor), and the line that says so.
func nmseDrift(k checkKey, b, h results.CheckRow) (string, bool) {
	if b.Status != results.StatusOK || h.Status != results.StatusOK || h.NMSE < driftFloor || h.NMSE < DriftFactor*b.NMSE {
		return "", false
	}
	out := h.Output
	if b.Output != h.Output {
		out = fmt.Sprintf("%s (base: %s)", h.Output, b.Output)
	}
	return fmt.Sprintf("%s: NMSE drift, still OK: %s %s -> %s (%.3g×, flagged from %d×)", k, out, fmtSci(b.NMSE),
		fmtSci(h.NMSE), h.NMSE/b.NMSE, DriftFactor), true
}
