package cpu

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/cpuinfo"
	"vitbench/impl/cpu/internal/kern"
	"vitbench/internal/mutation"
)

func init() {
	bench.RegisterBackend("cpu", func(threads int) (bench.Backend, error) { return New(threads), nil })
}

// Backend runs graphs on the host CPU.
type Backend struct {
	threads int
	current atomic.Int64
	peak    atomic.Int64
	// arena is kernel scratch space reused across Enqueue calls, so the
	// timed loop does not allocate; nodes run one at a time.
	arena []float32
	// pairArena is the same for bf16 pairs (pairScratch).
	pairArena []uint32
	// winoArena holds the blocked Winograd convolution's planes, taken
	// while scratch may hold its converted image.
	winoArena []float32
	// bf16 makes this the cpu-bf16 backend (bf16.go): matrix products
	// with bf16 inputs, but for convolutions with few output channels,
	// which it runs as the cpu backend's float32 direct convolutions (directOnBF16:
	// bf16DirectMaxOut, bf16TapDirectMaxOut).
	bf16             bool
	bf16DirectMaxOut int
	// outlookPlans holds each outlook attention geometry's gathers
	// (outlookPlanFor).
	outlookPlans map[ops.OutlookCore]*outlookPlan
	// packedKV holds, per worker, the K and V of the attention head its
	// last cpu-bf16 attention task packed (scoredAttention).
	packedKV []*kern.PackedKV
	// nchwOnly keeps every activation in NCHW: no blocked convolution
	// (useBlocked), for tests that compare against the NCHW paths.
	nchwOnly bool
	// derived keeps the packed copies of weights a graph assembles on
	// every run (derived.go).
	derived derivedCache
}

// New returns a CPU backend using threads worker goroutines (0 = one per
// logical CPU available to the process).
func New(threads int) *Backend {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &Backend{threads: threads}
}

// Name implements bench.Backend.
func (b *Backend) Name() string {
	if b.bf16 {
		return "cpu-bf16"
	}
	return "cpu"
}

// Threads is the worker count every kernel splits its work into.
func (b *Backend) Threads() int { return b.threads }

// ISA is the instruction-set path the kernels dispatch to.
func ISA() string { return string(kern.Active()) }

// SupportedISAs lists the paths this build can run here, fastest first.
func SupportedISAs() []string {
	var out []string
	for _, p := range kern.Supported() {
		out = append(out, string(p))
	}
	return out
}

// SetISA forces the kernels onto path isa (for tests and `-isa`).
func SetISA(isa string) error {
	for _, p := range kern.Supported() {
		if string(p) == isa {
			kern.SetISA(p)
			return nil
		}
	}
	return fmt.Errorf("ISA path %q is not available here (available: %v)", isa, SupportedISAs())
}

// Info implements bench.Backend.
func (b *Backend) Info() bench.Info {
	info := bench.Info{
		Name: b.Name(), Available: true, Device: CPUModel(),
		Details: map[string]string{
			"isa":        ISA(),
			"isa_paths":  strings.Join(SupportedISAs(), ","),
			"threads":    strconv.Itoa(b.threads),
			"gomaxprocs": strconv.Itoa(runtime.GOMAXPROCS(0)),
			"goarch":     runtime.GOARCH,
		},
	}
	if b.bf16 {
		info.Details["bf16_kernel"] = kern.BF16Kernel()
		if reason := bf16Unavailable(); reason != "" {
			info.Available, info.Reason = false, reason
		}
	}
	return info
}

// CPUModel returns the processor's model name from /proc/cpuinfo, or GOARCH.
func CPUModel() string { return cpuinfo.Model() }

