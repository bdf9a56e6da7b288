package runner

import (
	"strings"
	"testing"

	"vitbench/bench"
)

// step is a node of the binding tests: its name is all they need.
type step string

func (s step) OpName() string { return string(s) }

// stp is a step reading the comma-separated values in and writing out.
func stp(in, out string) bench.Step {
	return bench.Step{Node: step("f"), In: strings.Split(in, ","), Out: strings.Split(out, ",")}
}

// TestSharedInput checks which inputs an output may take the tensor of:
// only a temporary value, read once by the step and not written by it,
// whose value the graph never reads again before writing it, for an
// output of the same shape that the step does not read.
func TestSharedInput(t *testing.T) {
	m := bench.Shape{2, 3}
	temps := map[string]bool{"a": true, "b": true, "c": true, "odd": true}
	shapes := map[string]bench.Shape{"a": m, "b": m, "c": m, "out": m, "odd": {3, 2}}
	for _, tc := range []struct {
		name  string
		steps []bench.Step
		j     int    // the input the backend offers
		want  string // "" when none may be taken
	}{
		{"dead after the step", []bench.Step{stp("x,a", "b"), stp("b", "out")}, 1, "a"},
		{"into the case's output", []bench.Step{stp("x,a", "out")}, 1, "a"},
		{"written again before it is read", []bench.Step{stp("x,a", "b"),
			stp("b", "a"), stp("a", "out")}, 1, "a"},
		{"read by a later step", []bench.Step{stp("x,a", "b"), stp("b,a", "out")}, 1, ""},
		{"read later in place", []bench.Step{stp("x,a", "b"), stp("a", "a")}, 1, ""},
		{"read twice by the step", []bench.Step{stp("a,a", "b")}, 1, ""},
		{"an input of the case", []bench.Step{stp("a,x", "b")}, 1, ""},
		{"the output is also read", []bench.Step{stp("b,a", "b")}, 1, ""},
		{"the step writes it too", []bench.Step{stp("x,a", "b,a")}, 1, ""},
		{"the case's output as the input", []bench.Step{stp("x,out", "b")}, 1, ""},
		{"another shape", []bench.Step{stp("x,odd", "b")}, 1, ""},
		{"no input offered", []bench.Step{stp("x,a", "b")}, -1, ""},
		{"past the inputs", []bench.Step{stp("x,a", "b")}, 2, ""},
	} {
		got, ok := sharedInput(&bench.Graph{Steps: tc.steps}, 0, 0, tc.j, temps, shapes)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: sharedInput = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}
