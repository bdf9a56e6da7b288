package accuracy

import (
	"math"
	"strconv"
)

// Measured tolerances. An exported fixture records, per output, the error
// of its float32 reference against the same output recomputed in float64
// (case.json "reference_error"): the noise of a correct float32
// implementation on exactly that case. A float32 backend is held to a
// small multiple of it rather than to its class's fixed numbers, which are
// orders of magnitude looser (fixtures/FORMAT.md, "Measured tolerances",
// gives the data behind the numbers below).

// NoiseMultiple is M, the multiple of the reference's own error, in
// amplitude, that a float32 backend's error may reach: NMSE up to M²
// times the reference's, the largest |error| up to M times its largest.
const NoiseMultiple = 16

// noiseFloorNMSE is added to every measured NMSE bound: twice the NMSE
// of rounding an output to float32 once (≈ 6e-16 for uniformly spread
// mantissas), so that an output the reference happens to round correctly
// everywhere does not demand bit-exactness.
const noiseFloorNMSE = 1.2e-15

// noiseFloorRel is the floor of the measured max-abs bound, relative to
// the output's largest magnitude: 2^-22, two to four float32 ulps there,
// for outputs whose reference error is zero or near it.
const noiseFloorRel = 0x1p-22

// Noise is a float32 reference's measured error against float64 on one
// output: its NMSE and largest absolute difference.
type Noise struct{ NMSE, MaxAbs float64 }

// Measured tightens class for one output whose reference has the
// measured noise n and largest magnitude refMax:
//
//	NMSE ≤ min(class NMSE, M²·n.NMSE + 1.2e-15)
//	|got − ref| ≤ min(class atol, M·n.MaxAbs + 2^-22·refMax)   (no rtol term)
//
// It is never looser than class: the element bound is at most the class's
// atol, below atol + rtol·|ref| everywhere. The exact class is returned
// unchanged.
func Measured(class Tolerance, n Noise, refMax float64) Tolerance {
	if class.ATol == 0 && class.RTol == 0 && class.NMSE == 0 {
		return class
	}
	m := float64(NoiseMultiple)
	t := Tolerance{Class: "measured×" + strconv.Itoa(NoiseMultiple) + " (" + class.Class + ")",
		ATol: math.Min(class.ATol, m*n.MaxAbs+noiseFloorRel*refMax),
		NMSE: math.Min(class.NMSE, m*m*n.NMSE+noiseFloorNMSE), Override: class.Override}
	return t
}

// OutputTolerances returns the tolerance of each output of a case judged
// under class on backend: Measured for a float32 backend on an output with
// a noise record (refs are the reference values, for their largest
// magnitude), the class itself otherwise (reduced-precision backends,
// outputs without a record, hand-written fixtures).
func OutputTolerances(class Tolerance, backend string, noise map[string]Noise) func(name string, ref []float32) Tolerance {
	return func(name string, ref []float32) Tolerance {
		n, ok := noise[name]
		if !ok || Precision(backend) != "" {
			return class
		}
		var mx float64
		for _, v := range ref {
			if a := math.Abs(float64(v)); a > mx && !math.IsInf(a, 0) {
				mx = a
			}
		}
		return Measured(class, n, mx)
	}
}

// Multiple is the smallest noise multiple M at which an output with
// metrics m meets both measured bounds (above the floors), given its
// reference's noise n and largest magnitude refMax: how many times the
// reference's own float32 error the output's error is, in amplitude. It is
// 0 for an error inside the floors and +Inf for an error above them where
// the reference has none.
func Multiple(m Metrics, n Noise, refMax float64) float64 {
	ratio := func(excess, noise float64) float64 {
		switch {
		case excess <= 0:
			return 0
		case noise == 0:
			return math.Inf(1)
		}
		return excess / noise
	}
	byNMSE := math.Sqrt(ratio(m.NMSE-noiseFloorNMSE, n.NMSE))
	return math.Max(byNMSE, ratio(m.MaxAbs-noiseFloorRel*refMax, n.MaxAbs))
}
