package bench

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Spec is one op kind instantiated with hyper-parameters and a batch size:
// everything needed to check or time it, independent of any backend.
type Spec interface {
	// Op is the op kind's name.
	Op() string
	// Inputs, Weights and Outputs list the arrays in the order the graph's
	// first and last steps take them.
	Inputs() []ArraySpec
	Weights() []ArraySpec
	Outputs() []ArraySpec
	// MACs is the multiply-accumulate count of one forward pass, counted
	// analytically (attention matmuls and sampling included).
	MACs() int64
	// Bytes is the minimum traffic of one pass: every input, weight and
	// output read or written once.
	Bytes() int64
	// Params is the number of learned (and frozen) parameters.
	Params() int64
	// Graph is the program every backend runs.
	Graph() *Graph
}

// OpKind turns a case's JSON params and batch into a Spec.
type OpKind interface {
	Name() string
	// Summary is one line for `vitbench list`.
	Summary() string
	// Parse validates params strictly (unknown keys are an error) and
	// returns the resolved Spec.
	Parse(params json.RawMessage, batch int) (Spec, error)
}

var (
	opKindsMu sync.Mutex
	opKinds   = map[string]OpKind{}
)

// RegisterOpKind makes an op kind known to fixtures and cases.
func RegisterOpKind(k OpKind) {
	opKindsMu.Lock()
	defer opKindsMu.Unlock()
	if _, dup := opKinds[k.Name()]; dup {
		panic("bench: op kind registered twice: " + k.Name())
	}
	opKinds[k.Name()] = k
}

// LookupOpKind returns the op kind called name, or an error listing the
// known kinds.
func LookupOpKind(name string) (OpKind, error) {
	opKindsMu.Lock()
	defer opKindsMu.Unlock()
	if k, ok := opKinds[name]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("unknown op kind %q (known: %v)", name, opKindNamesLocked())
}

// OpKindNames lists the registered op kinds, sorted.
func OpKindNames() []string {
	opKindsMu.Lock()
	defer opKindsMu.Unlock()
	return opKindNamesLocked()
}

func opKindNamesLocked() []string {
	names := make([]string, 0, len(opKinds))
	for n := range opKinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BytesOf returns the float32 bytes of a list of arrays.
func BytesOf(arrays ...[]ArraySpec) int64 {
	var n int64
	for _, list := range arrays {
		for _, a := range list {
			n += a.Shape.Elems() * 4
		}
	}
	return n
}
