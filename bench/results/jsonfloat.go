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

// jnum is a float64 written as a JSON number, or null when it is NaN or ±Inf (not
// defined: a 95% interval of fewer than 6 samples, a rate without samples), so that a
// numeric field never holds a string. It reads as jfloat does (null is NaN).
type jnum float64

// MarshalJSON writes finite values as JSON numbers and NaN/±Inf as null.
func (f jnum) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads what jfloat reads: a number, null, or the strings of older files.
func (f *jnum) UnmarshalJSON(b []byte) error { return (*jfloat)(f).UnmarshalJSON(b) }

// convertFloats converts a slice between the float64 types of this file
// (float64, jfloat, jnum) element by element; nil stays nil.
func convertFloats[To, From ~float64](xs []From) []To {
	if xs == nil {
		return nil
	}
	out := make([]To, len(xs))
	for i, x := range xs {
		out[i] = To(x)
	}
	return out
}

func jfloats(xs []float64) []jfloat  { return convertFloats[jfloat](xs) }
func floats(xs []jfloat) []float64   { return convertFloats[float64](xs) }
func jnums(xs []float64) []jnum      { return convertFloats[jnum](xs) }
func numsFloats(xs []jnum) []float64 { return convertFloats[float64](xs) }
