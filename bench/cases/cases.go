// Package cases is vitbench's built-in case list: named, data-driven
// descriptions (op kind, hyper-parameters, batch, dtype, tolerance class)
// that `vitbench list` shows and `vitbench bench` times without fixtures.
// The committed fixtures under fixtures/ carry the same descriptions, and a
// test keeps the two in agreement.
package cases

import (
	"bytes"
	_ "embed" // builtin.json
	"encoding/json"
	"fmt"
	"regexp"

	"vitbench/bench"
	"vitbench/bench/fixture"
	_ "vitbench/bench/ops" // registers the op kinds the cases use
	"vitbench/bench/synth"
)

// Case is one named configuration of an op kind or a network.
type Case struct {
	Name      string          `json:"name"`
	Kind      string          `json:"kind"` // "component" or "network"
	Op        string          `json:"op"`
	Params    json.RawMessage `json:"params"`
	Batch     int             `json:"batch"`
	DType     bench.DType     `json:"dtype"`
	Tolerance string          `json:"tolerance"`
	// Fixture says whether fixtures/ holds a reference output for the case.
	Fixture bool `json:"fixture"`
	// SampledOutputs are the outputs its fixture stores only in part.
	SampledOutputs map[string]fixture.Sampling `json:"sampled_outputs,omitempty"`
	// SynthArrays are the generator's numbers its fixture uses for some
	// arrays instead of the role table's.
	SynthArrays map[string]synth.Params `json:"synth_arrays,omitempty"`
	// Large marks a network whose fixture takes seconds to minutes to
	// check (tens to hundreds of GMACs): the test suites leave it to one
	// vitbench check on the fastest ISA path and to the main job.
	Large bool `json:"large,omitempty"`
	// Quick marks the case `vitbench run` times by default (without -full): one case per op
	// kind, its networks included (Quick).
	Quick bool `json:"quick,omitempty"`
	// Seed is the generator seed of its fixture (1 unless builtin.json
	// says otherwise: a seed whose two-stage selection has no near ties).
	Seed uint64 `json:"-"`
}

// Spec resolves the case's op kind and hyper-parameters at the given batch
// (0 = the case's own batch).
func (c Case) Spec(batch int) (bench.Spec, error) {
	k, err := bench.LookupOpKind(c.Op)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	if batch <= 0 {
		batch = c.Batch
	}
	s, err := k.Parse(c.Params, batch)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	return s, nil
}

//go:embed builtin.json
var builtinJSON []byte

// builtin is the case list, read from builtin.json: the single list that
// `vitbench list` shows, `vitbench bench` times and reference/export.py
// writes fixtures for (reference/vitbench_ref/cases.py reads the same file).
var builtin = mustParse(builtinJSON)

// entry is one line of builtin.json.
type entry struct {
	Name      string          `json:"name"`
	Kind      string          `json:"kind"`
	Op        string          `json:"op"`
	Batch     int             `json:"batch"`
	Tolerance string          `json:"tolerance"`
	Params    json.RawMessage `json:"params"`
	// Fixture false marks a timing-only case: too large to commit its
	// reference output; smaller cases of the same op kind check it.
	Fixture *bool `json:"fixture,omitempty"`
	// SampledOutputs makes the exporter store only every step-th index of
	// an output along one axis (fixtures/FORMAT.md, sampled_outputs).
	SampledOutputs map[string]fixture.Sampling `json:"sampled_outputs,omitempty"`
	// SynthArrays gives the exporter the generator's numbers for some
	// arrays instead of its role table's (a zero class head whose scores
	// all tie); the fixture's synth record repeats them.
	SynthArrays map[string]synth.Params `json:"synth_arrays,omitempty"`
	// Large: see Case.Large.
	Large bool `json:"large,omitempty"`
	// Quick: see Case.Quick.
	Quick bool `json:"quick,omitempty"`
	// Seed: see Case.Seed.
	Seed *uint64 `json:"seed,omitempty"`
}

func mustParse(raw []byte) []Case {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var entries []entry
	if err := dec.Decode(&entries); err != nil {
		panic("cases: builtin.json: " + err.Error())
	}
	out := make([]Case, len(entries))
	for i, e := range entries {
		out[i] = Case{Name: e.Name, Kind: e.Kind, Op: e.Op, Params: e.Params, Batch: e.Batch,
			DType: bench.Float32, Tolerance: e.Tolerance, Fixture: e.Fixture == nil || *e.Fixture,
			SampledOutputs: e.SampledOutputs, SynthArrays: e.SynthArrays, Large: e.Large, Quick: e.Quick, Seed: 1}
		if e.Seed != nil {
			out[i].Seed = *e.Seed
		}
	}
	return out
}

// All returns the built-in cases in their listed order.
func All() []Case { return append([]Case(nil), builtin...) }

// Lookup returns the built-in case called name.
func Lookup(name string) (Case, bool) {
	for _, c := range builtin {
		if c.Name == name {
			return c, true
		}
	}
	return Case{}, false
}

// Match returns the built-in cases whose names match re (nil matches all).
func Match(re *regexp.Regexp) []Case {
	var out []Case
	for _, c := range builtin {
		if re == nil || re.MatchString(c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// Quick returns the cases marked "quick" in builtin.json whose names match re (nil matches
// all), in list order: the representative set `vitbench run` times unless -full is given,
// one case of every op kind (the networks among them), chosen at the real models' shapes
// but small enough that the set and its PyTorch baseline take minutes, not the better part
// of an hour. TestQuickCoversEveryOpKind keeps it at one case per registered op kind.
func Quick(re *regexp.Regexp) []Case {
	var out []Case
	for _, c := range Match(re) {
		if c.Quick {
			out = append(out, c)
		}
	}
	return out
}
