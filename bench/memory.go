package bench

import (
	"fmt"
	"math"
)

// ScratchNode is a node whose kernels need working memory that grows faster than its
// tensors (attention's score matrices: N² per head). ScratchBytes is that memory, in
// bytes, when workers threads run the node at once; it must not overflow (saturate at
// math.MaxInt64). Nodes that do not implement it are assumed to need at most the size of
// their largest tensor (unfolded windows, packed panels, a staging copy).
type ScratchNode interface {
	ScratchBytes(workers int) int64
}

// Need is the memory a spec needs to run once, in bytes, by part, as declared by its op
// kind (arrays from params and batch, scratch from its nodes). Every part saturates at
// math.MaxInt64 instead of overflowing.
type Need struct {
	Inputs, Weights, Outputs int64
	// Temps are the graph's intermediate values, all allocated for the whole run.
	Temps int64
	// Scratch is the largest working memory any one node asks for.
	Scratch int64
}

// Total is what a run holds at its peak: the backend's copy of every input, weight,
// intermediate and output; a second copy of the inputs and weights (the host data being
// uploaded, or the CPU's packed weights); the outputs twice more (downloaded, and the
// reference they are compared with); and the largest scratch. Saturating.
func (n Need) Total() int64 {
	return AddSat(MulSat(2, n.Inputs), MulSat(2, n.Weights), n.Temps, MulSat(3, n.Outputs), n.Scratch)
}

// Parts lists what the total is made of: "inputs 2.0 MiB, weights 1.1 KiB, outputs 2.0
// MiB, intermediates 8.0 MiB, scratch 16.0 GiB; inputs and weights counted twice, outputs
// three times".
func (n Need) Parts() string {
	return fmt.Sprintf("inputs %s, weights %s, outputs %s, intermediates %s, scratch %s; inputs and weights counted twice, outputs three times",
		FormatBytes(n.Inputs), FormatBytes(n.Weights), FormatBytes(n.Outputs), FormatBytes(n.Temps), FormatBytes(n.Scratch))
}

// SpecNeed computes the memory spec needs when its nodes run on workers threads. It only
// multiplies declared shapes: nothing is allocated, and hostile params cannot overflow it.
func SpecNeed(spec Spec, workers int) Need {
	var n Need
	sizes := map[string]int64{}
	sum := func(list []ArraySpec) int64 {
		var t int64
		for _, a := range list {
			b := ArrayBytes(a.Shape)
			sizes[a.Name] = b
			t = AddSat(t, b)
		}
		return t
	}
	n.Inputs, n.Weights, n.Outputs = sum(spec.Inputs()), sum(spec.Weights()), sum(spec.Outputs())
	g := spec.Graph()
	n.Temps = sum(g.Temps)
	for _, st := range g.Steps {
		var s int64
		if sn, ok := st.Node.(ScratchNode); ok {
			s = sn.ScratchBytes(max(workers, 1))
		} else {
			for _, v := range append(append([]string(nil), st.In...), st.Out...) {
				s = max(s, sizes[v])
			}
		}
		n.Scratch = max(n.Scratch, s)
	}
	return n
}

// ArrayBytes is the float32 bytes of shape, saturating at math.MaxInt64.
func ArrayBytes(s Shape) int64 {
	e := s.Elems()
	if e < 0 {
		return math.MaxInt64
	}
	return MulSat(e, 4)
}

// AddSat adds non-negative numbers, saturating at math.MaxInt64.
func AddSat(vs ...int64) int64 {
	var t int64
	for _, v := range vs {
		if v < 0 || t > math.MaxInt64-v {
			return math.MaxInt64
		}
		t += v
	}
	return t
}

// MulSat multiplies non-negative numbers, saturating at math.MaxInt64.
func MulSat(vs ...int64) int64 {
	t := int64(1)
	for _, v := range vs {
		if v < 0 {
			return math.MaxInt64
		}
		if v != 0 && t > math.MaxInt64/v {
			return math.MaxInt64
		}
		t *= v
	}
	return t
}

// FormatBytes writes a byte count for people: "512 B", "3.0 MiB", "16.0 GiB"; "more than
// 8 EiB" at saturation.
func FormatBytes(b int64) string {
	if b == math.MaxInt64 {
		return "more than 8 EiB"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(b), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", b)
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}
