package bench

import "fmt"

// Composite is a node that stands for a sequence of simpler nodes. A
// backend with a kernel for the whole node runs it as one step (and may
// compute it another way than its parts do, to the same tolerance); a
// backend without one runs the parts (Graph.ExpandFor).
type Composite interface {
	Node
	// Parts returns the steps that compute the node from the values in to
	// the values out, and the intermediate values they exchange, named
	// from prefix so that they do not clash with the graph's own.
	Parts(in, out []string, prefix string) (temps []ArraySpec, steps []Step)
}

// ExpandFor returns g with every Composite step whose op supported refuses
// replaced by its parts (and theirs in turn), or g itself when no step is.
// The parts' intermediates are named after the step's first output, the
// op and the depth of nesting (b.attn_pool0.q), so a layer repeated in the
// graph reuses one set of them.
func (g *Graph) ExpandFor(supported func(op string) error) *Graph {
	return g.expand(supported, 0)
}

// maxCompositeDepth bounds how deep composites may nest: a composite whose
// parts contain itself would otherwise expand forever.
const maxCompositeDepth = 8

func (g *Graph) expand(supported func(op string) error, depth int) *Graph {
	expanded := false
	for _, st := range g.Steps {
		if c, ok := st.Node.(Composite); ok && supported(c.OpName()) != nil {
			expanded = true
			break
		}
	}
	if !expanded {
		return g
	}
	if depth >= maxCompositeDepth {
		panic(fmt.Sprintf("bench: composites nested more than %d deep", maxCompositeDepth))
	}
	out := &Graph{}
	for _, t := range g.Temps {
		out.Temp(t.Name, t.Shape)
	}
	for _, st := range g.Steps {
		c, ok := st.Node.(Composite)
		if !ok || supported(c.OpName()) == nil {
			out.Steps = append(out.Steps, st)
			continue
		}
		// A composite among the parts may write the same output: the
		// depth keeps its intermediates apart from its parent's.
		prefix := fmt.Sprintf("%s%d", c.OpName(), depth)
		if len(st.Out) > 0 {
			prefix = st.Out[0] + "." + prefix
		}
		temps, steps := c.Parts(st.In, st.Out, prefix)
		for _, t := range temps {
			out.Temp(t.Name, t.Shape)
		}
		out.Steps = append(out.Steps, steps...)
	}
	return out.expand(supported, depth+1)
}
