package ops

import (
	"fmt"
	"strings"

	"vitbench/bench"
)

// resnet50 builds torchvision's ResNet-50 (v1.5: the stride in the 3×3
// conv) with frozen BatchNorm (eps 1e-5) folded into every conv, as the
// graph of the DETR detectors' backbone, under the state_dict prefix
// "backbone.0.body.". Depth 101 gives ResNet-101 (23 blocks in layer3);
// dilate gives DETR's DC5 variant (layer4 without its stride: its first
// block's 3×3 conv keeps dilation 1, the others get dilation and padding
// 2, torchvision's replace_stride_with_dilation). After plan, weights and
// macs hold the weights its graph reads and its multiply-accumulates.
type resnet50 struct {
	batch, h, w int
	prefix      string
	depth       int // 50 (the zero value's) or 101
	dilate      bool
	weights     []bench.ArraySpec
	macs        int64
	planned     bool // weights and macs are complete; steps adds no more
}

// plan fills weights and macs, once.
func (r *resnet50) plan() {
	r.steps(&bench.Graph{}, "images", "c3", "c4", "c5")
	r.planned = true
}

// resnetStages are the blocks and widths of layer1..layer4 of ResNet-50.
var resnetStages = [4]struct{ blocks, width int }{{3, 64}, {4, 128}, {6, 256}, {3, 512}}

// stages are r's blocks and widths: ResNet-101 has 23 blocks in layer3.
func (r *resnet50) stages() [4]struct{ blocks, width int } {
	st := resnetStages
	if r.depth == 101 {
		st[2].blocks = 23
	}
	return st
}

// halve is the size after a stride-2 conv or pool with "same" padding.
func halve(n int) int { return (n + 1) / 2 }

// stageSize is the (H, W) of layer s's output (s = 0..3), and of the stem
// (s = -1, after the max-pool).
func (r *resnet50) stageSize(s int) (int, int) {
	h, w := halve(halve(r.h)), halve(halve(r.w))
	for i := 1; i <= s; i++ {
		if i == 3 && r.dilate {
			break
		}
		h, w = halve(h), halve(w)
	}
	return h, w
}

// conv appends a conv + frozen BN (+ residual) (+ ReLU) step reading in
// (and res, unless "") and writing out.
func (r *resnet50) conv(g *bench.Graph, name, in, out string, cin, cout, h, w, k, stride, pad int, relu bool, res ...string) {
	r.convDil(g, name, in, out, cin, cout, h, w, k, stride, pad, 1, relu, res...)
}

// convDil is conv with a dilation.
func (r *resnet50) convDil(g *bench.Graph, name, in, out string, cin, cout, h, w, k, stride, pad, dil int, relu bool, res ...string) {
	u := Unfold{Batch: r.batch, InChans: cin, Height: h, Width: w, KernelH: k, KernelW: k, StrideH: stride, StrideW: stride,
		PadH: pad, PadW: pad, DilationH: dil, DilationW: dil}
	c := Conv2d{Unfold: u, OutChans: cout, BN: true, BNEps: 1e-5, ReLU: relu, Residual: len(res) > 0}
	p := r.prefix + name
	bn := r.prefix + bnOf(name)
	ws := []bench.ArraySpec{{Name: p + ".weight", Shape: bench.Shape{cout, cin, k, k}}}
	for _, s := range []string{"weight", "bias", "running_mean", "running_var"} {
		ws = append(ws, bench.ArraySpec{Name: bn + "." + s, Shape: bench.Shape{cout}})
	}
	if !r.planned {
		r.weights = append(r.weights, ws...)
		r.macs += c.macsOf()
	}
	in2 := []string{in}
	for _, a := range ws {
		in2 = append(in2, a.Name)
	}
	in2 = append(in2, res...)
	g.Temp(out, bench.Shape{r.batch, cout, u.OutH(), u.OutW()})
	g.Steps = append(g.Steps, bench.Step{Node: c, In: in2, Out: []string{out}})
}

// bnOf names the frozen BatchNorm after a conv: "layer1.0.conv2" →
// "layer1.0.bn2", "layer2.0.downsample.0" → "layer2.0.downsample.1".
func bnOf(conv string) string {
	if strings.HasSuffix(conv, "downsample.0") {
		return strings.TrimSuffix(conv, "0") + "1"
	}
	i := strings.LastIndex(conv, "conv")
	return conv[:i] + "bn" + conv[i+len("conv"):]
}

// macsOf counts a convolution's multiply-accumulates.
func (c Conv2d) macsOf() int64 {
	return int64(c.Batch) * int64(c.OutChans) * int64(c.OutH()) * int64(c.OutW()) * int64(c.InChans) * int64(c.KernelH) * int64(c.KernelW)
}

// steps appends the backbone reading image [N, 3, H, W] and writing the
// outputs of layer2, layer3 and layer4 into c3, c4, c5.
func (r *resnet50) steps(g *bench.Graph, image, c3, c4, c5 string) {
	b := r.batch
	h1, w1 := halve(r.h), halve(r.w)
	r.conv(g, "conv1", image, "r50.stem", 3, 64, r.h, r.w, 7, 2, 3, true)
	h, w := r.stageSize(-1)
	g.Temp("r50.pool", bench.Shape{b, 64, h, w})
	g.Steps = append(g.Steps, bench.Step{Node: MaxPool2d{Batch: b, Chans: 64, Height: h1, Width: w1, Kernel: 3, Stride: 2, Pad: 1},
		In: []string{"r50.stem"}, Out: []string{"r50.pool"}})
	x, cin := "r50.pool", 64
	outs := []string{"", c3, c4, c5}
	for s, st := range r.stages() {
		width, cout := st.width, 4*st.width
		oh, ow := r.stageSize(s)
		for j := 0; j < st.blocks; j++ {
			p := fmt.Sprintf("layer%d.%d.", s+1, j)
			stride, dil := 1, 1
			if j == 0 && s > 0 {
				stride = 2
			}
			if s == 3 && r.dilate {
				stride = 1
				if j > 0 {
					dil = 2
				}
			}
			tag := fmt.Sprintf("r50.s%d.", s)
			t1 := tag + "t1"
			if j == 0 {
				t1 = tag + "t1in" // at the input's size: the stride is in conv2
			}
			r.conv(g, p+"conv1", x, t1, cin, width, h, w, 1, 1, 0, true)
			r.convDil(g, p+"conv2", t1, tag+"t2", width, width, h, w, 3, stride, dil, dil, true)
			identity := x
			if j == 0 {
				r.conv(g, p+"downsample.0", x, tag+"id", cin, cout, h, w, 1, stride, 0, false)
				identity = tag + "id"
			}
			out := fmt.Sprintf("%sx%d", tag, j%2)
			if j == st.blocks-1 && outs[s] != "" {
				out = outs[s]
			}
			// conv3 + BN, the identity added, then ReLU, in one step.
			r.conv(g, p+"conv3", tag+"t2", out, width, cout, oh, ow, 1, 1, 0, true, identity)
			x, cin, h, w = out, cout, oh, ow
		}
	}
}
