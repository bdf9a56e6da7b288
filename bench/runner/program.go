// Package runner drives backends: it prepares a spec's graph on a backend,
// checks fixtures for conformance, and times cases.
package runner

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"vitbench/bench"
)

// ErrInterrupted is the error of a run stopped by its cancel channel (a signal): between
// two nodes of a graph, two arrays of its data or two runs of a timing loop.
var ErrInterrupted = errors.New("interrupted")

// interrupted reports whether cancel has been closed; a nil channel never is.
func interrupted(cancel <-chan struct{}) bool {
	select {
	case <-cancel:
		return true
	default:
		return false
	}
}

// Program is a spec's graph with every value allocated on one backend and
// its inputs and weights uploaded, ready to run any number of times.
type Program struct {
	b     bench.Backend
	spec  bench.Spec
	dtype bench.DType
	steps []boundStep
	vals  map[string]bench.Tensor
	order []string // allocation order, for Close
	// cancel, when closed, stops Run before its next node.
	cancel <-chan struct{}
}

type boundStep struct {
	node    bench.Node
	in, out []bench.Tensor
}

// Unsupported returns the backend's reason for the first op of the spec's
// graph it cannot run in dtype, or nil when it can run them all.
func Unsupported(b bench.Backend, spec bench.Spec, dt bench.DType) error {
	for _, op := range GraphFor(b, spec, dt).Ops() {
		if err := b.Supports(op, dt); err != nil {
			return err
		}
	}
	return nil
}

// GraphFor is spec's graph as backend b runs it in dtype dt: every
// composite node b has no kernel for is replaced by its parts
// (bench.Graph.ExpandFor).
func GraphFor(b bench.Backend, spec bench.Spec, dt bench.DType) *bench.Graph {
	return spec.Graph().ExpandFor(func(op string) error { return b.Supports(op, dt) })
}

// Prepare allocates every value of spec's graph on b and uploads the
// inputs and weights that data returns (group is "inputs" or "weights").
func Prepare(b bench.Backend, spec bench.Spec, dt bench.DType, data func(group, name string) ([]float32, error)) (*Program, error) {
	return PrepareCancel(b, spec, dt, data, nil)
}

// PrepareCancel is Prepare stopped by cancel: when it is closed, preparing stops before
// the next array with ErrInterrupted, and the program's Run stops before its next node.
func PrepareCancel(b bench.Backend, spec bench.Spec, dt bench.DType, data func(group, name string) ([]float32, error),
	cancel <-chan struct{}) (*Program, error) {
	g := GraphFor(b, spec, dt)
	if err := g.Validate(spec); err != nil {
		return nil, fmt.Errorf("%s: %v", spec.Op(), err)
	}
	p := &Program{b: b, spec: spec, dtype: dt, vals: map[string]bench.Tensor{}, cancel: cancel}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	alloc := func(a bench.ArraySpec) error {
		t, err := b.Alloc(a.Shape, dt)
		if err != nil {
			return fmt.Errorf("allocating %s %v: %v", a.Name, a.Shape, err)
		}
		p.vals[a.Name] = t
		p.order = append(p.order, a.Name)
		return nil
	}
	for _, grp := range []struct {
		name   string
		arrays []bench.ArraySpec
	}{{"inputs", spec.Inputs()}, {"weights", spec.Weights()}} {
		for _, a := range grp.arrays {
			if interrupted(cancel) {
				return nil, ErrInterrupted
			}
			if err := alloc(a); err != nil {
				return nil, err
			}
			host, err := data(grp.name, a.Name)
			if err != nil {
				return nil, err
			}
			if int64(len(host)) != a.Shape.Elems() {
				return nil, fmt.Errorf("%s %q: %d values for shape %v", grp.name, a.Name, len(host), a.Shape)
			}
			if err := b.Upload(p.vals[a.Name], host); err != nil {
				return nil, fmt.Errorf("uploading %s: %v", a.Name, err)
			}
		}
	}
	for _, list := range [][]bench.ArraySpec{g.Temps, spec.Outputs()} {
		for _, a := range list {
			if err := alloc(a); err != nil {
				return nil, err
			}
		}
	}
	p.bind(g, spec)
	ok = true
	return p, nil
}

