package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// PatchEmbed is timm's PatchEmbed: a Conv2d whose kernel equals its stride,
// then flatten(2).transpose(1, 2). Inputs: x [B, C, H, W], weight
// [E, C, PH, PW] and, when Bias, bias [E]. Output: out [B, GH·GW, E] with
// GH = H/PH and GW = W/PW (floor), patches row-major. As a plain loop:
//
//	for b, gy, gx, e:
//	  acc := bias[e]
//	  for c, ky, kx: acc += x[b, c, gy·PH+ky, gx·PW+kx] · weight[e, c, ky, kx]
//	  out[b, gy·GW+gx, e] = acc
//
// The output is row-wise like Gemm's: out may be [B, GH, GW, E], the same
// rows channels-last.
type PatchEmbed struct {
	Batch, InChans, Height, Width int
	EmbedDim                      int
	PatchH, PatchW                int
	Bias                          bool
}

// OpName implements bench.Node.
func (PatchEmbed) OpName() string { return "patch_embed" }

// GridH and GridW are the number of whole patches down and across.
func (p PatchEmbed) GridH() int { return p.Height / p.PatchH }

// GridW is the number of whole patches across.
func (p PatchEmbed) GridW() int { return p.Width / p.PatchW }

// PatchEmbedParams is the JSON form of a patch_embed case.
type PatchEmbedParams struct {
	InChans   int   `json:"in_chans"`
	EmbedDim  int   `json:"embed_dim"`
	PatchSize Pair  `json:"patch_size"`
	ImgSize   Pair  `json:"img_size"`
	Bias      *bool `json:"bias,omitempty"`
}

type patchEmbedKind struct{}

func (patchEmbedKind) Name() string { return "patch_embed" }
func (patchEmbedKind) Summary() string {
	return "timm PatchEmbed: Conv2d(kernel = stride = patch) as a GEMM, tokens row-major"
}

func (patchEmbedKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p PatchEmbedParams
	if err := decodeStrict("patch_embed", raw, &p); err != nil {
		return nil, err
	}
	if err := positive("patch_embed", "batch", batch, "in_chans", p.InChans, "embed_dim", p.EmbedDim,
		"patch_size", p.PatchSize, "img_size", p.ImgSize); err != nil {
		return nil, err
	}
	if err := checkDims("patch_embed", "batch", batch, "in_chans", p.InChans, "embed_dim", p.EmbedDim,
		"patch_size", p.PatchSize, "img_size", p.ImgSize); err != nil {
		return nil, err
	}
	if p.ImgSize[0] < p.PatchSize[0] || p.ImgSize[1] < p.PatchSize[1] {
		return nil, fmt.Errorf("patch_embed params: img_size %v is smaller than patch_size %v", p.ImgSize, p.PatchSize)
	}
	bias := p.Bias == nil || *p.Bias
	return &patchEmbedSpec{node: PatchEmbed{
		Batch: batch, InChans: p.InChans, Height: p.ImgSize[0], Width: p.ImgSize[1],
		EmbedDim: p.EmbedDim, PatchH: p.PatchSize[0], PatchW: p.PatchSize[1], Bias: bias,
	}}, nil
}

type patchEmbedSpec struct{ node PatchEmbed }

func (s *patchEmbedSpec) Op() string { return "patch_embed" }

func (s *patchEmbedSpec) Inputs() []bench.ArraySpec {
	n := s.node
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{n.Batch, n.InChans, n.Height, n.Width}}}
}

func (s *patchEmbedSpec) Weights() []bench.ArraySpec {
	n := s.node
	w := []bench.ArraySpec{{Name: "proj.weight", Shape: bench.Shape{n.EmbedDim, n.InChans, n.PatchH, n.PatchW}}}
	if n.Bias {
		w = append(w, bench.ArraySpec{Name: "proj.bias", Shape: bench.Shape{n.EmbedDim}})
	}
	return w
}

func (s *patchEmbedSpec) Outputs() []bench.ArraySpec {
	n := s.node
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{n.Batch, n.GridH() * n.GridW(), n.EmbedDim}}}
}

func (s *patchEmbedSpec) MACs() int64 {
	n := s.node
	return int64(n.Batch) * int64(n.GridH()*n.GridW()) * int64(n.EmbedDim) * int64(n.InChans*n.PatchH*n.PatchW)
}

func (s *patchEmbedSpec) Bytes() int64 { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }

func (s *patchEmbedSpec) Params() int64 {
	n := s.node
	p := int64(n.EmbedDim) * int64(n.InChans*n.PatchH*n.PatchW)
	if n.Bias {
		p += int64(n.EmbedDim)
	}
	return p
}

func (s *patchEmbedSpec) Graph() *bench.Graph {
	in := []string{"x", "proj.weight"}
	if s.node.Bias {
		in = append(in, "proj.bias")
	}
	return &bench.Graph{Steps: []bench.Step{{Node: s.node, In: in, Out: []string{"out"}}}}
}

func init() { bench.RegisterOpKind(patchEmbedKind{}) }
