package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Pair is a (height, width) hyper-parameter; JSON accepts one integer for
// both or a two-element array [h, w], as PyTorch's _pair does.
type Pair [2]int

// UnmarshalJSON accepts 7 or [7, 5].
func (p *Pair) UnmarshalJSON(b []byte) error {
	var one int
	if err := json.Unmarshal(b, &one); err == nil {
		*p = Pair{one, one}
		return nil
	}
	var two []int
	if err := json.Unmarshal(b, &two); err != nil || len(two) != 2 {
		return fmt.Errorf("want an integer or [h, w], got %s", b)
	}
	*p = Pair{two[0], two[1]}
	return nil
}

// MarshalJSON writes the pair as [h, w].
func (p Pair) MarshalJSON() ([]byte, error) { return json.Marshal([]int{p[0], p[1]}) }

// decodeStrict decodes params into dst, rejecting unknown keys and trailing
// data, and names the op kind in any error.
func decodeStrict(op string, params json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%s params: %v", op, err)
	}
	if dec.More() {
		return fmt.Errorf("%s params: trailing data after the object", op)
	}
	return nil
}

// positive returns an error unless every named value is > 0.
func positive(op string, named ...any) error {
	for i := 0; i+1 < len(named); i += 2 {
		name := named[i].(string)
		switch v := named[i+1].(type) {
		case int:
			if v <= 0 {
				return fmt.Errorf("%s params: %s must be positive, got %d", op, name, v)
			}
		case Pair:
			if v[0] <= 0 || v[1] <= 0 {
				return fmt.Errorf("%s params: %s must be positive, got [%d, %d]", op, name, v[0], v[1])
			}
		}
	}
	return nil
}

// maxDim bounds every dimension a spec derives, so that products of a few
// dimensions cannot overflow int64 and hostile params fail early.
const maxDim = 1 << 24

// checkDims returns an error if any dimension is above maxDim.
func checkDims(op string, named ...any) error {
	for i := 0; i+1 < len(named); i += 2 {
		var vals []int
		switch v := named[i+1].(type) {
		case int:
			vals = []int{v}
		case Pair:
			vals = v[:]
		}
		for _, x := range vals {
			if x > maxDim {
				return fmt.Errorf("%s params: %s = %d is larger than %d", op, named[i], x, maxDim)
			}
		}
	}
	return nil
}

// errorf is fmt.Errorf, for brevity in parameter checks.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
