package cuda

import (
	"fmt"
	"math"

	"vitbench/bench/ops"
)

// Scalars cuBLAS reads through host pointers (package variables: never
// moved by the garbage collector).
var (
	oneF32  float32 = 1
	zeroF32 float32 = 0
)

// sgemm computes, for each of batch problems i, the row-major product
// C_i [m, n] = op(A_i) · op(B_i) with op(X) = Xᵀ when trans, where
// X_i = X + i·strideX elements and lda, ldb, ldc are row strides. cuBLAS is
// column-major, so it computes Cᵀ = op(B)ᵀ · op(A)ᵀ on the same memory.
// Runs on the device thread.
func (b *Backend) sgemm(transA, transB bool, m, n, k int, a uint64, lda int, bm uint64, ldb int, c uint64, ldc int,
	batch int, sa, sb, sc int64) error {
	for _, v := range []int{m, n, k, lda, ldb, ldc, batch} {
		if v > math.MaxInt32 {
			return fmt.Errorf("GEMM dimension %d does not fit cuBLAS's int", v)
		}
	}
	if m == 0 || n == 0 || batch == 0 {
		return nil
	}
	if b.dry != nil {
		b.dry.gemms++
		return nil
	}
	opA, opB := int32(cublasOpN), int32(cublasOpN)
	if transA {
		opA = cublasOpT
	}
	if transB {
		opB = cublasOpT
	}
	h, c32 := b.blasHandle, b.blas
	if b.math == BF16 || b.math == FP16 {
		if c32.cublasGemmEx == nil {
			return fmt.Errorf("%s: this cuBLAS lacks cublasGemmEx", b.name)
		}
		ct, algo := b.math.computeType(), int32(cublasGemmDefault)
		if batch == 1 {
			return c32.check("cublasGemmEx", c32.cublasGemmEx(h, opB, opA, int32(n), int32(m), int32(k), &oneF32,
				bm, cudaR32F, int32(ldb), a, cudaR32F, int32(lda), &zeroF32, c, cudaR32F, int32(ldc), ct, algo))
		}
		return c32.check("cublasGemmStridedBatchedEx", c32.cublasGemmStridedBatchedEx(h, opB, opA, int32(n), int32(m), int32(k),
			&oneF32, bm, cudaR32F, int32(ldb), sb, a, cudaR32F, int32(lda), sa, &zeroF32, c, cudaR32F, int32(ldc), sc, int32(batch), ct, algo))
	}
	if batch == 1 {
		return c32.check("cublasSgemm_v2", c32.cublasSgemm(h, opB, opA, int32(n), int32(m), int32(k), &oneF32,
			bm, int32(ldb), a, int32(lda), &zeroF32, c, int32(ldc)))
	}
	return c32.check("cublasSgemmStridedBatched", c32.cublasSgemmStridedBatched(h, opB, opA, int32(n), int32(m), int32(k),
		&oneF32, bm, int32(ldb), sb, a, int32(lda), sa, &zeroF32, c, int32(ldc), sc, int32(batch)))
}

// gemm runs ops.Gemm: one cuBLAS product over all B·M rows (the weight is
// shared), then the bias/activation/residual epilogue when there is one.
func (b *Backend) gemm(g ops.Gemm, in, out []*tensor) (func() error, error) {
	rows := int64(g.Batch) * int64(g.M)
	want := []int64{rows * int64(g.K), int64(g.N) * int64(g.K)}
	if g.Bias {
		want = append(want, int64(g.N))
	}
	ld := g.ResidualLd
	if ld == 0 {
		ld = g.N
	}
	if g.Residual {
		if g.ResidualOff < 0 || g.ResidualOff+g.N > ld {
			return nil, fmt.Errorf("cuda: gemm residual columns [%d, %d) outside its width %d", g.ResidualOff, g.ResidualOff+g.N, ld)
		}
		want = append(want, rows*int64(ld))
	}
	if err := checkElems("gemm", "input", in, want...); err != nil {
		return nil, err
	}
	if err := checkElems("gemm", "output", out, rows*int64(g.N)); err != nil {
		return nil, err
	}
	act := int32(0)
	switch g.Act {
	case "":
	case "relu":
		act = 1
	case "gelu":
		act = 2
	case "quick_gelu":
		act = 3
	default:
		return nil, fmt.Errorf("cuda: gemm activation %q unknown", g.Act)
	}
	var bias, res uint64
	next := 2
	if g.Bias {
		bias = in[next].ptr
		next++
	}
	if g.Residual {
		res = at(in[next], int64(g.ResidualOff))
	}
	ldw := g.N
	if g.TransB {
		ldw = g.K
	}
	return func() error {
		if err := b.sgemm(false, g.TransB, int(rows), g.N, g.K, in[0].ptr, g.K, in[1].ptr, ldw, out[0].ptr, g.N, 1, 0, 0, 0); err != nil {
			return err
		}
		if !g.Bias && !g.Residual && act == 0 {
			return nil
		}
		return b.launch1D("gemm_epilogue.cu", "gemm_epilogue_f32", rows*int64(g.N),
			out[0].ptr, bias, res, int64(ld), rows, i32(g.N), act)
	}, nil
}

