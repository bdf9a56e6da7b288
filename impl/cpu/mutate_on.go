//go:build mutation

package cpu

import (
	"slices"

	"vitbench/bench"
	"vitbench/internal/mutation"
)

// cpuMutation is one semantic mistake of the CPU backend, applied to the
// nodes it concerns: applies says whether a node is one the mistake would
// change (its decision point), run computes the node the mistaken way,
// mostly by calling the correct op on rewritten parameters or inputs.
type cpuMutation struct {
	info    mutation.Info
	applies func(bench.Node) bool
	run     func(b *Backend, n bench.Node, in, out []*tensor) error
}

var (
	cpuMutations  []cpuMutation
	mutationSites = map[string]string{} // name → the node types it applies to
)

// addMutation registers a mutation of nodes of type N.
func addMutation[N bench.Node](name, doc string, applies func(N) bool, run func(b *Backend, n N, in, out []*tensor) error) {
	var zero N
	info := mutation.Info{Name: name, Site: zero.OpName(), Doc: doc}
	if site, seen := mutationSites[name]; seen {
		// One mistake in several node types (the core and the fused
		// deformable sampling): registered once, sites joined.
		info.Site = site + ", " + info.Site
		mutation.Update(info)
	} else {
		mutation.Register(info)
	}
	mutationSites[name] = info.Site
	cpuMutations = append(cpuMutations, cpuMutation{info: info,
		applies: func(n bench.Node) bool {
			v, ok := n.(N)
			return ok && (applies == nil || applies(v))
		},
		run: func(b *Backend, n bench.Node, in, out []*tensor) error { return run(b, n.(N), in, out) }})
}

// mutate runs node the active mutation's way when that mutation concerns
// it, and reports whether it did; every mutation that concerns the node
// is recorded as reached (mutation.Reached).
func (b *Backend) mutate(node bench.Node, in, out []*tensor) (bool, error) {
	for _, m := range cpuMutations {
		if m.applies(node) && mutation.On(m.info.Name) {
			return true, m.run(b, node, in, out)
		}
	}
	return false, nil
}

// cloneTensor is a private copy of t (no cached packing, not counted in
// Memory), for rewriting an input.
func cloneTensor(t *tensor) *tensor {
	return &tensor{shape: slices.Clone(t.shape), dtype: t.dtype, data: slices.Clone(t.data)}
}

// zeroTensor is a zero tensor of the given shape, outside Memory.
func zeroTensor(shape bench.Shape) *tensor {
	return &tensor{shape: slices.Clone(shape), dtype: bench.Float32, data: make([]float32, shape.Elems())}
}

// replaced returns a copy of ts with ts[i] replaced by t.
func replaced(ts []*tensor, i int, t *tensor) []*tensor {
	c := slices.Clone(ts)
	c[i] = t
	return c
}
