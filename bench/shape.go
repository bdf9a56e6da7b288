package bench

import (
	"fmt"
	"math"
	"strings"
)

// Shape is a row-major tensor shape, outermost dimension first.
type Shape []int

// Elems returns the product of the dimensions (1 for a scalar), or -1 when a
// dimension is negative or the product overflows int64.
func (s Shape) Elems() int64 {
	n := int64(1)
	for _, d := range s {
		if d < 0 {
			return -1
		}
		if d != 0 && n > math.MaxInt64/int64(d) {
			return -1
		}
		n *= int64(d)
	}
	return n
}

// Equal reports whether s and t have the same dimensions.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// String formats the shape as [a, b, c].
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Unravel converts a flat row-major index into per-dimension indices.
func (s Shape) Unravel(flat int64) []int {
	idx := make([]int, len(s))
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] > 0 {
			idx[i] = int(flat % int64(s[i]))
			flat /= int64(s[i])
		}
	}
	return idx
}
