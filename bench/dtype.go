package bench

import "fmt"

// DType names an element type as the fixtures and results spell it.
type DType string

// The element types vitbench knows. Fixtures store float32; backends may
// compute in the narrower types and answer Supports accordingly.
const (
	Float32  DType = "float32"
	BFloat16 DType = "bfloat16"
	Float16  DType = "float16"
)

// ParseDType returns the DType for s, or an error naming the accepted values.
func ParseDType(s string) (DType, error) {
	switch d := DType(s); d {
	case Float32, BFloat16, Float16:
		return d, nil
	}
	return "", fmt.Errorf("unknown dtype %q (want float32, bfloat16 or float16)", s)
}

// Size returns the bytes one element occupies.
func (d DType) Size() int {
	switch d {
	case BFloat16, Float16:
		return 2
	}
	return 4
}
