package cases

import (
	"path/filepath"
	"reflect"
	"testing"

	"vitbench/bench/fixture"
)

// TestBuiltinCasesMatchCommittedFixtures keeps the Go case list and the
// fixtures written by reference/export.py in agreement: same case names,
// op kinds, batch, tolerance class and array shapes.
func TestBuiltinCasesMatchCommittedFixtures(t *testing.T) {
	root := "../../fixtures"
	dirs, err := fixture.Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		desc, err := fixture.ReadDesc(d)
		if err != nil {
			t.Fatal(err)
		}
		seen[desc.Name] = true
		if rel, _ := filepath.Rel(root, d); filepath.ToSlash(rel) != desc.Name {
			t.Errorf("%s holds case %q: directory and name differ", d, desc.Name)
		}
		c, ok := Lookup(desc.Name)
		if !ok {
			t.Errorf("fixture %s has no built-in case", desc.Name)
			continue
		}
		if c.Op != desc.Op || c.Batch != desc.Batch || c.Tolerance != desc.Tolerance || c.Kind != desc.Kind {
			t.Errorf("%s: built-in (%s, batch %d, %s, %s) vs fixture (%s, batch %d, %s, %s)", c.Name,
				c.Op, c.Batch, c.Tolerance, c.Kind, desc.Op, desc.Batch, desc.Tolerance, desc.Kind)
		}
		want, err := c.Spec(0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := desc.Spec()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want.Inputs(), got.Inputs()) || !reflect.DeepEqual(want.Weights(), got.Weights()) ||
			!reflect.DeepEqual(want.Outputs(), got.Outputs()) || want.MACs() != got.MACs() {
			t.Errorf("%s: built-in and fixture specs differ", c.Name)
		}
		if desc.Synth != nil && desc.Synth.Seed != c.Seed {
			t.Errorf("%s: synthesized with seed %d, builtin.json says %d", c.Name, desc.Synth.Seed, c.Seed)
		}
		for name, want := range c.SynthArrays {
			if desc.Synth == nil || desc.Synth.Arrays[name] != want {
				t.Errorf("%s: synth_arrays[%s] %+v in builtin.json, the fixture's synth record differs", c.Name, name, want)
			}
		}
		if !reflect.DeepEqual(c.SampledOutputs, desc.SampledOutputs) && (len(c.SampledOutputs) > 0 || len(desc.SampledOutputs) > 0) {
			t.Errorf("%s: sampled_outputs %v in builtin.json, %v in the fixture", c.Name, c.SampledOutputs, desc.SampledOutputs)
		}
	}
	for _, c := range All() {
		if seen[c.Name] != c.Fixture {
			t.Errorf("built-in case %s: fixture %v in builtin.json, committed fixture present: %v", c.Name, c.Fixture, seen[c.Name])
		}
	}
}