// attentionBudget bounds the score matrices held at once (bytes): the
// (image, head) pairs are processed in chunks that fit.
const attentionBudget = 256 << 20

// attentionCore runs ops.AttentionCore: q, k and v split into
// [B·H, N, D] each, then per chunk of (image, head) pairs S = Q·Kᵀ and
// O = softmax(scale·S)·V with strided-batched cuBLAS products and a
// softmax kernel between them, and the heads merged back to [B, N, H·D].
func (b *Backend) attentionCore(a ops.AttentionCore, in, out []*tensor) (func() error, error) {
	n, h, d := int64(a.Tokens), int64(a.Heads), int64(a.HeadDim)
	e := h * d
	bn := int64(a.Batch) * n
	if err := checkElems("attention_core", "input", in, bn*3*e); err != nil {
		return nil, err
	}
	if err := checkElems("attention_core", "output", out, bn*e); err != nil {
		return nil, err
	}
	pairs := int64(a.Batch) * h
	chunk := max(1, min(pairs, attentionBudget/(n*n*4)))
	per := pairs * n * d // floats of one of q, k, v
	softmax := "softmax_rows_f32"
	if a.Causal {
		softmax = "softmax_causal_rows_f32" // keys after the query masked
	}
	return func() error {
		parts, release, err := b.scratchParts(3*per*4, per*4, chunk*n*n*4)
		if err != nil {
			return err
		}
		defer release()
		qkv, o, s := parts[0], parts[1], parts[2]
		if err := b.launch1D("attention.cu", "qkv_split_f32", 3*per, in[0].ptr, qkv, i32(a.Batch), i32(a.Tokens), i32(a.Heads), i32(a.HeadDim)); err != nil {
			return err
		}
		q, k, v := qkv, qkv+uint64(per)*4, qkv+uint64(2*per)*4
		nd := n * d
		for c0 := int64(0); c0 < pairs; c0 += chunk {
			cnt := min(chunk, pairs-c0)
			off := uint64(c0*nd) * 4
			if err := b.sgemm(false, true, int(n), int(n), int(d), q+off, int(d), k+off, int(d), s, int(n), int(cnt), nd, nd, n*n); err != nil {
				return err
			}
			if err := b.launch("norm.cu", softmax, dim3{uint32(cnt * n), 1, 1}, dim3{128, 1, 1}, 0, s, i32(a.Tokens), float32(a.Scale)); err != nil {
				return err
			}
			if err := b.sgemm(false, false, int(n), int(d), int(n), s, int(n), v+off, int(d), o+off, int(d), int(cnt), n*n, nd, nd); err != nil {
				return err
			}
		}
		return b.launch1D("attention.cu", "heads_merge_f32", bn*e, o, out[0].ptr, i32(a.Batch), i32(a.Tokens), i32(a.Heads), i32(a.HeadDim))
	}, nil
}

// patchEmbed runs ops.PatchEmbed: the patches unfolded token-major
// [B·L, C·PH·PW], one GEMM with the conv weight as [E, K]ᵀ, and the bias.
func (b *Backend) patchEmbed(p ops.PatchEmbed, in, out []*tensor) (func() error, error) {
	gh, gw := p.GridH(), p.GridW()
	rows := int64(p.Batch) * int64(gh*gw)
	k := int64(p.InChans * p.PatchH * p.PatchW)
	want := []int64{int64(p.Batch) * int64(p.InChans) * int64(p.Height) * int64(p.Width), int64(p.EmbedDim) * k}
	if p.Bias {
		want = append(want, int64(p.EmbedDim))
	}
	if err := checkElems("patch_embed", "input", in, want...); err != nil {
		return nil, err
	}
	if err := checkElems("patch_embed", "output", out, rows*int64(p.EmbedDim)); err != nil {
		return nil, err
	}
	u := ops.Unfold{Batch: p.Batch, InChans: p.InChans, Height: p.Height, Width: p.Width, KernelH: p.PatchH, KernelW: p.PatchW,
		StrideH: p.PatchH, StrideW: p.PatchW, DilationH: 1, DilationW: 1}
	return func() error {
		parts, release, err := b.scratchParts(rows * k * 4)
		if err != nil {
			return err
		}
		defer release()
		cols := parts[0]
		if err := b.launch1D("windows.cu", "unfold_tokens_f32", rows*k, in[0].ptr, cols, i32(p.Batch), geomOf(u)); err != nil {
			return err
		}
		if err := b.sgemm(false, true, int(rows), p.EmbedDim, int(k), cols, int(k), in[1].ptr, int(k), out[0].ptr, p.EmbedDim, 1, 0, 0, 0); err != nil {
			return err
		}
		if !p.Bias {
			return nil
		}
		return b.launch1D("gemm_epilogue.cu", "gemm_epilogue_f32", rows*int64(p.EmbedDim),
			out[0].ptr, in[2].ptr, uint64(0), int64(0), rows, i32(p.EmbedDim), int32(0))
	}, nil
}

