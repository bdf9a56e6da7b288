package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// DETRParams is the JSON form of a detr case: the original DETR detector
// on padded batch images of ImgSize, with a ResNet-50 or ResNet-101
// backbone (Dilate: the DC5 variant).
type DETRParams struct {
	ImgSize     Pair `json:"img_size"`
	Depth       int  `json:"depth,omitempty"`       // 50 (default) or 101
	Dilate      bool `json:"dilate,omitempty"`      // DC5: layer4 dilated instead of strided
	NumClasses  int  `json:"num_classes,omitempty"` // default 91 (plus "no object")
	Queries     int  `json:"queries,omitempty"`     // default 100
	DModel      int  `json:"d_model,omitempty"`     // default 256
	Heads       int  `json:"heads,omitempty"`       // default 8
	EncLayers   int  `json:"enc_layers,omitempty"`  // default 6
	DecLayers   int  `json:"dec_layers,omitempty"`  // default 6
	FFNDim      int  `json:"ffn_dim,omitempty"`     // default 2048
	PaddingMask bool `json:"padding_mask,omitempty"`
}

type detr struct {
	t             *detrTransformer
	h, w, classes int
	backbone      *resnet50
}

type detrKind struct{}

func (detrKind) Name() string { return "detr" }
func (detrKind) Summary() string {
	return "DETR detector: ResNet-50/101 (frozen BN; DC5 option) C5, input_proj, DETR transformer, class head + box MLP, PostProcess"
}

func (detrKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	const op = "detr"
	var p DETRParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	if err := positive(op, "batch", batch, "img_size", p.ImgSize); err != nil {
		return nil, err
	}
	if err := checkDims(op, "img_size", p.ImgSize); err != nil {
		return nil, err
	}
	depth := orInt(p.Depth, 50)
	if depth != 50 && depth != 101 {
		return nil, errorf("%s params: depth must be 50 or 101, got %d", op, depth)
	}
	bb := &resnet50{batch: batch, h: p.ImgSize[0], w: p.ImgSize[1], prefix: "backbone.0.body.", depth: depth, dilate: p.Dilate}
	bb.plan()
	fh, fw := bb.stageSize(3)
	t := &detrTransformer{batch: batch, h: fh, w: fw, d: orInt(p.DModel, 256), heads: orInt(p.Heads, 8),
		encLayers: orInt(p.EncLayers, 6), decLayers: orInt(p.DecLayers, 6), ffn: orInt(p.FFNDim, 2048),
		queries: orInt(p.Queries, 100), masked: p.PaddingMask}
	if err := t.check(op); err != nil {
		return nil, err
	}
	d := &detr{t: t, h: p.ImgSize[0], w: p.ImgSize[1], classes: orInt(p.NumClasses, 91), backbone: bb}
	if err := positive(op, "num_classes", d.classes); err != nil {
		return nil, err
	}
	if err := checkDims(op, "num_classes", d.classes+1); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *detr) Op() string { return "detr" }

func (d *detr) Inputs() []bench.ArraySpec { return detectorInputs(d.t.batch, d.h, d.w, d.t.masked) }

// Weights are the detector's state_dict entries, in its order.
func (d *detr) Weights() []bench.ArraySpec {
	dm := d.t.d
	w := d.t.transformerWeights()
	w = append(w, linear("class_embed", d.classes+1, dm)...)
	w = append(w, linear("bbox_embed.layers.0", dm, dm)...)
	w = append(w, linear("bbox_embed.layers.1", dm, dm)...)
	w = append(w, linear("bbox_embed.layers.2", 4, dm)...)
	w = append(w, bench.ArraySpec{Name: "query_embed.weight", Shape: bench.Shape{d.t.queries, dm}},
		bench.ArraySpec{Name: "input_proj.weight", Shape: bench.Shape{dm, 2048, 1, 1}}, bench.ArraySpec{Name: "input_proj.bias", Shape: bench.Shape{dm}})
	return append(w, d.backbone.weights...)
}

func (d *detr) Outputs() []bench.ArraySpec {
	b, q := d.t.batch, d.t.queries
	return []bench.ArraySpec{
		{Name: "pred_logits", Shape: bench.Shape{b, q, d.classes + 1}},
		{Name: "pred_boxes", Shape: bench.Shape{b, q, 4}},
		{Name: "scores", Shape: bench.Shape{b, q}},
		{Name: "labels", Shape: bench.Shape{b, q}},
		{Name: "boxes", Shape: bench.Shape{b, q, 4}},
	}
}

// MACs counts the backbone, input_proj, the transformer (as its graph
// computes it) and the two heads on the last decoder layer.
func (d *detr) MACs() int64 {
	b, q, dm, s := int64(d.t.batch), int64(d.t.queries), int64(d.t.d), int64(d.t.tokens())
	return d.backbone.macs + b*s*2048*dm + d.t.MACs() + b*q*dm*int64(d.classes+1) + b*q*(2*dm*dm+4*dm)
}