// Supports implements bench.Backend: float32 for every op this backend has
// a kernel for.
func (b *Backend) Supports(op string, dt bench.DType) error {
	switch op {
	case "mean_shift", "pixel_shuffle", "chop_tiles", "chop_stitch", "ipt", "ipt_chop", "ipt_head", "ipt_tail",
		"ipt_encoder_layer", "ipt_decoder_layer",
		"patch_embed", "soft_split", "gemm", "conv2d", "layernorm", "attention_core", "fold", "avg_pool2d",
		"tokens_prefix", "take_token", "average", "reshape", "performer_core", "tokens_to_image",
		"ms_deform_attn_core", "ms_deform_attn", "deform_conv2d",
		"add", "sigmoid", "level_embed", "valid_ratios", "encoder_ref_points", "query_embed", "scale_refs", "merge_qkv",
		"relu", "max_pool2d", "group_norm", "level_masks", "position_sine", "flatten_levels", "box_decode", "post_process",
		"proposals", "zero_invalid", "topk_rows", "proposal_pos_embed", "split_columns",
		"outlook_attention", "outlooker", "class_attention", "class_block", "volo_stem", "volo",
		"avg_pool_nhwc", "outlook_core", "patch_rows_nhwc", "add_broadcast", "prepend_token", "put_token",
		"class_attn_core", "aux_merge", "token_embed", "eot_pool", "clip_logits", "clip_visual", "clip_text", "clip", "attn_pool_tokens", "clip_resnet",
		"attn_pool",
		"mha_core", "concat", "detr_queries", "detr_transformer", "detr_post_process", "detr", "row_slice",
		"pad_right_bottom", "upsample_nearest2x", "vector_quantize", "vq_resnet_block", "vq_attn_block", "vq_downsample",
		"vq_upsample", "vq_encoder", "vq_decoder", "vqgan", "mingpt":
	default:
		return fmt.Errorf("cpu: no kernel for op %q", op)
	}
	if b.bf16 {
		if reason := bf16Unavailable(); reason != "" {
			return fmt.Errorf("%s", reason)
		}
		if op == "attn_pool" {
			// Its parts run the projections as bf16 products, which read
			// half the weight bytes that attnPool's float32 folding does.
			return fmt.Errorf("cpu-bf16: attn_pool runs as its parts (bf16 projections)")
		}
	}
	if dt != bench.Float32 {
		return fmt.Errorf("cpu: %s runs in float32 only, not %s", op, dt)
	}
	return nil
}

// Alloc implements bench.Backend.
func (b *Backend) Alloc(shape bench.Shape, dt bench.DType) (bench.Tensor, error) {
	if dt != bench.Float32 {
		return nil, fmt.Errorf("cpu: cannot allocate %s tensors", dt)
	}
	n := shape.Elems()
	if n < 0 || n > int64(^uint(0)>>1)/4 {
		return nil, fmt.Errorf("cpu: shape %v is too large", shape)
	}
	t := &tensor{shape: append(bench.Shape(nil), shape...), dtype: dt, data: make([]float32, n)}
	b.account(n * 4)
	return t, nil
}

func (b *Backend) account(delta int64) {
	cur := b.current.Add(delta)
	for {
		p := b.peak.Load()
		if cur <= p || b.peak.CompareAndSwap(p, cur) {
			return
		}
	}
}

// Free implements bench.Backend.
func (b *Backend) Free(t bench.Tensor) {
	if ct, ok := t.(*tensor); ok && ct.data != nil {
		b.account(-int64(len(ct.data)) * 4)
		b.dropPacked(ct)
		ct.data = nil
		b.forgetDerived(ct)
	}
}

func (b *Backend) host(t bench.Tensor) (*tensor, error) {
	ct, ok := t.(*tensor)
	if !ok || ct == nil {
		return nil, fmt.Errorf("cpu: tensor %T was not allocated by the cpu backend", t)
	}
	if ct.data == nil && ct.shape.Elems() != 0 {
		return nil, fmt.Errorf("cpu: use of a freed tensor of shape %v", ct.shape)
	}
	return ct, nil
}

// Upload implements bench.Backend.
func (b *Backend) Upload(t bench.Tensor, src []float32) error {
	ct, err := b.host(t)
	if err != nil {
		return err
	}
	if len(src) != len(ct.data) {
		return fmt.Errorf("cpu: upload of %d values into a tensor of shape %v", len(src), ct.shape)
	}
	copy(ct.data, src)
	ct.blocked = false
	ct.version++
	b.dropPacked(ct)
	b.forgetDerived(ct)
	return nil
}

