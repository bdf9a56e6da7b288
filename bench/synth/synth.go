// Package synth is vitbench's deterministic array generator: a counter-based
// hash turned into uniform float32 values, bit-identical to
// reference/vitbench_ref/synth.py. fixtures/FORMAT.md specifies it.
package synth

import (
	"math"
	"strings"
)

// Params says how one array is generated: value = center + scale·v with v
// uniform in [−1, 1).
type Params struct {
	Center float64 `json:"center"`
	Scale  float64 `json:"scale"`
}

// mix64 is the SplitMix64 finaliser.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// key is FNV-1a 64 over the UTF-8 bytes of name.
func key(name string) uint64 {
	h := uint64(0xCBF29CE484222325)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 0x100000001B3
	}
	return h
}

const golden = 0x9E3779B97F4A7C15

// Stream generates the values of one named array.
type Stream struct {
	state         uint64
	center, scale float32
}

// New returns the stream for array name under seed.
func New(seed uint64, name string, p Params) Stream {
	return Stream{state: mix64(seed ^ key(name)), center: float32(p.Center), scale: float32(p.Scale)}
}

// At returns element i (row-major flat index) of the array:
//
//	x := mix64(stream + golden·(i+1)); u := float32(x>>40)·2⁻²⁴
//	return center + float32(scale·(2u − 1))
func (s Stream) At(i uint64) float32 {
	x := mix64(s.state + golden*(i+1))
	u := float32(x>>40) * (1.0 / (1 << 24))
	v := 2*u - 1
	// The explicit conversions round the product before the sum: no FMA, as
	// the format requires, whatever GOAMD64 level the compiler targets.
	return s.center + float32(s.scale*v)
}

// Fill writes elements [offset, offset+len(dst)) of the array into dst.
func (s Stream) Fill(dst []float32, offset uint64) {
	for j := range dst {
		dst[j] = s.At(offset + uint64(j))
	}
}

// Generate returns all n elements of array name.
func Generate(seed uint64, name string, p Params, n int) []float32 {
	out := make([]float32, n)
	New(seed, name, p).Fill(out, 0)
	return out
}

// DefaultParams picks center and scale by the array's role, as the
// exporter does (fixtures/FORMAT.md, "role" table): inputs 0 ± 1; weights
// of Linear or conv 0 ± 1/√fan_in; norm scales 1 ± 0.1; biases 0 ± 0.02;
// BatchNorm running variances 1 ± 0.1 (they must stay positive); a
// performer's random features w 0 ± 1; anything else 0 ± 0.02. Inputs
// with a role of their own: sampling_locations 0.5 ± 0.6 (normalized, some
// outside the map), attention_weights, reference_points and mask 0.5 ± 0.5,
// offset 0 ± 2 (pixels), padding_mask and image_mask 0 ± 0 (no padding). The learned
// queries query_embed.weight are 0 ± 1; VOLO's outlook-attention logits
// weight (attn.weight of an outlook_attention case, *.attn.attn.weight in
// an Outlooker) 0 ± 16/√fan_in.
func DefaultParams(name string, shape []int, isInput bool) Params {
	switch {
	case isInput:
		switch name {
		case "sampling_locations":
			return Params{Center: 0.5, Scale: 0.6}
		case "attention_weights", "reference_points", "mask":
			return Params{Center: 0.5, Scale: 0.5}
		case "offset":
			return Params{Center: 0, Scale: 2}
		case "padding_mask", "image_mask":
			return Params{Center: 0, Scale: 0}
		}
		return Params{Center: 0, Scale: 1}
	case strings.HasSuffix(name, "query_embed.weight"):
		return Params{Center: 0, Scale: 1} // nn.Embedding's scale: spread reference points
	case (name == "attn.weight" || strings.HasSuffix(name, "attn.attn.weight")) && len(shape) == 2:
		// VOLO's outlook logits Linear: 16× the Linear scale, so that the
		// 9-way softmaxes are far from uniform and a wrong attention
		// cannot pass (reference/vitbench_ref/synth.py, OUTLOOK_LOGITS_GAIN).
		return Params{Center: 0, Scale: outlookLogitsGain / math.Sqrt(float64(shape[1]))}
	case strings.HasSuffix(name, "bias"):
		return Params{Center: 0, Scale: 0.02}
	case strings.HasSuffix(name, "weight") && len(shape) >= 2:
		fanIn := 1
		for _, d := range shape[1:] {
			fanIn *= d
		}
		return Params{Center: 0, Scale: 1 / math.Sqrt(float64(fanIn))}
	case strings.HasSuffix(name, "weight"):
		return Params{Center: 1, Scale: 0.1}
	case strings.HasSuffix(name, "running_var"):
		return Params{Center: 1, Scale: 0.1}
	case name == "w" || strings.HasSuffix(name, ".w"):
		return Params{Center: 0, Scale: 1}
	}
	return Params{Center: 0, Scale: 0.02}
}

// outlookLogitsGain scales the synthesized outlook-attention logits weight
// above the plain Linear scale 1/√fan_in (as the Python generator does).
const outlookLogitsGain = 16.0