func (d *detr) Bytes() int64 { return bench.BytesOf(d.Inputs(), d.Weights(), d.Outputs()) }

// Params counts what PyTorch's parameters() does: every learned tensor,
// the frozen BatchNorm buffers left out (41,524,768 for DETR-R50). The
// training script prints fewer (41,302,368): it counts only tensors that
// train, and the stem and layer1 are frozen.
func (d *detr) Params() int64 {
	var frozen int64
	for _, a := range d.backbone.weights {
		if len(a.Shape) == 1 {
			frozen += a.Shape.Elems()
		}
	}
	return bench.BytesOf(d.Weights())/4 - frozen
}

// Graph runs the backbone to C5, resizes the image mask to it (nearest),
// projects C5 with the 1×1 input_proj, runs the transformer (which adds
// its sine positions), and applies the class head and the box MLP to the
// last decoder layer's output, then the post-processing.
func (d *detr) Graph() *bench.Graph {
	t := d.t
	b, s, q, dm := t.batch, t.tokens(), t.queries, t.d
	g := &bench.Graph{}
	bb := d.backbone
	for i, c := range []int{512, 1024, 2048} {
		h, w := bb.stageSize(i + 1)
		g.Temp(fmt.Sprintf("det.c%d", i+3), bench.Shape{b, c, h, w})
	}
	bb.steps(g, "images", "det.c3", "det.c4", "det.c5")
	lv := LevelsOf([2]int{t.h, t.w})
	u := Unfold{Batch: b, InChans: 2048, Height: t.h, Width: t.w, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1}
	g.Temp("det.proj", bench.Shape{b, dm, t.h, t.w})
	g.Temp("det.src", bench.Shape{b, s, dm})
	g.Steps = append(g.Steps,
		bench.Step{Node: Conv2d{Unfold: u, OutChans: dm, Bias: true}, In: []string{"det.c5", "input_proj.weight", "input_proj.bias"}, Out: []string{"det.proj"}},
		bench.Step{Node: FlattenLevels{Batch: b, Chans: dm, Levels: lv}, In: []string{"det.proj"}, Out: []string{"det.src"}})
	mask := ""
	if t.masked {
		mask = "det.mask"
		g.Temp(mask, bench.Shape{b, s})
		g.Steps = append(g.Steps, bench.Step{Node: LevelMasks{Batch: b, Height: d.h, Width: d.w, Levels: lv},
			In: []string{"image_mask"}, Out: []string{mask}})
	}
	g.Temp("det.memory", bench.Shape{b, s, dm})
	g.Temp("det.hs", bench.Shape{t.decLayers, b, q, dm})
	t.steps(g, "det.src", mask, "det.memory", "det.hs")
	last := fmt.Sprintf("dec.out%d", t.decLayers-1) // hs[-1]
	gemm := func(n int, act string) Gemm {
		return Gemm{Batch: b, M: q, N: n, K: dm, TransB: true, Bias: true, Act: act}
	}
	g.Temp("det.box1", bench.Shape{b, q, dm})
	g.Temp("det.box2", bench.Shape{b, q, dm})
	g.Temp("det.box3", bench.Shape{b, q, 4})
	g.Steps = append(g.Steps,
		bench.Step{Node: gemm(d.classes+1, ""), In: []string{last, "class_embed.weight", "class_embed.bias"}, Out: []string{"pred_logits"}},
		bench.Step{Node: gemm(dm, "relu"), In: []string{last, "bbox_embed.layers.0.weight", "bbox_embed.layers.0.bias"}, Out: []string{"det.box1"}},
		bench.Step{Node: gemm(dm, "relu"), In: []string{"det.box1", "bbox_embed.layers.1.weight", "bbox_embed.layers.1.bias"}, Out: []string{"det.box2"}},
		bench.Step{Node: gemm(4, ""), In: []string{"det.box2", "bbox_embed.layers.2.weight", "bbox_embed.layers.2.bias"}, Out: []string{"det.box3"}},
		bench.Step{Node: Sigmoid{Elems: b * q * 4}, In: []string{"det.box3"}, Out: []string{"pred_boxes"}})
	ppIn := []string{"pred_logits", "pred_boxes"}
	if t.masked {
		ppIn = append(ppIn, "image_mask")
	}
	g.Steps = append(g.Steps, bench.Step{Node: DETRPostProcess{Batch: b, Queries: q, Classes: d.classes, Height: d.h, Width: d.w, Masked: t.masked},
		In: ppIn, Out: []string{"scores", "labels", "boxes"}})
	return g
}

func init() { bench.RegisterOpKind(detrKind{}) }