// packedWeight returns t packed as the right-hand GEMM operand for the
// kernels of the active ISA path: t is a weight [n, k] used as tᵀ when
// transB (nn.Linear, conv) and [k, n] used as it is otherwise. The packed
// copy is made once and reused until the tensor is uploaded again or
// freed, as inference engines do with weights. Its bytes count toward
// Memory.
func (b *Backend) packedWeight(t *tensor, n, k int, transB bool) *kern.PackedB {
	if p := t.packed; p != nil && b.packedFits(p, n, k, transB) {
		return p
	}
	pack := func() *kern.PackedB {
		if transB {
			return b.packBT(n, k, t.data, k)
		}
		return b.packBN(n, k, t.data, n)
	}
	if _, ok := b.derived.from[t]; ok {
		// A weight the graph assembled: its copy is kept per derivation.
		fits := func(p *kern.PackedB) bool { return b.packedFits(p, n, k, transB) }
		if p, ok := b.derivedPacked(t, fits, pack); ok {
			return p
		}
	}
	b.dropPacked(t)
	p := pack()
	t.packed = p
	b.account(p.Bytes())
	return p
}

// packedFits reports whether p is t [n, k] (transB) or [k, n] packed for
// the active ISA path and the backend's precision.
func (b *Backend) packedFits(p *kern.PackedB, n, k int, transB bool) bool {
	return p.Current() && p.N == n && p.K == k && p.TransB() == transB && p.BF16() == b.bf16
}

func (b *Backend) dropPacked(t *tensor) {
	if t.packed != nil {
		b.account(-t.packed.Bytes())
		t.packed = nil
	}
	if t.folded != nil {
		b.account(-t.folded.bytes())
		t.folded = nil
	}
	if t.headMajor != nil {
		b.account(-t.headMajor.bytes())
		t.headMajor = nil
	}
}

// Download implements bench.Backend.
func (b *Backend) Download(t bench.Tensor, dst []float32) error {
	ct, err := b.host(t)
	if err != nil {
		return err
	}
	if len(dst) != len(ct.data) {
		return fmt.Errorf("cpu: download of a tensor of shape %v into %d values", ct.shape, len(dst))
	}
	b.fillDeferred(ct)
	b.unblock(ct)
	copy(dst, ct.data)
	return nil
}

