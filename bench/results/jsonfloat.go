package results

import (
	"encoding/json"
	"fmt"
	"math"
)

// jfloat is a float64 whose JSON form survives NaN and ±Inf, which encoding/json refuses:
// they are written as the strings "NaN", "+Inf" and "-Inf". Reading accepts those strings
// (and "Inf"), plain numbers, and null, which reads as NaN.
type jfloat float64

// MarshalJSON writes finite values as JSON numbers and NaN/±Inf as strings.
func (f jfloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads a number, one of the strings "NaN", "+Inf", "Inf", "-Inf", or null (NaN).
func (f *jfloat) UnmarshalJSON(b []byte) error {
	s := string(b)
	switch s {
	case "null", `"NaN"`:
		*f = jfloat(math.NaN())
		return nil
	case `"+Inf"`, `"Inf"`:
		*f = jfloat(math.Inf(1))
		return nil
	case `"-Inf"`:
		*f = jfloat(math.Inf(-1))
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("want a number, \"NaN\", \"+Inf\" or \"-Inf\", got %s", s)
	}
	*f = jfloat(v)
	return nil
}

// jfloats converts a slice for JSON encoding; nil stays nil.
func jfloats(xs []float64) []jfloat {
	if xs == nil {
		return nil
	}
	out := make([]jfloat, len(xs))
	for i, x := range xs {
		out[i] = jfloat(x)
	}
	return out
}

// floats converts back from jfloats; nil stays nil.
func floats(xs []jfloat) []float64 {
	if xs == nil {
		return nil
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}
