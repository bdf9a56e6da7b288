package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// DeformableDETRParams is the JSON form of a deformable_detr case: the
// whole detector (ResNet-50, four levels), optionally with box refinement
// and two-stage query selection.
type DeformableDETRParams struct {
	ImgSize    Pair `json:"img_size"`
	NumClasses int  `json:"num_classes,omitempty"` // default 91
	TopK       int  `json:"top_k,omitempty"`       // default 100
	DDETRConfig
}

type deformableDETR struct {
	t             *ddetrTransformer
	h, w, classes int
	topK          int
	backbone      *resnet50
}

type deformableDETRKind struct{}

func (deformableDETRKind) Name() string { return "deformable_detr" }
func (deformableDETRKind) Summary() string {
	return "Deformable DETR detector: ResNet-50 (frozen BN), input projections, sine positions, deformable transformer, heads, top-k"
}

func (deformableDETRKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	const op = "deformable_detr"
	var p DeformableDETRParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	if err := positive(op, "batch", batch, "img_size", p.ImgSize); err != nil {
		return nil, err
	}
	if err := checkDims(op, "img_size", p.ImgSize); err != nil {
		return nil, err
	}
	h, w := p.ImgSize[0], p.ImgSize[1]
	bb := &resnet50{batch: batch, h: h, w: w, prefix: "backbone.0.body."}
	bb.plan()
	var shapes [][2]int
	for s := 1; s <= 3; s++ {
		lh, lw := bb.stageSize(s)
		shapes = append(shapes, [2]int{lh, lw})
	}
	lh, lw := bb.stageSize(3)
	shapes = append(shapes, [2]int{halve(lh), halve(lw)})
	tp, _ := json.Marshal(DDETRTransformerParams{SpatialShapes: shapes, DDETRConfig: p.DDETRConfig})
	ts, err := ddetrTransformerKind{}.Parse(tp, batch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	t := ts.(*ddetrTransformer)
	t.bboxPrefix = "bbox_embed." // the shared heads, which a loaded state_dict fills last
	t.classPrefix = "class_embed."
	d := &deformableDETR{t: t, h: h, w: w, classes: orInt(p.NumClasses, 91), topK: orInt(p.TopK, 100), backbone: bb}
	t.classes = d.classes
	if err := positive(op, "num_classes", d.classes, "top_k", d.topK); err != nil {
		return nil, err
	}
	if int64(d.topK) > int64(t.queries)*int64(d.classes) {
		return nil, errorf("%s params: top_k %d exceeds queries·num_classes = %d", op, d.topK, t.queries*d.classes)
	}
	if d.t.d%32 != 0 {
		return nil, errorf("%s params: d_model %d must be a multiple of GroupNorm's 32 groups", op, d.t.d)
	}
	return d, nil
}

func (d *deformableDETR) Op() string { return "deformable_detr" }

// detectorInputs are a detector's inputs (both DETRs): images [B, 3, H, W]
// and, when the batch is padded, image_mask [B, H, W] (nonzero on padding).
func detectorInputs(batch, h, w int, masked bool) []bench.ArraySpec {
	in := []bench.ArraySpec{{Name: "images", Shape: bench.Shape{batch, 3, h, w}}}
	if masked {
		in = append(in, bench.ArraySpec{Name: "image_mask", Shape: bench.Shape{batch, h, w}})
	}
	return in
}

func (d *deformableDETR) Inputs() []bench.ArraySpec {
	return detectorInputs(d.t.batch, d.h, d.w, d.t.masked)
}

// levelChans are the backbone channels feeding each input projection.
var levelChans = [4]int{512, 1024, 2048, 2048}

// Weights are the detector's state_dict entries. Without box refinement
// class_embed and bbox_embed are one module repeated six times: every
// copy is listed (as the state_dict lists them); the graph uses the last,
// which is what loading a state_dict into the shared module leaves. With
// box refinement they are six independent modules, and the decoder's
// transformer.decoder.bbox_embed is the same list again: the graph reads
// the top-level bbox_embed, which the state_dict lists (and loads) last.
func (d *deformableDETR) Weights() []bench.ArraySpec {
	w := append([]bench.ArraySpec(nil), d.backbone.weights...)
	dm := d.t.d
	for l, c := range levelChans {
		k := 1
		if l == 3 {
			k = 3
		}
		p := fmt.Sprintf("input_proj.%d.", l)
		w = append(w, bench.ArraySpec{Name: p + "0.weight", Shape: bench.Shape{dm, c, k, k}}, bench.ArraySpec{Name: p + "0.bias", Shape: bench.Shape{dm}})
		w = append(w, norm(p+"1", dm)...)
	}
	w = append(w, d.t.Weights()...)
	for i := 0; i < d.t.boxHeads(); i++ {
		w = append(w, linear(fmt.Sprintf("class_embed.%d", i), d.classes, dm)...)
	}
	return append(w, d.t.bboxWeights("bbox_embed.")...)
}

func (d *deformableDETR) Outputs() []bench.ArraySpec {
	b, q, k := d.t.batch, d.t.queries, d.topK
	out := []bench.ArraySpec{
		{Name: "pred_logits", Shape: bench.Shape{b, q, d.classes}},
		{Name: "pred_boxes", Shape: bench.Shape{b, q, 4}},
		{Name: "scores", Shape: bench.Shape{b, k}},
		{Name: "labels", Shape: bench.Shape{b, k}},
		{Name: "boxes", Shape: bench.Shape{b, k, 4}},
	}
	if d.t.twoStage {
		out = append(out, d.t.proposalLogitsSpec())
	}
	if d.t.probe {
		h3, w3 := d.backbone.stageSize(1)
		h5, w5 := d.backbone.stageSize(3)
		s := d.t.values()
		out = append(out,
			bench.ArraySpec{Name: "stages.c3", Shape: bench.Shape{b, 512, h3, w3}},
			bench.ArraySpec{Name: "stages.c5", Shape: bench.Shape{b, 2048, h5, w5}},
			bench.ArraySpec{Name: "stages.src", Shape: bench.Shape{b, s, d.t.d}},
			bench.ArraySpec{Name: "stages.memory", Shape: bench.Shape{b, s, d.t.d}},
			bench.ArraySpec{Name: "stages.hs", Shape: bench.Shape{b, q, d.t.d}})
	}
	return out
}

// MACs counts the backbone and input-projection convolutions, the
// transformer and the heads.
func (d *deformableDETR) MACs() int64 {
	b, q, dm := int64(d.t.batch), int64(d.t.queries), int64(d.t.d)
	m := d.backbone.macs
	for l, c := range levelChans {
		lv := d.t.levels[l]
		k := int64(1)
		if l == 3 {
			k = 9
		}
		m += b * dm * int64(lv.H) * int64(lv.W) * int64(c) * k
	}
	return m + d.t.MACs() + b*q*dm*int64(d.classes) + b*q*(dm*dm*2+dm*4)
}

func (d *deformableDETR) Bytes() int64 { return bench.BytesOf(d.Inputs(), d.Weights(), d.Outputs()) }

// Params counts each learned tensor once: the five shared copies of the
// heads and the frozen BatchNorm buffers are left out, as PyTorch's
// parameters() does (docs/reference-notes.md, "Deformable DETR counts":
// 40,069,665 by default).
func (d *deformableDETR) Params() int64 {
	dm := int64(d.t.d)
	n := bench.BytesOf(d.Weights()) / 4
	shared := int64(d.t.decLayers-1) * (dm*int64(d.classes) + int64(d.classes) + d.t.bboxMLPParams())
	switch {
	case d.t.twoStage: // transformer.decoder.class_embed and .bbox_embed
		shared = int64(d.t.boxHeads()) * (dm*int64(d.classes) + int64(d.classes) + d.t.bboxMLPParams())
	case d.t.refine: // transformer.decoder.bbox_embed
		shared = int64(d.t.decLayers) * d.t.bboxMLPParams()
	}
	var frozen int64
	for _, a := range d.backbone.weights {
		if len(a.Shape) == 1 {
			frozen += a.Shape.Elems()
		}
	}
	return n - shared - frozen
}

// Graph runs the backbone, projects each level (1×1 conv + GroupNorm; the
// fourth level a 3×3 stride-2 conv + GroupNorm on C5), computes the level
// masks and sine positions, runs the transformer, and decodes the last
// decoder layer with the heads and the post-processing.
func (d *deformableDETR) Graph() *bench.Graph {
	t := d.t
	b, s, q, dm := t.batch, t.values(), t.queries, t.d
	g := &bench.Graph{}
	bb := d.backbone
	for i, c := range []int{512, 1024, 2048} {
		h, w := bb.stageSize(i + 1)
		g.Temp(fmt.Sprintf("det.c%d", i+3), bench.Shape{b, c, h, w})
	}
	bb.steps(g, "images", "det.c3", "det.c4", "det.c5")
	feeds := []string{"det.c3", "det.c4", "det.c5", "det.c5"}
	var lvNames []string
	for l, c := range levelChans {
		lv := t.levels[l]
		in := bench.Shape{b, c, lv.H, lv.W}
		k, stride, pad := 1, 1, 0
		if l == 3 {
			h5, w5 := bb.stageSize(3)
			in, k, stride, pad = bench.Shape{b, c, h5, w5}, 3, 2, 1
		}
		u := Unfold{Batch: b, InChans: c, Height: in[2], Width: in[3], KernelH: k, KernelW: k, StrideH: stride, StrideW: stride,
			PadH: pad, PadW: pad, DilationH: 1, DilationW: 1}
		p := fmt.Sprintf("input_proj.%d.", l)
		conv, normed := fmt.Sprintf("det.proj%d", l), fmt.Sprintf("det.lvl%d", l)
		g.Temp(conv, bench.Shape{b, dm, lv.H, lv.W})
		g.Temp(normed, bench.Shape{b, dm, lv.H, lv.W})
		g.Steps = append(g.Steps,
			bench.Step{Node: Conv2d{Unfold: u, OutChans: dm, Bias: true}, In: []string{feeds[l], p + "0.weight", p + "0.bias"}, Out: []string{conv}},
			bench.Step{Node: GroupNorm{Batch: b, Chans: dm, Groups: 32, Height: lv.H, Width: lv.W, Eps: 1e-5},
				In: []string{conv, p + "1.weight", p + "1.bias"}, Out: []string{normed}})
		lvNames = append(lvNames, normed)
	}
	g.Temp("det.src", bench.Shape{b, s, dm})
	g.Temp("det.pos", bench.Shape{b, s, dm})
	g.Steps = append(g.Steps, bench.Step{Node: FlattenLevels{Batch: b, Chans: dm, Levels: t.levels}, In: lvNames, Out: []string{"det.src"}})
	names := transformerNames{src: "det.src", pos: "det.pos", memory: "det.memory", hs: "det.hs", refs: "det.refs"}
	if t.twoStage {
		names.proposalLogits = "proposal_logits"
	}
	if t.refine {
		// The last layer's refinement is the box head: sigmoid(bbox_embed[last](hs) + inverse_sigmoid(ref)).
		names.lastRef = "pred_boxes"
	}
	var posIn []string
	if t.masked {
		g.Temp("det.mask", bench.Shape{b, s})
		g.Steps = append(g.Steps, bench.Step{Node: LevelMasks{Batch: b, Height: d.h, Width: d.w, Levels: t.levels},
			In: []string{"image_mask"}, Out: []string{"det.mask"}})
		names.mask = "det.mask"
		posIn = []string{"det.mask"}
	}
	g.Steps = append(g.Steps, bench.Step{Node: PositionSine{Batch: b, Levels: t.levels, Masked: t.masked}, In: posIn, Out: []string{"det.pos"}})
	g.Temp("det.memory", bench.Shape{b, s, dm})
	g.Temp("det.hs", bench.Shape{b, q, dm})
	g.Temp("det.refs", bench.Shape{b, q, t.initRefDims()})
	t.steps(g, names)
	// The heads of the last decoder layer.
	last := d.t.decLayers - 1
	ce := fmt.Sprintf("class_embed.%d.", last)
	be := fmt.Sprintf("bbox_embed.%d.layers.", last)
	g.Steps = append(g.Steps, bench.Step{Node: Gemm{Batch: b, M: q, N: d.classes, K: dm, TransB: true, Bias: true},
		In: []string{"det.hs", ce + "weight", ce + "bias"}, Out: []string{"pred_logits"}})
	if !t.refine {
		g.Temp("det.box1", bench.Shape{b, q, dm})
		g.Temp("det.box2", bench.Shape{b, q, dm})
		g.Temp("det.box3", bench.Shape{b, q, 4})
		g.Steps = append(g.Steps,
			bench.Step{Node: Gemm{Batch: b, M: q, N: dm, K: dm, TransB: true, Bias: true, Act: "relu"},
				In: []string{"det.hs", be + "0.weight", be + "0.bias"}, Out: []string{"det.box1"}},
			bench.Step{Node: Gemm{Batch: b, M: q, N: dm, K: dm, TransB: true, Bias: true, Act: "relu"},
				In: []string{"det.box1", be + "1.weight", be + "1.bias"}, Out: []string{"det.box2"}},
			bench.Step{Node: Gemm{Batch: b, M: q, N: 4, K: dm, TransB: true, Bias: true},
				In: []string{"det.box2", be + "2.weight", be + "2.bias"}, Out: []string{"det.box3"}},
			bench.Step{Node: BoxDecode{Batch: b, Queries: q, RefDims: 2}, In: []string{"det.box3", "det.refs"}, Out: []string{"pred_boxes"}})
	}
	ppIn := []string{"pred_logits", "pred_boxes"}
	if t.masked {
		ppIn = append(ppIn, "image_mask")
	}
	g.Steps = append(g.Steps, bench.Step{Node: PostProcess{Batch: b, Queries: q, Classes: d.classes, TopK: d.topK,
		Height: d.h, Width: d.w, Masked: t.masked}, In: ppIn, Out: []string{"scores", "labels", "boxes"}})
	if t.probe {
		for _, pr := range [][2]string{{"det.c3", "stages.c3"}, {"det.c5", "stages.c5"}, {"det.src", "stages.src"},
			{"det.memory", "stages.memory"}, {"det.hs", "stages.hs"}} {
			var shape bench.Shape
			for _, a := range d.Outputs() {
				if a.Name == pr[1] {
					shape = a.Shape
				}
			}
			g.Steps = append(g.Steps, bench.Step{Node: Reshape{From: shape, To: shape}, In: []string{pr[0]}, Out: []string{pr[1]}})
		}
	}
	return g
}

func init() { bench.RegisterOpKind(deformableDETRKind{}) }