// Enqueue implements bench.Backend. The CPU runs each node at once.
func (b *Backend) Enqueue(node bench.Node, in, out []bench.Tensor) error {
	hin, err := b.hostAll(in)
	if err != nil {
		return err
	}
	hout, err := b.hostAll(out)
	if err != nil {
		return err
	}
	// An input whose copy a row_slice or concat deferred (derived.go) is
	// filled in now, but for a GEMM weight whose packed copy is kept.
	for i, t := range hin {
		if !b.gemmWeightReady(node, i, t) {
			b.fillDeferred(t)
		}
	}
	// A blocked tensor goes back to NCHW unless the node reads it blocked,
	// or writes over it without reading (layout_blocked.go).
	for i, t := range hin {
		if t.blocked && !b.readsBlocked(node, hin, i) {
			b.unblock(t)
		}
	}
	if !writesBlocked(node) {
		for _, t := range hout {
			b.unblock(t)
		}
	}
	// A node's outputs get new values: a packed or folded copy made when
	// one of them last fed a GEMM as its weight (a weight assembled by the
	// graph, minGPT's stacked q/k/v) is stale from here on.
	for _, t := range hout {
		b.dropPacked(t)
		t.version++ // caches derived from t (derived.go) are stale too
	}
	// Builds with the "mutation" tag may run the node one of the named
	// wrong ways (internal/mutation); elsewhere this is compiled out.
	if mutation.Enabled {
		if done, err := b.mutate(node, hin, hout); done {
			return err
		}
	}
	switch n := node.(type) {
	case ops.MeanShift:
		return b.meanShift(n, hin, hout)
	case ops.PixelShuffle:
		return b.pixelShuffle(n, hin, hout)
	case ops.ChopTiles:
		return b.chopTiles(n, hin, hout)
	case ops.ChopStitch:
		return b.chopStitch(n, hin, hout)
	case ops.PatchEmbed:
		return b.patchEmbed(n, hin, hout)
	case ops.Unfold:
		return b.unfold(n, hin, hout)
	case ops.Gemm:
		return b.gemm(n, hin, hout)
	case ops.Conv2d:
		return b.conv2d(n, hin, hout)
	case ops.LayerNorm:
		return b.layerNorm(n, hin, hout)
	case ops.AttentionCore:
		return b.attentionCore(n, hin, hout)
	case ops.Fold:
		return b.fold(n, hin, hout)
	case ops.AvgPool2d:
		return b.avgPool(n, hin, hout)
	case ops.TokensPrefix:
		return b.tokensPrefix(n, hin, hout)
	case ops.TakeToken:
		return b.takeToken(n, hin, hout)
	case ops.Average:
		return b.average(n, hin, hout)
	case ops.Reshape:
		return b.reshape(n, hin, hout)
	case ops.PerformerCore:
		return b.performerCore(n, hin, hout)
	case ops.TokensToImage:
		return b.tokensToImage(n, hin, hout)
	case ops.MSDeformCore:
		return b.msDeformCore(n, hin, hout)
	case ops.MSDeformSample:
		return b.msDeformSample(n, hin, hout)
	case ops.DeformConv2d:
		return b.deformConv2d(n, hin, hout)
	case ops.Add:
		return b.add(n, hin, hout)
	case ops.Sigmoid:
		return b.sigmoid(n, hin, hout)
	case ops.LevelEmbed:
		return b.levelEmbed(n, hin, hout)
	case ops.ValidRatios:
		return b.validRatios(n, hin, hout)
	case ops.EncoderRefPoints:
		return b.encoderRefPoints(n, hin, hout)
	case ops.QueryEmbed:
		return b.queryEmbed(n, hin, hout)
	case ops.ScaleRefs:
		return b.scaleRefs(n, hin, hout)
	case ops.MergeQKV:
		return b.mergeQKV(n, hin, hout)
	case ops.ReLU:
		return b.relu(n, hin, hout)
	case ops.MaxPool2d:
		return b.maxPool2d(n, hin, hout)
	case ops.GroupNorm:
		return b.groupNorm(n, hin, hout)
	case ops.LevelMasks:
		return b.levelMasks(n, hin, hout)
	case ops.PositionSine:
		return b.positionSine(n, hin, hout)
	case ops.FlattenLevels:
		return b.flattenLevels(n, hin, hout)
	case ops.BoxDecode:
		return b.boxDecode(n, hin, hout)
	case ops.PostProcess:
		return b.postProcess(n, hin, hout)
	case ops.Proposals:
		return b.proposals(n, hin, hout)
	case ops.ZeroInvalid:
		return b.zeroInvalid(n, hin, hout)
	case ops.TopKRows:
		return b.topKRows(n, hin, hout)
	case ops.ProposalPosEmbed:
		return b.proposalPosEmbed(n, hin, hout)
	case ops.AvgPoolNHWC:
		return b.avgPoolNHWC(n, hin, hout)
	case ops.OutlookCore:
		return b.outlookCore(n, hin, hout)
	case ops.PatchRowsNHWC:
		return b.patchRowsNHWC(n, hin, hout)
	case ops.AddBroadcast:
		return b.addBroadcast(n, hin, hout)
	case ops.PrependToken:
		return b.prependToken(n, hin, hout)
	case ops.PutToken:
		return b.putToken(n, hin, hout)
	case ops.ClassAttnCore:
		return b.classAttnCore(n, hin, hout)
	case ops.AuxMerge:
		return b.auxMerge(n, hin, hout)
	case ops.SplitColumns:
		return b.splitColumns(n, hin, hout)
	case ops.TokenEmbed:
		return b.tokenEmbed(n, hin, hout)
	case ops.EOTPool:
		return b.eotPool(n, hin, hout)
	case ops.ClipLogits:
		return b.clipLogits(n, hin, hout)
	case ops.AttnPool:
		return b.attnPool(n, hin, hout)
	case ops.AttnPoolTokens:
		return b.attnPoolTokens(n, hin, hout)
	case ops.MHACore:
		return b.mhaCore(n, hin, hout)
	case ops.Concat:
		return b.concat(n, hin, hout)
	case ops.DETRQueries:
		return b.detrQueries(n, hin, hout)
	case ops.DETRPostProcess:
		return b.detrPostProcess(n, hin, hout)
	case ops.RowSlice:
		return b.rowSlice(n, hin, hout)
	case ops.PadRightBottom:
		return b.padRightBottom(n, hin, hout)
	case ops.UpsampleNearest2x:
		return b.upsampleNearest2x(n, hin, hout)
	case ops.VectorQuantize:
		return b.vectorQuantize(n, hin, hout)
	}
	return fmt.Errorf("cpu: no kernel for op %q", node.OpName())
}