// bind binds each step's values to tensors. Each value has its own tensor,
// except that on a backend that implements bench.InPlacer, an output the
// backend may write over one of the step's inputs (InPlace) takes that
// input's tensor when the input's value dies at the step (sharedInput);
// the two values then trade tensors, so that from that step on every value
// still has a tensor of its own. The binding is the same for every run
// (each run writes a temporary value before reading it), and the outputs
// are downloaded from the tensors they end up in.
func (p *Program) bind(g *bench.Graph, spec bench.Spec) {
	inPlace, _ := p.b.(bench.InPlacer)
	shapes := map[string]bench.Shape{}
	for _, list := range [][]bench.ArraySpec{g.Temps, spec.Outputs()} {
		for _, a := range list {
			shapes[a.Name] = a.Shape
		}
	}
	temps := map[string]bool{}
	for _, a := range g.Temps {
		temps[a.Name] = true
	}
	cur := maps.Clone(p.vals)
	for i, st := range g.Steps {
		bs := boundStep{node: st.Node}
		for _, v := range st.In {
			bs.in = append(bs.in, cur[v])
		}
		for k, v := range st.Out {
			if inPlace != nil {
				if r, ok := sharedInput(g, i, k, inPlace.InPlace(st.Node, k), temps, shapes); ok {
					cur[v], cur[r] = cur[r], cur[v]
				}
			}
			bs.out = append(bs.out, cur[v])
		}
		p.steps = append(p.steps, bs)
	}
	p.vals = cur
}

// sharedInput returns the name of input j of step i when output k of the
// step may take its tensor: j is an input (j ≥ 0) that names a temporary
// value of the graph (not an input, weight or output of the case), read
// once by the step and not written by it, and never read again before a
// later step writes it; output k is a temporary value or an output of the
// case, of the same shape, that the step does not read.
func sharedInput(g *bench.Graph, i, k, j int, temps map[string]bool, shapes map[string]bench.Shape) (string, bool) {
	st := g.Steps[i]
	if j < 0 || j >= len(st.In) {
		return "", false
	}
	r, v := st.In[j], st.Out[k]
	reads := 0
	for _, in := range st.In {
		if in == r {
			reads++
		}
	}
	if !temps[r] || reads != 1 || r == v || slices.Contains(st.Out, r) || slices.Contains(st.In, v) {
		return "", false
	}
	if sr, sv := shapes[r], shapes[v]; sv == nil || !sr.Equal(sv) {
		return "", false
	}
	for _, later := range g.Steps[i+1:] {
		if slices.Contains(later.In, r) {
			return "", false // read again: its value lives on
		}
		if slices.Contains(later.Out, r) {
			break // written again first: its value dies here
		}
	}
	return r, true
}

// Run enqueues every step once. It does not wait for the device. It returns
// ErrInterrupted, before the next step, once the program's cancel channel is closed.
func (p *Program) Run() error {
	for i, st := range p.steps {
		if interrupted(p.cancel) {
			return ErrInterrupted
		}
		if err := p.b.Enqueue(st.node, st.in, st.out); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, st.node.OpName(), err)
		}
	}
	return nil
}

// Outputs waits for the device and downloads every output.
func (p *Program) Outputs() (map[string][]float32, error) {
	if err := p.b.Sync(); err != nil {
		return nil, err
	}
	out := map[string][]float32{}
	for _, a := range p.spec.Outputs() {
		host := make([]float32, a.Shape.Elems())
		if err := p.b.Download(p.vals[a.Name], host); err != nil {
			return nil, fmt.Errorf("downloading %s: %v", a.Name, err)
		}
		out[a.Name] = host
	}
	return out, nil
}

// Close frees every tensor of the program.
func (p *Program) Close() {
	for _, name := range p.order {
		p.b.Free(p.vals[name])
	}
	p.vals, p.order = nil, nil
}

// Upload replaces the contents of input or weight name (for reuse of a
// prepared program with new data).
func (p *Program) Upload(name string, data []float32) error {
	t, ok := p.vals[name]
	if !ok {
		return fmt.Errorf("program has no value %q", name)
	}
	return p.b.Upload(t, data)
}