// im2colBudget bounds the column matrix of a convolution chunk (bytes).
const im2colBudget = 256 << 20

// conv2d runs ops.Conv2d as out[b] = W · cols[b] (NCHW straight out of
// cuBLAS): the columns are the image itself for a 1×1, stride-1,
// unpadded convolution, else im2col per chunk of images; then one
// epilogue adds the bias, BatchNorm, residual and ReLU.
func (b *Backend) conv2d(c ops.Conv2d, in, out []*tensor) (func() error, error) {
	l := int64(c.OutH()) * int64(c.OutW())
	k := int64(c.Cols())
	o := int64(c.OutChans)
	img := int64(c.InChans) * int64(c.Height) * int64(c.Width)
	want := []int64{int64(c.Batch) * img, o * k}
	if c.Bias {
		want = append(want, o)
	}
	if c.BN {
		want = append(want, o, o, o, o)
	}
	if c.Residual {
		want = append(want, int64(c.Batch)*o*l)
	}
	if err := checkElems("conv2d", "input", in, want...); err != nil {
		return nil, err
	}
	if err := checkElems("conv2d", "output", out, int64(c.Batch)*o*l); err != nil {
		return nil, err
	}
	var bias, gamma, beta, mean, variance, res uint64
	next := 2
	if c.Bias {
		bias = in[next].ptr
		next++
	}
	if c.BN {
		gamma, beta, mean, variance = in[next].ptr, in[next+1].ptr, in[next+2].ptr, in[next+3].ptr
		next += 4
	}
	if c.Residual {
		res = in[next].ptr
	}
	direct := c.KernelH == 1 && c.KernelW == 1 && c.StrideH == 1 && c.StrideW == 1 && c.PadH == 0 && c.PadW == 0
	relu := int32(0)
	if c.ReLU {
		relu = 1
	}
	return func() error {
		if direct {
			if err := b.sgemm(false, false, int(o), int(l), int(k), in[1].ptr, int(k), in[0].ptr, int(l), out[0].ptr, int(l),
				c.Batch, 0, k*l, o*l); err != nil {
				return err
			}
		} else if err := b.convChunks(c, in[0].ptr, in[1].ptr, out[0].ptr); err != nil {
			return err
		}
		if bias == 0 && gamma == 0 && res == 0 && relu == 0 {
			return nil
		}
		return b.launch1D("gemm_epilogue.cu", "nchw_epilogue_f32", int64(c.Batch)*o*l, out[0].ptr, bias, gamma, beta, mean,
			variance, c.BNEps, res, relu, int64(c.Batch)*o*l, i32(c.OutChans), l)
	}, nil
}

// convChunks runs im2col and the batched product for as many images at a
// time as fit in im2colBudget.
func (b *Backend) convChunks(c ops.Conv2d, x, w, y uint64) error {
	l := int64(c.OutH()) * int64(c.OutW())
	k := int64(c.Cols())
	o := int64(c.OutChans)
	img := int64(c.InChans) * int64(c.Height) * int64(c.Width)
	nb := max(1, min(int64(c.Batch), im2colBudget/(k*l*4)))
	parts, release, err := b.scratchParts(nb * k * l * 4)
	if err != nil {
		return err
	}
	defer release()
	cols := parts[0]
	for b0 := int64(0); b0 < int64(c.Batch); b0 += nb {
		cnt := min(nb, int64(c.Batch)-b0)
		if err := b.launch1D("windows.cu", "im2col_f32", cnt*k*l, x+uint64(b0*img)*4, cols, int32(cnt), geomOf(c.Unfold)); err != nil {
			return err
		}
		if err := b.sgemm(false, false, int(o), int(l), int(k), w, int(k), cols, int(l), y+uint64(b0*o*l)*4, int(l),
			int(cnt), 0, k*l, o*l); err != nil {
			return err
		}
	}
	return nil
}