func (b *Backend) hostAll(ts []bench.Tensor) ([]*tensor, error) {
	out := make([]*tensor, len(ts))
	for i, t := range ts {
		h, err := b.host(t)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// Sync implements bench.Backend; CPU work is synchronous.
func (b *Backend) Sync() error { return nil }

// Time implements bench.Backend with the host's monotonic clock, which is
// the CPU backend's own clock: kernel and end-to-end time coincide.
func (b *Backend) Time(fn func() error) (bench.Timing, error) {
	start := time.Now()
	err := fn()
	d := time.Since(start)
	return bench.Timing{Kernel: d, EndToEnd: d}, err
}

// Memory implements bench.Backend: tensors and kernel scratch buffers.
func (b *Backend) Memory() bench.MemStats {
	return bench.MemStats{Current: b.current.Load(), Peak: b.peak.Load()}
}

// ResetPeak implements bench.Backend.
func (b *Backend) ResetPeak() { b.peak.Store(b.current.Load()) }

// Close implements bench.Backend; it drops the scratch arena.
func (b *Backend) Close() error {
	b.arena, b.pairArena = nil, nil
	return nil
}

// scratch returns a temporary buffer of n values from the backend's arena
// (grown when too small, never shrunk); release must be called. Its bytes
// count toward Memory while in use. Contents are not cleared.
func (b *Backend) scratch(n int) (buf []float32, release func()) { return fromArena(b, &b.arena, n) }

// fromArena is scratch from arena, any of the backend's arenas of 4-byte
// values (scratch, pairScratch).
func fromArena[T float32 | uint32](b *Backend, arena *[]T, n int) (buf []T, release func()) {
	if cap(*arena) < n {
		*arena = make([]T, n)
	}
	b.account(int64(n) * 4)
	return (*arena)[:n], func() { b.account(-int64(n) * 4) }
}

func errShape(op string, from, to bench.Shape) error {
	return fmt.Errorf("cpu: %s from %v to %v changes the element count", op, from, to)
}

// checkShapes verifies that the tensors handed to a node have the shapes
// the node's op kind derives.
func checkShapes(op string, ts []*tensor, want []bench.Shape) error {
	return checkRowShapes(op, ts, want)
}

// checkRowShapes is checkShapes for a row-wise node (GEMM, LayerNorm):
// the tensors at the rowwise indices may have any shape with the same
// rows of the same width as wanted — [B, H, W, C] for [B, H·W, C], as
// the ops package documents for Gemm and LayerNorm. An index −1−i marks
// tensor i as a matrix [N, K] that may come with K split ([N, C, KH, KW]).
func checkRowShapes(op string, ts []*tensor, want []bench.Shape, rowwise ...int) error {
	if len(ts) != len(want) {
		return fmt.Errorf("cpu: %s takes %d tensors here, got %d", op, len(want), len(ts))
	}
	for i := range ts {
		if ts[i].shape.Equal(want[i]) || (slices.Contains(rowwise, i) && sameRows(ts[i].shape, want[i])) {
			continue
		}
		if slices.Contains(rowwise, -1-i) && sameFlat(ts[i].shape, want[i]) {
			continue
		}
		return fmt.Errorf("cpu: %s tensor %d has shape %v, want %v", op, i, ts[i].shape, want[i])
	}
	return nil
}

// sameFlat reports whether got is want [N, K] with its trailing
// dimensions split: a convolution weight [O, C, KH, KW] used as the
// matrix [O, C·KH·KW].
func sameFlat(got, want bench.Shape) bool {
	return len(got) > 2 && len(want) == 2 && got[0] == want[0] && got.Elems() == want.Elems()
}

// sameRows reports whether two shapes hold the same number of rows of the
// same last dimension.
func sameRows(got, want bench.Shape) bool {
	return len(got) > 0 && len(want) > 0 && got[len(got)-1] == want[len(want)-1] && got.Elems() == want.Elems()
}
