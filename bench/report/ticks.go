package report

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// linTicks labels a linear axis at 1, 2 or 5 times a power of ten, chosen so that about
// four labels span the range, written without trailing zeros (250, not 250.00), with an
// unlabelled tick between labels.
type linTicks struct{}

// Ticks implements plot.Ticker.
func (linTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: fmtLin(lo)}}
	}
	raw := (hi - lo) / 4
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow
	for _, m := range []float64{2, 5, 10} {
		if raw/step <= 1.5 {
			break
		}
		step = m * pow
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / (step / 2)); i*step/2 <= hi*(1+1e-9); i++ {
		v := i * step / 2
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = fmtLin(v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// fmtLin writes a tick value with at most four significant digits and no trailing zeros.
func fmtLin(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// logTicks labels powers of ten (1, 10, 100, …, written plainly rather than as 1e+02) and
// marks 2 and 5 times each power, labelled too when the axis spans less than two decades.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	short := hi/lo < 100
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for _, m := range []float64{1, 2, 5} {
			v := m * base
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || short {
				t.Label = fmtTick(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// fmtTick writes a tick value plainly: 0.01, 1, 1000, 1e+06 beyond a million.
func fmtTick(v float64) string {
	if v >= 1e6 || v < 1e-3 {
		return fmt.Sprintf("%.0e", v)
	}
	return fmt.Sprintf("%g", v)
}
