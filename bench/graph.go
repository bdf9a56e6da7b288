package bench

import "fmt"

// ArraySpec names one array of a case and its shape. For weights the name
// is the PyTorch state_dict key of the original module.
type ArraySpec struct {
	Name  string
	Shape Shape
}

// Step is one node of a graph with the names of the values it reads and
// writes. Values are inputs, weights, outputs or intermediates.
type Step struct {
	Node Node
	In   []string
	Out  []string
}

// Graph is a straight-line program over named values: the form every
// component and network takes, so that every backend runs the same ops.
type Graph struct {
	Steps []Step
	// Temps are the intermediate values the steps exchange.
	Temps []ArraySpec
}

// Validate checks that every value a step reads has been defined by the
// inputs, weights, an earlier step, and that every output is written.
func (g *Graph) Validate(s Spec) error {
	defined := map[string]bool{}
	for _, a := range s.Inputs() {
		defined[a.Name] = true
	}
	for _, a := range s.Weights() {
		defined[a.Name] = true
	}
	known := map[string]bool{}
	for k := range defined {
		known[k] = true
	}
	for _, a := range g.Temps {
		known[a.Name] = true
	}
	for _, a := range s.Outputs() {
		known[a.Name] = true
	}
	for i, st := range g.Steps {
		for _, v := range st.In {
			if !defined[v] {
				return fmt.Errorf("graph step %d (%s) reads %q before it is written", i, st.Node.OpName(), v)
			}
		}
		for _, v := range st.Out {
			if !known[v] {
				return fmt.Errorf("graph step %d (%s) writes undeclared value %q", i, st.Node.OpName(), v)
			}
			defined[v] = true
		}
	}
	for _, a := range s.Outputs() {
		if !defined[a.Name] {
			return fmt.Errorf("graph never writes output %q", a.Name)
		}
	}
	return nil
}

// Ops lists the distinct op kinds the graph's nodes use, in first-use order.
func (g *Graph) Ops() []string {
	seen := map[string]bool{}
	var out []string
	for _, st := range g.Steps {
		if n := st.Node.OpName(); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Temp declares an intermediate value once: graphs that repeat a layer
// (a network's blocks) reuse the same buffers for every repetition.
func (g *Graph) Temp(name string, shape Shape) {
	for _, t := range g.Temps {
		if t.Name == name {
			if !t.Shape.Equal(shape) {
				panic("bench: temp " + name + " redeclared with another shape")
			}
			return
		}
	}
	g.Temps = append(g.Temps, ArraySpec{Name: name, Shape: shape})
}
