package bench

import (
	"errors"
	"slices"
	"testing"
)

// testNode is a plain node of the given op.
type testNode string

func (n testNode) OpName() string { return string(n) }

// pairNode is a composite: out = second(first(in)), through one
// intermediate named from the prefix; nested, its parts hold another
// composite.
type pairNode struct{ nested bool }

func (pairNode) OpName() string { return "pair" }

func (p pairNode) Parts(in, out []string, prefix string) ([]ArraySpec, []Step) {
	mid := prefix + ".mid"
	var second Node = testNode("second")
	if p.nested {
		second = pairNode{}
	}
	return []ArraySpec{{Name: mid, Shape: Shape{2}}}, []Step{
		{Node: testNode("first"), In: in, Out: []string{mid}},
		{Node: second, In: []string{mid}, Out: out},
	}
}

func refuse(ops ...string) func(string) error {
	return func(op string) error {
		if slices.Contains(ops, op) {
			return errors.New("no kernel for " + op)
		}
		return nil
	}
}

// TestExpandFor: a composite the backend supports stays one step; one it
// does not is replaced by its parts, in place, with their intermediates
// named after the step's output (so a repeated layer shares them), and a
// composite among the parts is expanded in turn.
func TestExpandFor(t *testing.T) {
	g := &Graph{
		Steps: []Step{
			{Node: testNode("before"), In: []string{"x"}, Out: []string{"a"}},
			{Node: pairNode{}, In: []string{"a"}, Out: []string{"b"}},
			{Node: pairNode{}, In: []string{"b"}, Out: []string{"b2"}},
			{Node: pairNode{nested: true}, In: []string{"b2"}, Out: []string{"c"}},
		},
		Temps: []ArraySpec{{Name: "a", Shape: Shape{2}}, {Name: "b", Shape: Shape{2}}, {Name: "b2", Shape: Shape{2}}},
	}
	if got := g.ExpandFor(refuse()); got != g {
		t.Fatal("a graph whose composites are all supported was rebuilt")
	}
	got := g.ExpandFor(refuse("pair"))
	if want := []string{"before", "first", "second", "first", "second", "first", "first", "second"}; !slices.Equal(opsOf(got), want) {
		t.Fatalf("expanded ops %v, want %v", opsOf(got), want)
	}
	// The first pair reads a and writes b through b.pair0.mid.
	if st := got.Steps[1]; st.In[0] != "a" || st.Out[0] != "b.pair0.mid" {
		t.Fatalf("first part reads %v writes %v", st.In, st.Out)
	}
	if st := got.Steps[2]; st.In[0] != "b.pair0.mid" || st.Out[0] != "b" {
		t.Fatalf("second part reads %v writes %v", st.In, st.Out)
	}
	// The nested pair writes c like its parent: its own parts go through
	// c.pair1.mid, not the parent's c.pair0.mid, which they read.
	if st := got.Steps[6]; st.In[0] != "c.pair0.mid" || st.Out[0] != "c.pair1.mid" {
		t.Fatalf("nested part writes %v", st.Out)
	}
	var names []string
	for _, a := range got.Temps {
		names = append(names, a.Name)
	}
	want := []string{"a", "b", "b2", "b.pair0.mid", "b2.pair0.mid", "c.pair0.mid", "c.pair1.mid"}
	if !slices.Equal(names, want) {
		t.Fatalf("temps %v, want %v", names, want)
	}
	if len(g.Steps) != 4 || len(g.Temps) != 3 {
		t.Fatal("ExpandFor changed the graph it was given")
	}
}

// loopNode's parts hold itself: expansion must stop, not run forever.
type loopNode struct{}

func (loopNode) OpName() string { return "loop" }
func (l loopNode) Parts(in, out []string, prefix string) ([]ArraySpec, []Step) {
	return nil, []Step{{Node: l, In: in, Out: out}}
}

func TestExpandForStopsOnACycle(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a composite made of itself expanded without a panic")
		}
	}()
	(&Graph{Steps: []Step{{Node: loopNode{}, In: []string{"x"}, Out: []string{"y"}}}}).ExpandFor(refuse("loop"))
}

func opsOf(g *Graph) []string {
	var out []string
	for _, st := range g.Steps {
		out = append(out, st.Node.OpName())
	}
	return out
}
